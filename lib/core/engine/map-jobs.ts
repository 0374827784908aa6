/**
 * The jobs of fan-out maps: an element (`map-element`) and an element's rollback (`map-rollback`).
 * Each takes the element's lease, works on the element's stored state, and settles in one round
 * trip that slides the map's window and says whether the owner run must be resumed.
 */
import type { ExecutionEnv } from '../executor/execution-env';
import { RunExecution } from '../executor/run-execution';
import { redactInputs } from '../definition/redaction';
import { InternalError } from '../errors/internal.error';
import { LeaseLostError } from '../errors/run-state.error';
import { elementJobs } from '../map/element-jobs';
import { recordOf, rollbackStateOf } from '../map/map-elements';
import { runFailure, type RollbackFailure } from '../model/failure';
import { elementLeaseKey, elementRunId } from '../model/keys';
import type { MapMeta } from '../model/map';
import { isTerminal, newRunState } from '../model/run-state';
import type { MapElementJob } from '../ports/job-dispatcher.port';
import type { Lease } from '../ports/lock-manager.port';
import type { ElementClaim, ElementSettlement, MapStore } from '../ports/map-store.port';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import type { Dispatch } from './dispatch';
import { ENGINE_DEFAULTS, type EngineParts } from './engine-options';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';

/** Map metadata cached per process (it never changes once written). */
const METADATA_CACHE_SIZE = 1_000;

/** Element and element-rollback jobs of fan-out maps. */
export class MapJobs {
  private readonly metas = new Map<string, MapMeta>();

  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
  ) {}

  /**
   * Run the elements of a `map-element` job (`count` consecutive elements from `index`): claim
   * them in one round trip, run the claimed ones concurrently, and settle every one that ended in
   * one round trip. A duplicate delivery claims nothing (each element is done or leased).
   */
  async handleElements(job: MapElementJob): Promise<void> {
    const maps = this.requireMaps();
    const { mapId } = job;
    const meta = await this.mapMeta(mapId);
    if (!meta) return; // expired or never created: nothing to do
    const token = this.leases.newLease('').token;
    const elements = Array.from({ length: Math.max(1, job.count ?? 1) }, (_, i) => {
      const index = job.index + i;
      return { index, lease: { key: elementLeaseKey(mapId, index), token } };
    });
    const claims = await maps.claimElements(mapId, elements, this.parts.leaseTtlMs);
    const ran = await Promise.all(
      claims.map((claim, i) =>
        claim.acquired && !claim.done ? this.runElement(meta, elements[i].index, elements[i].lease, claim) : undefined,
      ),
    );
    const settlements = ran.filter((s): s is ElementSettlement => s !== undefined);
    if (settlements.length === 0) return;
    const settled = await maps.settleElements(mapId, settlements);
    await this.afterSettle(meta, settled, 'map-element');
  }

  /**
   * Run one claimed element under its lease: its record and kept state, or undefined when it
   * scheduled a retry (a job of its own, after the backoff).
   */
  private async runElement(
    meta: MapMeta,
    index: number,
    lease: Lease,
    claim: Extract<ElementClaim, { done: false }>,
  ): Promise<ElementSettlement | undefined> {
    const { mapId } = meta;
    const maps = this.requireMaps();
    const def = this.registry.get(meta.elementReactor);
    const single: MapElementJob = {
      kind: 'map-element',
      runId: meta.ownerRunId,
      reactorName: meta.ownerReactor,
      mapId,
      index,
    };
    if (claim.skip) return { index, record: { status: 'skipped' }, lease };
    let state = claim.state;
    if (!state) {
      const { inputs, errors } = await validateReactorInputs(def.inputs, claim.input);
      if (Object.keys(errors).length > 0) {
        const message = `Reactor '${meta.ownerReactor}' map '${meta.step}' element ${index}: input validation failed: ${describeFieldErrors(errors)}`;
        const failure = runFailure({
          message,
          code: 'INPUT_VALIDATION',
          reactorName: def.name,
          exceptionClass: 'InputValidationError',
          inputs: redactInputs(def, inputs, meta.redactedInputs),
          fieldErrors: errors,
        });
        return { index, record: { status: 'failed', failure }, lease };
      }
      state = newRunState(def, elementRunId(mapId, index), inputs, this.parts.clock.now(), {
        redactedInputs: meta.redactedInputs,
        encryptInputs: meta.encryptInputs,
      });
      state.status = 'running';
    }
    const due = state.retryAt ? Math.max(...Object.values(state.retryAt)) - this.parts.clock.now() : 0;
    if (due > 0) {
      await this.leases.releaseQuietly(lease);
      await this.dispatch.one(single, due);
      return undefined;
    }
    // Its steps' signals are aborted at shutdown past the grace and when the element's lease is lost
    // (a cancel reaches the owner run, which rolls its map back; it does not abort elements).
    const tracked = this.executions.track(elementRunId(mapId, index));
    const held = this.leases.keep(lease, { onLost: () => tracked.abort.abort('lease-lost') });
    try {
      const elementState = state;
      // The env is made for this element: its fields set on it, not spread into a copy (DD-speed22-11).
      const env: ExecutionEnv = this.executions.env('worker', lease, {
        runId: meta.ownerRunId,
        reactorName: meta.ownerReactor,
      });
      env.inElement = true;
      env.enqueueResume = (_runId, _reactorName, delayMs) => this.dispatch.one(single, delayMs);
      env.abort = tracked.abort;
      // Checkpoints of an element go to the map's element state; its final record is written by settle.
      const save = async (final: boolean) => {
        if (isTerminal(elementState.status)) return;
        elementState.updatedAt = this.parts.clock.now();
        await maps.putElementState(mapId, index, elementState, lease);
        if (final) await this.leases.releaseQuietly(lease);
      };
      const execution = new RunExecution(def, elementState, env, save);
      const outcome = await execution.execute(claim.state !== undefined);
      if (tracked.abort.stopCause === 'shutdown') {
        // Stopped at shutdown past the grace, its last checkpoint kept: its lease is given back and
        // (on a durable queue) its job enqueued again, so another worker runs it now; else it is
        // left for the stalled-map sweep, which need not wait for the lease either.
        await this.leases.releaseQuietly(lease);
        await this.executions.handOff(single, tracked.abort);
        return undefined;
      }
      if (outcome.status === 'dispatched') return undefined; // a retry was scheduled
      const record = recordOf(outcome);
      const kept = record.status === 'completed' ? rollbackStateOf(elementState, execution) : undefined;
      return { index, record, state: kept, lease };
    } catch (error) {
      // Its lease was lost (expired, or taken by another worker): the new holder carries the element
      // on; the other elements of this job still settle.
      if (!(error instanceof LeaseLostError)) throw error;
      this.parts.logger.warn(error.message);
      await this.parts.middleware.emit({
        type: 'lease.lost',
        runId: elementRunId(mapId, index),
        reactorName: def.name,
        at: this.parts.clock.now(),
      });
      return undefined;
    } finally {
      held.stop();
      tracked.untrack();
    }
  }

  /** Undo one completed element of a fan-out map that is rolling back (a `map-rollback` job). */
  async handleElementRollback(job: MapElementJob): Promise<void> {
    const maps = this.requireMaps();
    const { mapId, index } = job;
    const meta = await this.mapMeta(mapId);
    if (!meta) return;
    const tag = (failures: RollbackFailure[]) =>
      failures.map((f) => Object.assign({}, f, { mapStep: meta.step, elementIndex: index }));
    let failures: RollbackFailure[];
    const lease = await this.parts.locks.acquire(elementLeaseKey(mapId, index), this.parts.leaseTtlMs);
    if (!lease) {
      // A duplicate of the element is still running: wait for it, a bounded number of times.
      if ((job.snoozes ?? 0) < ENGINE_DEFAULTS.elementRollbackSnoozes) {
        await this.dispatch.snooze(job);
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
        const def = this.registry.get(meta.elementReactor);
        const env: ExecutionEnv = this.executions.env('worker', lease, {
          runId: meta.ownerRunId,
          reactorName: meta.ownerReactor,
        });
        env.inElement = true;
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
    await this.dispatchMapJobs(meta, settled.next, kind);
    if (settled.signalOwner) await this.resumeOwner(meta);
  }

  /** Resume the owner run of a map that is done (or whose rollback is). */
  async resumeOwner(meta: MapMeta): Promise<void> {
    await this.dispatch.resume(meta.ownerRunId, meta.ownerReactor);
  }

  /**
   * Enqueue element (or element rollback) jobs of a map, `elementsPerJob` elements to an element
   * job. Resolves to how many jobs were enqueued.
   */
  async dispatchMapJobs(meta: MapMeta, indices: number[], kind: MapElementJob['kind']): Promise<number> {
    if (indices.length === 0) return 0;
    const owner = { runId: meta.ownerRunId, reactorName: meta.ownerReactor };
    const jobs = elementJobs(owner, meta.mapId, indices, kind, meta.elementsPerJob);
    await this.dispatch.many(jobs);
    return jobs.length;
  }

  /** A map's metadata; it never changes once written, so each process reads it once. */
  private async mapMeta(mapId: string): Promise<MapMeta | undefined> {
    const cached = this.metas.get(mapId);
    if (cached) return cached;
    const meta = await this.requireMaps().meta(mapId);
    if (!meta) return undefined;
    if (this.metas.size >= METADATA_CACHE_SIZE) this.metas.delete(this.metas.keys().next().value as string);
    this.metas.set(mapId, meta);
    return meta;
  }

  private requireMaps(): MapStore {
    if (!this.parts.maps) throw new InternalError('Fan-out maps need a map store, and none is configured.');
    return this.parts.maps;
  }
}
