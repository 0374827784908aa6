import { Inject, Injectable } from '@nestjs/common';
import { ENGINE_DEFAULTS, ReactorEngine } from '../core';
import { type ResolvedReactorModuleOptions, REACTOR_OPTIONS } from '../config';

/** Runs at most this many stalled runs per sweep (the oldest updates first). */
export const SWEEP_LIMIT = ENGINE_DEFAULTS.sweepLimit;

/**
 * The jobs one sweep really added to the queue. A run (or map owner) whose recovery job from an
 * earlier sweep is still pending gets no second one (BullMQ deduplicates it) and is not counted; a
 * run the sweep looked at and left alone is not counted either.
 */
export interface SweepResult {
  /** Recovery jobs added for runs whose executor died (no lease, not updated for the lease TTL). */
  reactors: number;
  /** Jobs added for fan-out maps: lost element or rollback jobs re-dispatched, a lost window continuation refilled, a lost owner resume re-sent. */
  maps: number;
}

/** When the last sweep of this process finished, and what it re-enqueued. */
export interface LastSweep {
  /** Time (module clock, ms since the epoch) the sweep finished. */
  readonly finishedAt: number;
  readonly result: SweepResult;
}

/**
 * One recovery sweep, with no guard: re-enqueue by id every non-terminal run whose executor died.
 * It reads the storage's index of live runs (never a keyspace scan), skips runs whose lease is
 * held, that were updated within the lease TTL (a run just handed to a worker has no lease yet),
 * or whose retry is scheduled later; idempotent, since a run enqueued twice executes once.
 *
 * `SweeperScheduler` calls it on its cron (one replica per interval); `ReactorClient.sweepOnce()`
 * calls it directly for an external scheduler.
 *
 * The sweeper is the path for runs whose worker died without a word (SIGKILL, a crash, a step that
 * ignored its signal past the shutdown's second grace): such a run is re-enqueued within
 * `leaseTtlMs + sweeper.intervalMs` of the death. A run stopped by a graceful shutdown does not
 * wait for it: the engine's drain hands it off (re-enqueues it as its lease is given back), which
 * this sweep's `graceMs` would otherwise hold back for a lease TTL. See docs/recovery.md.
 */
@Injectable()
export class ReactorSweeper {
  private last?: LastSweep;

  constructor(
    private readonly engine: ReactorEngine,
    @Inject(REACTOR_OPTIONS) private readonly options: ResolvedReactorModuleOptions,
  ) {}

  async sweepOnce(): Promise<SweepResult> {
    const reactors = await this.engine.recoverStalled({ limit: SWEEP_LIMIT, graceMs: this.options.leaseTtlMs });
    const maps = await this.engine.recoverMaps({ limit: SWEEP_LIMIT, graceMs: this.options.leaseTtlMs });
    this.last = { finishedAt: this.options.clock.now(), result: { reactors, maps } };
    return { reactors, maps };
  }

  /**
   * The last sweep this process finished (scheduled or `ReactorClient.sweepOnce()`), or `undefined`
   * before the first. A sweep that threw is not one. Read by the health indicator.
   */
  get lastSweep(): LastSweep | undefined {
    return this.last;
  }
}
