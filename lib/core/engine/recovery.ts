/**
 * Recovery of work whose worker died: stalled runs and stalled fan-out maps. Both read index
 * sets (never the keyspace), are idempotent (a run enqueued twice executes once: its lease), and
 * are what the sweepers schedule.
 */
import { CorruptRecordError } from '../errors/run-state.error';
import { errorMessage } from '../model/failure';
import { runLeaseKey } from '../model/keys';
import type { RunState, RunStatus } from '../model/run-state';
import { toBrokenReason } from './broken-reason';
import type { Dispatch } from './dispatch';
import { ENGINE_DEFAULTS, type EngineParts } from './engine-options';
import type { Resumes } from './resumes';
import type { MapJobs } from './map-jobs';

/** Statuses of runs that a dead worker can leave behind. */
const RECOVERABLE: readonly RunStatus[] = ['running', 'rolling_back', 'pending'];
/** Statuses of an owner run that a map resumes. */
const MAP_OWNER_WAITING: readonly RunStatus[] = ['running', 'rolling_back'];

/** Options of one recovery sweep. */
export interface RecoveryOptions {
  /** Most runs (or maps) to look at. @default 1000 */
  limit?: number;
  /** How long a run (or map owner) must have been idle. @default the lease TTL */
  graceMs?: number;
}

/** Finds stalled runs and maps and sets them going again. */
export class Recovery {
  constructor(
    private readonly parts: EngineParts,
    private readonly dispatch: Dispatch,
    private readonly mapJobs: MapJobs,
    private readonly resumes?: Resumes,
  ) {}

  /**
   * Re-enqueue runs whose executor died: non-terminal runs that nobody holds a lease on, not
   * updated for `graceMs`, with no retry scheduled in the future and not parked on a stored map.
   * Returns how many jobs were enqueued: a run whose recovery job is still pending (from an earlier
   * sweep) gets none, and is not counted.
   */
  async stalledRuns(options: RecoveryOptions = {}): Promise<number> {
    const { storage, locks, clock, logger } = this.parts;
    this.dispatch.require('(sweeper)');
    const graceMs = options.graceMs ?? this.parts.leaseTtlMs;
    const now = clock.now();
    let recovered = 0;
    // Only runs not updated within the grace period can be stalled: the index says which.
    for (const runId of await storage.listActive(options.limit ?? ENGINE_DEFAULTS.sweepLimit, now - graceMs + 1)) {
      try {
        if (await locks.isHeld(runLeaseKey(runId))) continue;
        const state = await storage.load(runId);
        if (!state) continue;
        // A paused run is offered again only when a resume or a due timeout waits to be applied.
        if (state.status === 'paused') {
          if (!(await this.resumes?.due(state))) continue;
          if (await this.dispatch.recover(runId, state.reactorName, state.asyncParent !== undefined)) recovered++;
          continue;
        }
        if (!RECOVERABLE.includes(state.status)) continue;
        if (now - state.updatedAt < graceMs) continue;
        if (state.retryAt && Math.max(...Object.values(state.retryAt)) > now) continue;
        if (await this.waitingOnMap(state)) continue; // the map's last element (or the map sweep) resumes it
        if (await this.dispatch.recover(runId, state.reactorName, state.asyncParent !== undefined)) recovered++;
      } catch (error) {
        if (error instanceof CorruptRecordError) {
          await storage.markBroken(runId, undefined, toBrokenReason(error));
          logger.warn(`Run '${runId}' was marked failed: ${error.message}`);
          continue;
        }
        logger.warn(`Sweeper skipped run '${runId}': ${errorMessage(error)}`);
      }
    }
    return recovered;
  }

  /**
   * Recover fan-out maps (reading the index of open maps, never the keyspace): re-dispatch
   * elements that were dispatched but have no record and no live lease, refill a dispatch window
   * whose continuation was lost, re-dispatch lost element rollback jobs, and resume an owner whose
   * completion signal was lost (a recovery resume: at most one pending per owner). Returns how many
   * jobs were enqueued (element and rollback jobs, owner resumes).
   */
  async stalledMaps(options: RecoveryOptions = {}): Promise<number> {
    const { maps, storage, locks, clock, logger } = this.parts;
    if (!maps || !this.dispatch.available) return 0;
    const graceMs = options.graceMs ?? this.parts.leaseTtlMs;
    let enqueued = 0;
    for (const mapId of await maps.listOpen(options.limit ?? ENGINE_DEFAULTS.sweepLimit)) {
      try {
        const meta = await maps.meta(mapId);
        if (!meta) continue;
        const progress = await maps.progress(mapId);
        const rollback = await maps.rollbackProgress(mapId);
        let acted = false;
        if (rollback && rollback.reported < rollback.total) {
          const lost = await maps.stalledRollback(mapId, meta.batchSize);
          enqueued += await this.mapJobs.dispatchMapJobs(meta, lost, 'map-rollback');
          acted = lost.length > 0;
        } else if (!progress.done) {
          const lost = await maps.stalled(mapId, meta.batchSize);
          const inFlight = progress.dispatched - progress.settled;
          // The window lost its continuation (a dispatcher died after settling): top it up.
          const refill = inFlight < meta.batchSize ? await maps.reserve(mapId, meta.batchSize - inFlight) : [];
          enqueued += await this.mapJobs.dispatchMapJobs(
            meta,
            [...lost, ...refill].sort((a, b) => a - b),
            'map-element',
          );
          acted = lost.length + refill.length > 0;
        }
        if (!acted && (progress.done || (rollback && rollback.reported >= rollback.total))) {
          // Done, but the owner has not adopted it: its signal (or its resume job) was lost.
          const owner = await storage.load(meta.ownerRunId);
          const idle = owner && MAP_OWNER_WAITING.includes(owner.status) && clock.now() - owner.updatedAt >= graceMs;
          if (idle && !(await locks.isHeld(runLeaseKey(meta.ownerRunId)))) {
            if (await this.dispatch.recover(meta.ownerRunId, meta.ownerReactor)) enqueued++;
          }
        }
      } catch (error) {
        logger.warn(`Map sweeper skipped map '${mapId}': ${errorMessage(error)}`);
      }
    }
    return enqueued;
  }

  /**
   * Whether the run is parked on a fan-out map (its elements or its element rollbacks) that is
   * still stored: then the map, not the run, needs watching.
   */
  private async waitingOnMap(state: RunState): Promise<boolean> {
    const maps = this.parts.maps;
    if (state.handoff?.mode !== 'map' || !maps) return false;
    // The map the run stopped at when the hand-off names one; else any of its (or its children's).
    const named = state.handoff.step ? state.maps?.[state.handoff.step]?.mapId : undefined;
    const mapIds = named
      ? [named]
      : [state, ...Object.values(state.children)].flatMap((s) => Object.values(s.maps ?? {}).map((m) => m.mapId));
    // NOTE: read the store, not the per-process metadata cache: this asks whether the map still exists.
    for (const mapId of mapIds) if (await maps.meta(mapId)) return true;
    return false;
  }
}
