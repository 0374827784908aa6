/**
 * The jobs of fan-out maps, run by the engine: an element (`map-element`), an element's rollback
 * (`map-rollback`), and the map sweeper. Split from the engine, which hands over what they need.
 */
import { randomUUID } from 'node:crypto';
import type { ReactorDefinition } from '../definition/definition';
import type { EngineLogger } from '../engine';
import { RunExecution, newRunState, type ExecutionEnv } from '../executor/executor';
import { redactInputs } from '../definition/redaction';
import { isTerminal, type RunState } from '../model/run-state';
import { ReactorError } from '../errors/reactor.error';
import type { Clock } from '../ports/clock.port';
import type { JobDispatcher, ReactorJob } from '../ports/job-dispatcher.port';
import type { Lease, LockManager } from '../ports/lock-manager.port';
import type { MapStore } from '../ports/map-store.port';
import type { ElementRecord, MapMeta } from '../model/map';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import type { RollbackFailure } from '../results/run-outcome';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import { elementLeaseKey, elementRunId } from '../model/keys';
import { recordOf, rollbackStateOf } from './map-runner';

/** How many times an element rollback waits for a still-running duplicate of the element. */
const ELEMENT_ROLLBACK_SNOOZES = 20;

/** What the map jobs need from the engine. */
export interface MapJobsHost {
  readonly maps?: MapStore;
  readonly storage: ReactorStorage;
  readonly locks: LockManager;
  readonly clock: Clock;
  readonly leaseTtlMs: number;
  readonly logger: EngineLogger;
  readonly hasDispatcher: boolean;
  definition(name: string): ReactorDefinition;
  env(mode: 'caller' | 'worker', lease: Lease, owner?: { runId: string; reactorName: string }): ExecutionEnv;
  startExtending(lease: Lease): { timer: NodeJS.Timeout; lost: boolean };
  snooze(job: ReactorJob): Promise<void>;
  dispatcher(reactorName: string): JobDispatcher;
  dispatchAll(jobs: ReactorJob[], delayMs?: number): Promise<void>;
  /** Whether anyone holds the lease of run `runId`. */
  runLeaseHeld(runId: string): Promise<boolean>;
}

/** Element, element-rollback and map-sweeper work of the engine. */
export class MapJobs {
  private readonly metas = new Map<string, MapMeta>();

  constructor(private readonly host: MapJobsHost) {}

  /** Run one element of a fan-out map (a `map-element` job). */
  async handleElement(job: ReactorJob): Promise<void> {
    const maps = this.requireMaps();
    const mapId = job.mapId!;
    const index = job.index!;
    const meta = await this.mapMeta(mapId);
    if (!meta) return; // expired or never created: nothing to do
    const def = this.host.definition(meta.elementReactor);
    const lease: Lease = { key: elementLeaseKey(mapId, index), token: randomUUID() };
    const claim = await maps.claimElement(mapId, index, lease, this.host.leaseTtlMs);
    if (!claim.acquired || claim.done) return; // a duplicate delivery: the live one settles it
    let record: ElementRecord | undefined;
    let kept: RunState | undefined;
    let state: RunState | undefined = claim.state;
    if (claim.skip) {
      record = { status: 'skipped' };
    } else if (!state) {
      const { inputs, errors } = await validateReactorInputs(def.inputs, claim.input);
      if (Object.keys(errors).length > 0) {
        const message = `Reactor '${meta.ownerReactor}' map '${meta.step}' element ${index}: input validation failed: ${describeFieldErrors(errors)}`;
        record = {
          status: 'failed',
          failure: {
            message,
            code: 'INPUT_VALIDATION',
            reactorName: def.name,
            exceptionClass: 'InputValidationError',
            errorMessage: message,
            retryable: false,
            inputs: redactInputs(def, inputs),
            fieldErrors: errors,
            rollbackFailures: [],
          },
        };
      } else {
        state = newRunState(def, elementRunId(mapId, index), inputs, this.host.clock.now());
        state.status = 'running';
      }
    }
    if (!record && state) {
      const due = state.retryAt ? Math.max(...Object.values(state.retryAt)) - this.host.clock.now() : 0;
      if (due > 0) {
        await this.host.locks.release(lease).catch(() => undefined);
        await this.host.dispatcher(def.name).dispatch(job, { delayMs: due });
        return;
      }
      const extender = this.host.startExtending(lease);
      try {
        const elementState = state;
        const env: ExecutionEnv = {
          ...this.host.env('worker', lease, { runId: meta.ownerRunId, reactorName: meta.ownerReactor }),
          inElement: true,
          enqueueResume: (_runId, _reactorName, delayMs) => this.host.dispatcher(def.name).dispatch(job, { delayMs }),
        };
        // Checkpoints of an element go to the map's element state; its final record is written by settle.
        const save = async (final: boolean) => {
          if (isTerminal(elementState.status)) return;
          elementState.updatedAt = this.host.clock.now();
          await maps.putElementState(mapId, index, elementState, lease);
          if (final) await this.host.locks.release(lease).catch(() => undefined);
        };
        const execution = new RunExecution(def, elementState, env, save);
        const outcome = await execution.execute(claim.state !== undefined);
        if (outcome.status === 'dispatched') return; // a retry was scheduled
        record = recordOf(outcome);
        kept = record.status === 'completed' ? rollbackStateOf(elementState, execution) : undefined;
      } finally {
        clearInterval(extender.timer);
      }
    }
    const settled = await maps.settleElement(mapId, index, record!, kept, lease);
    await this.afterSettle(meta, settled, 'map-element');
  }

  /** Undo one completed element of a fan-out map that is rolling back (a `map-rollback` job). */
  async handleElementRollback(job: ReactorJob): Promise<void> {
    const maps = this.requireMaps();
    const mapId = job.mapId!;
    const index = job.index!;
    const meta = await this.mapMeta(mapId);
    if (!meta) return;
    const tag = (failures: RollbackFailure[]) =>
      failures.map((f) => ({ ...f, mapStep: meta.step, elementIndex: index }));
    let failures: RollbackFailure[];
    const lease = await this.host.locks.acquire(elementLeaseKey(mapId, index), this.host.leaseTtlMs);
    if (!lease) {
      // A duplicate of the element is still running: wait for it, a bounded number of times.
      if ((job.snoozes ?? 0) < ELEMENT_ROLLBACK_SNOOZES) {
        await this.host.snooze(job);
        return;
      }
      failures = tag([
        {
          step: meta.step,
          kind: 'undo',
          reason: 'elementInFlight',
          message: `element ${index} was still running when the map rolled back`,
          reactorName: meta.ownerReactor,
        },
      ]);
    } else {
      const state = await maps.elementState(mapId, index);
      if (!state) {
        failures = tag([
          {
            step: meta.step,
            kind: 'undo',
            reason: 'contextUnavailable',
            message: `the state of element ${index} is no longer stored (contextTtl)`,
            reactorName: meta.ownerReactor,
          },
        ]);
      } else {
        const def = this.host.definition(meta.elementReactor);
        const env: ExecutionEnv = {
          ...this.host.env('worker', lease, { runId: meta.ownerRunId, reactorName: meta.ownerReactor }),
          inElement: true,
        };
        const save = async () => maps.putElementState(mapId, index, state, lease);
        failures = tag(await new RunExecution(def, state, env, save, false).undoAll());
      }
    }
    const settled = await maps.settleRollback(mapId, index, failures, lease ?? undefined);
    await this.afterSettle(meta, settled, 'map-rollback');
  }

  /** After an element (or its rollback) settled: dispatch what the window freed, resume the owner if told to. */
  private async afterSettle(
    meta: MapMeta,
    settled: { next: number[]; signalOwner: boolean },
    kind: 'map-element' | 'map-rollback',
  ): Promise<void> {
    await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, meta.mapId, settled.next, kind);
    if (settled.signalOwner) await this.resumeOwner(meta);
  }

  private async resumeOwner(meta: MapMeta): Promise<void> {
    await this.host
      .dispatcher(meta.ownerReactor)
      .dispatch({ kind: 'resume', runId: meta.ownerRunId, reactorName: meta.ownerReactor });
  }

  private async dispatchMapJobs(
    ownerRunId: string,
    ownerReactor: string,
    mapId: string,
    indices: number[],
    kind: 'map-element' | 'map-rollback',
  ): Promise<void> {
    if (indices.length === 0) return;
    await this.host.dispatchAll(
      indices.map((index) => ({ kind, runId: ownerRunId, reactorName: ownerReactor, mapId, index })),
    );
  }

  /**
   * Recover fan-out maps (reading the index of open maps, never the keyspace): re-dispatch
   * elements that were dispatched but have no record and no live lease, refill a dispatch window
   * whose continuation was lost, re-dispatch lost element rollback jobs, and resume an owner whose
   * completion signal was lost. Returns how many maps needed something.
   */
  async recoverMaps(options: { limit?: number; graceMs?: number } = {}): Promise<number> {
    const maps = this.host.maps;
    if (!maps || !this.host.hasDispatcher) return 0;
    const graceMs = options.graceMs ?? this.host.leaseTtlMs;
    let touched = 0;
    for (const mapId of await maps.listOpen(options.limit ?? 1000)) {
      try {
        const meta = await maps.meta(mapId);
        if (!meta) continue;
        const progress = await maps.progress(mapId);
        const rollback = await maps.rollbackProgress(mapId);
        let acted = false;
        if (rollback && rollback.reported < rollback.total) {
          const lost = await maps.stalledRollback(mapId, meta.batchSize);
          await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, mapId, lost, 'map-rollback');
          acted = lost.length > 0;
        } else if (!progress.done) {
          const lost = await maps.stalled(mapId, meta.batchSize);
          const inFlight = progress.dispatched - progress.settled;
          // The window lost its continuation (a dispatcher died after settling): top it up.
          const refill = inFlight < meta.batchSize ? await maps.reserve(mapId, meta.batchSize - inFlight) : [];
          await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, mapId, [...lost, ...refill], 'map-element');
          acted = lost.length + refill.length > 0;
        }
        if (!acted && (progress.done || (rollback && rollback.reported >= rollback.total))) {
          // Done, but the owner has not adopted it: its signal (or its resume job) was lost.
          const owner = await this.host.storage.load(meta.ownerRunId);
          const idle =
            owner &&
            ['running', 'rolling_back'].includes(owner.status) &&
            this.host.clock.now() - owner.updatedAt >= graceMs;
          if (idle && !(await this.host.runLeaseHeld(meta.ownerRunId))) {
            await this.resumeOwner(meta);
            acted = true;
          }
        }
        if (acted) touched++;
      } catch (error) {
        this.host.logger.warn(`Map sweeper skipped map '${mapId}': ${(error as Error)?.message ?? String(error)}`);
      }
    }
    return touched;
  }

  /**
   * Whether the run is parked on a fan-out map (its elements or its element rollbacks) that is
   * still stored: then the map, not the run, needs watching.
   */
  async waitingOnMap(state: RunState): Promise<boolean> {
    const maps = this.host.maps;
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

  /** A map's metadata; it never changes once written, so each process reads it once. */
  private async mapMeta(mapId: string): Promise<MapMeta | undefined> {
    const cached = this.metas.get(mapId);
    if (cached) return cached;
    const meta = await this.requireMaps().meta(mapId);
    if (!meta) return undefined;
    if (this.metas.size >= 1000) this.metas.delete(this.metas.keys().next().value as string);
    this.metas.set(mapId, meta);
    return meta;
  }

  private requireMaps(): MapStore {
    if (!this.host.maps) throw new ReactorError('INTERNAL', 'Fan-out maps need a map store, and none is configured.');
    return this.host.maps;
  }
}
