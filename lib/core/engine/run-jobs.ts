import type { ReactorDefinition } from '../definition/definition';
import { redactInputs } from '../definition/redaction';
import { ConfigurationError } from '../errors/configuration.error';
import { CoordinationContendedError } from '../errors/coordination.error';
import { CorruptRecordError, DefinitionChangedError } from '../errors/run-state.error';
import { errorMessage, runFailure } from '../model/failure';
import { runLeaseKey } from '../model/keys';
import { isTerminal, type RunState } from '../model/run-state';
import type { ResumeJob } from '../ports/job-dispatcher.port';
import type { Resumes } from './resumes';
import type { Lease } from '../ports/lock-manager.port';
import type { ClaimResult, ReactorStorage } from '../ports/reactor-storage.port';
import type { Clock } from '../ports/clock.port';
import { toBrokenReason } from './broken-reason';
import type { BrokenReason } from '../ports/reactor-storage.port';
import { resumeJob, type Dispatch } from './dispatch';
import { ENGINE_DEFAULTS, type EngineLogger } from './engine-options';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';
import type { Waiters } from './waiters';
import type { FlowControl } from './flow';

/** Resume jobs: a worker takes the run's lease, loads it, and executes it from its last checkpoint. */
export class RunJobs {
  /** Runs whose unknown reactor this process warned about (oldest first), so a new round is not announced again. */
  private readonly warnedUnknown = new Set<string>();

  constructor(
    private readonly storage: ReactorStorage,
    private readonly clock: Clock,
    private readonly leaseTtlMs: number,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
    private readonly waiters: Waiters,
    private readonly logger: EngineLogger,
    private readonly unknownReactor: { retries: number; delayMs: number } = {
      retries: ENGINE_DEFAULTS.unknownReactorDeferrals,
      delayMs: ENGINE_DEFAULTS.unknownReactorDelayMs,
    },
    private readonly resumes?: Resumes,
    private readonly contention: {
      maxAttempts: number;
      fail: (runId: string, reason: BrokenReason) => Promise<void>;
    } = { maxAttempts: ENGINE_DEFAULTS.lockSnoozeMaxAttempts, fail: async () => undefined },
    private readonly flow?: FlowControl,
  ) {}

  /**
   * Deliver one resume job. A run executing elsewhere is snoozed; a missing or finished run is
   * left alone; a record that cannot be read is marked failed once (keeping what can be read); a
   * run of a reactor this process does not know is handed back for a worker that knows it; a run
   * started under another definition fails with its whole record kept, so it can still be undone.
   * Nothing is written before this worker holds the run's lease and has read its status.
   */
  async handle(job: ResumeJob): Promise<void> {
    const lease = this.leases.newLease(runLeaseKey(job.runId));
    let claim: ClaimResult;
    try {
      claim = await this.storage.acquireAndLoad(job.runId, lease, this.leaseTtlMs);
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      await this.storage.markBroken(job.runId, job.reactorName, toBrokenReason(error));
      this.logger.warn(`Run '${job.runId}' was marked failed: ${errorMessage(error)}`);
      await this.leases.releaseQuietly(lease);
      this.waiters.notify(job.runId);
      return;
    }
    if (!claim.acquired) {
      // Executing elsewhere: come back later, touching nothing. Uncapped: the holder is alive.
      await this.dispatch.snooze(job);
      return;
    }
    const state = claim.state;
    // A paused run goes on only when a claim (a resume, a due timeout) is there to apply.
    if (!state || isTerminal(state.status) || (state.status === 'paused' && !(await this.resumes?.prepare(state)))) {
      await this.leases.releaseQuietly(lease);
      // A run that ended without giving its concurrency slot back (its process died): given back now.
      if (state && isTerminal(state.status) && state.flow !== undefined) await this.flow?.release(state);
      return;
    }
    // The stored run names its reactor (and version); the job's name is only a hint.
    if (!this.registry.has(state.reactorName)) {
      await this.leases.releaseQuietly(lease);
      await this.deferUnknown(job, state.reactorName);
      return;
    }
    const def = this.registry.forRun(state);
    if (!def || state.definitionHash !== def.hash) {
      await this.failChanged(state, def ?? this.registry.get(state.reactorName), lease);
      this.waiters.notify(job.runId);
      return;
    }
    const due = state.retryAt ? Math.max(...Object.values(state.retryAt)) - this.clock.now() : 0;
    if (due > 0) {
      // Delivered before a scheduled retry is due (a sweeper or a duplicate): re-enqueue for then.
      await this.leases.releaseQuietly(lease);
      await this.dispatch.resume(job.runId, def.name, due, state.asyncParent !== undefined);
      return;
    }
    try {
      // A run its flow control held back goes through the gate it waits at (it may wait again).
      if (state.status === 'pending' && state.flow?.wait !== undefined && this.flow) {
        if (!(await this.flow.advance(def, state, lease))) return;
      }
      await this.executions.execute(def, state, lease, 'worker', executedBefore(state));
    } catch (error) {
      if (error instanceof ConfigurationError && COORDINATION_OPTIONS.includes(error.option ?? '')) {
        // A rate limit this process does not know (a deploy in progress), or a key function that
        // throws or returns no string: permanent, not a snooze; the run fails.
        await this.contention.fail(job.runId, { code: error.code, message: error.message });
        return;
      }
      if (!(error instanceof CoordinationContendedError)) throw error;
      await this.contended(job, error);
    }
  }

  /**
   * The run's lock, semaphore or rate limit is taken: snooze the job without spending the run's
   * retries (a rate limit at its exact wait), up to `lockSnoozeMaxAttempts` times; then the run
   * fails with the contention's code (not rolled back: `undo` is still possible).
   */
  private async contended(job: ResumeJob, error: CoordinationContendedError): Promise<void> {
    // Waiting for its turn on an ordered lock is uncapped: the runs before it are alive (a dead
    // one is skipped after its poison-pill timeout).
    if (error.code === 'ORDER_WAIT') {
      // Checking in at least every third of the poison pill keeps a waiting run from being taken
      // for a dead one when its turn comes.
      const poisonPillMs = this.registry.has(job.reactorName)
        ? this.registry.get(job.reactorName).coordination?.orderedLock?.poisonPillMs
        : undefined;
      await this.dispatch.snooze(job, poisonPillMs !== undefined ? Math.floor(poisonPillMs / 3) : undefined);
      return;
    }
    const contentions = job.contentions ?? 0;
    if (contentions >= this.contention.maxAttempts) {
      this.logger.warn(`Run '${job.runId}' gave up after ${contentions} snoozes: ${error.message}`);
      await this.contention.fail(job.runId, { code: error.code, message: error.message });
      return;
    }
    await this.dispatch.contend(job, error.code === 'RATE_LIMITED' ? error.retryAfterMs : undefined);
  }

  /**
   * A run of a reactor this process does not know (a rolling deploy: an older worker took the
   * job): hand the job back, after a delay, for a worker that knows it, a bounded number of times;
   * then leave the run parked (the sweeper offers it again later). The record is never touched.
   *
   * Logged once per run, not once per hand-back: a warning at the first hand-back (the job's
   * `deferrals` is 0), with how many hand-backs follow and what to do, and an error when the run is
   * parked. A hand-back counted in the job is silent in any process; a sweeper's offer of a parked
   * run starts a new round, whose first hand-back this process does not announce again (it
   * remembers the last {@link UNKNOWN_REACTOR_MEMO} runs it warned about).
   */
  private async deferUnknown(job: ResumeJob, reactorName: string): Promise<void> {
    const deferrals = job.deferrals ?? 0;
    const { retries, delayMs } = this.unknownReactor;
    if (deferrals >= retries) {
      this.logger.error(
        `Run '${job.runId}' of reactor '${reactorName}' is parked: no worker that took its job knows the reactor ` +
          `(${deferrals} of ${retries} hand-backs, unknownReactorRetries). Deploy a worker that registers it; ` +
          'the sweeper offers the run again.',
      );
      return;
    }
    if (deferrals === 0 && !this.warnedUnknown.has(job.runId)) {
      this.rememberWarned(job.runId);
      this.logger.warn(
        `Run '${job.runId}': reactor '${reactorName}' is not registered in this process; its job goes back to the queue ` +
          `for a worker that knows it, up to ${retries} time${retries === 1 ? '' : 's'} ${delayMs} ms apart ` +
          '(unknownReactorRetries, unknownReactorDelayMs), then the run is parked. Finish the deploy of workers ' +
          `that register '${reactorName}' (or check the name); the run's record is untouched. Logged once per run; ` +
          'an error follows only if it is parked.',
      );
    }
    await this.dispatch.one(
      Object.assign(resumeJob(job.runId, reactorName, job.unit === true), { deferrals: deferrals + 1 }),
      delayMs,
    );
  }

  private rememberWarned(runId: string): void {
    if (this.warnedUnknown.size >= UNKNOWN_REACTOR_MEMO) {
      this.warnedUnknown.delete(this.warnedUnknown.values().next().value as string);
    }
    this.warnedUnknown.add(runId);
  }

  /**
   * The run was started under another definition of its reactor: fail it with
   * `DEFINITION_CHANGED`, keeping its whole record (inputs, results, undo stack, trace), so that
   * `undo` can still undo the steps it completed.
   */
  private async failChanged(state: RunState, def: ReactorDefinition, lease: Lease): Promise<void> {
    const error = new DefinitionChangedError(
      state.runId,
      def.name,
      state.reactorVersion ?? '1',
      this.registry.versionsOf(def.name),
    );
    state.status = 'failed';
    state.failure = runFailure({
      message: error.message,
      code: error.code,
      reactorName: def.name,
      error,
      inputs: redactInputs(def, state.inputs, state.redactedInputs),
    });
    state.finishedAt = state.updatedAt = this.clock.now();
    await this.storage.save(state, { lease, leaseTtlMs: this.leaseTtlMs, releaseLease: true });
    this.logger.warn(error.message);
  }
}

/**
 * Whether an earlier execution of the run got anywhere: it recorded progress (a step started, a
 * hand-off, a retry, a pause, a rollback). A run handed to a worker before any of that (`start`,
 * `background: { all }`, its turn on an ordered lock) is not resumed by its first execution there;
 * one that goes on after a retry delay, an interrupt, a snooze or a crash is (`reactor.resumed` and
 * the `reactor.start` event's `resumed`).
 */
function executedBefore(state: RunState): boolean {
  return state.trace.length > 0;
}

/** How many runs of unknown reactors a process remembers having warned about. */
export const UNKNOWN_REACTOR_MEMO = 10_000;

/** Options whose configuration errors fail a run for good (coordination keys and named limits). */
const COORDINATION_OPTIONS = [
  'rateLimits',
  'rateLimit',
  'lock',
  'semaphore',
  'period',
  'orderedLock',
  'concurrency',
  'throttle',
  'debounce',
  'batch',
];
