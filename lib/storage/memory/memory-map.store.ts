import {
  LeaseLostError,
  elementLeaseKey,
  type ElementClaim,
  type ElementRecord,
  type ElementSettled,
  type ElementSettlement,
  type ElementsSettled,
  type ElementToClaim,
  type Lease,
  type MapMeta,
  type MapProgress,
  type MapRollbackProgress,
  type MapStore,
  type RollbackFailure,
  type InputCipher,
  type RunState,
  type StoredInputsOptions,
} from '../../core';
import { ElementCodec } from '../element-codec';
import { Sealer } from '../sealing';
import type { MemoryLockManager } from './memory-lock.manager';
import { storageError, StorageErrorCode } from '../storage-error-codes';

interface MemoryMap {
  meta: MapMeta;
  inputs: Map<number, string>;
  records: Map<number, string>;
  states: Map<number, string>;
  offset: number;
  /** Set when an atomic map failed: elements from here on were never dispatched (skipped). */
  settledFrom?: number;
  failedIndex?: number;
  signalled: boolean;
  open: boolean;
  counts: { succeeded: number; failed: number; halted: number; skipped: number };
  rollback?: { order: number[]; offset: number; outcomes: Map<number, RollbackFailure[]>; signalled: boolean };
}

/**
 * In-process {@link MapStore} for the embedded runtime and tests: the records of fan-out maps (their
 * metadata, element inputs and results, dispatch window, rollback progress). It follows the same
 * contract as `RedisMapStore` (both pass `test/conformance/map-store.conformance.ts`); element leases
 * live in the given {@link MemoryLockManager} (the one the storage is fenced by). Not durable.
 *
 * @example
 * const { storage, locks, maps } = createMemoryAdapters(clock);   // or new MemoryMapStore(locks)
 */
export class MemoryMapStore implements MapStore {
  private readonly maps = new Map<string, MemoryMap>();
  private readonly pendingInputs = new Map<string, Map<number, string>>();

  /** Whether maps marked `encryptInputs` can be stored (an `inputCipher` was given). */
  readonly encryptsInputs: boolean;
  private readonly elements: ElementCodec;

  /** Whether a run has a cancel request stored (see the constructor's `cancelRequested`). */
  private readonly cancelRequested?: (runId: string) => boolean;

  /**
   * @param options.inputCipher see `RedisMapStoreOptions.inputCipher`
   * @param options.cancelRequested whether run `runId` has a cancel request stored (the storage's
   *   `hasCancelRequest`): a cancelled run's map starts no more elements. Without it, a map runs
   *   to its end before its run sees the cancel.
   */
  constructor(
    private readonly locks: MemoryLockManager,
    options: { inputCipher?: InputCipher; cancelRequested?: (runId: string) => boolean } = {},
  ) {
    this.elements = new ElementCodec(new Sealer(options.inputCipher));
    this.encryptsInputs = this.elements.sealer.available;
    this.cancelRequested = options.cancelRequested;
  }

  async create(meta: MapMeta): Promise<boolean> {
    if (this.maps.has(meta.mapId)) return false;
    const inputs = this.pendingInputs.get(meta.mapId) ?? new Map<number, string>();
    this.pendingInputs.delete(meta.mapId);
    this.maps.set(meta.mapId, {
      meta: clone(meta),
      inputs,
      records: new Map(),
      states: new Map(),
      offset: 0,
      signalled: false,
      open: true,
      counts: { succeeded: 0, failed: 0, halted: 0, skipped: 0 },
    });
    return true;
  }

  async meta(mapId: string): Promise<MapMeta | undefined> {
    const map = this.maps.get(mapId);
    return map ? clone(map.meta) : undefined;
  }

  async putInputs(
    mapId: string,
    start: number,
    inputs: Array<Record<string, unknown>>,
    options?: StoredInputsOptions,
  ): Promise<void> {
    // Inputs are written before the map is created (the source is streamed first).
    const target = this.maps.get(mapId)?.inputs ?? this.pendingInputs.get(mapId) ?? new Map<number, string>();
    if (!this.maps.has(mapId)) this.pendingInputs.set(mapId, target);
    const encrypt = options?.encrypt === true;
    inputs.forEach((input, i) => target.set(start + i, this.elements.input(mapId, start + i, input, encrypt)));
  }

  async reserve(mapId: string, count: number): Promise<number[]> {
    const map = this.need(mapId, 'reserve');
    return this.take(map, count);
  }

  async claimElement(mapId: string, index: number, lease: Lease, ttlMs: number): Promise<ElementClaim> {
    const [claim] = await this.claimElements(mapId, [{ index, lease }], ttlMs);
    return claim;
  }

  async claimElements(mapId: string, elements: readonly ElementToClaim[], ttlMs: number): Promise<ElementClaim[]> {
    const map = this.maps.get(mapId);
    // The map's run has a cancel stored: no element that has not started starts, and the dispatch
    // stops (the elements not dispatched yet count as skipped), as mapClaimElements-n.lua does.
    const cancelled = map !== undefined && this.cancelRequested?.(map.meta.ownerRunId) === true;
    if (map && cancelled && map.settledFrom === undefined && map.offset < map.meta.total) {
      map.settledFrom = map.offset;
      map.offset = map.meta.total;
    }
    return elements.map(({ index, lease }): ElementClaim => {
      if (!map || map.records.has(index)) return { acquired: true, done: true };
      if (!this.locks.take(lease.key, ttlMs, lease.token)) return { acquired: false };
      const input = map.inputs.get(index);
      const state = map.states.get(index);
      return {
        acquired: true,
        done: false,
        input: this.elements.readInput(mapId, index, input),
        state: this.elements.readState(mapId, index, state),
        skip: map.failedIndex !== undefined || (cancelled && state === undefined),
      };
    });
  }

  async putElementState(mapId: string, index: number, state: RunState, lease: Lease): Promise<void> {
    if (!this.locks.holds(lease)) throw new LeaseLostError(`${mapId}#${index}`);
    this.need(mapId, 'putElementState').states.set(index, this.elements.state(mapId, index, state));
  }

  async settleElement(
    mapId: string,
    index: number,
    record: ElementRecord,
    state: RunState | undefined,
    lease: Lease,
  ): Promise<ElementSettled> {
    if (!this.locks.holds(lease)) throw new LeaseLostError(`${mapId}#${index}`);
    const { lost, ...settled } = await this.settleElements(mapId, [{ index, record, state, lease }]);
    if (lost.length > 0) throw new LeaseLostError(`${mapId}#${index}`);
    return settled;
  }

  async settleElements(mapId: string, settlements: readonly ElementSettlement[]): Promise<ElementsSettled> {
    const map = this.need(mapId, 'settleElements');
    const lost: number[] = [];
    for (const { index, record, state, lease } of settlements) {
      if (!this.locks.holds(lease)) {
        lost.push(index);
        continue;
      }
      const previous = map.records.get(index);
      if (previous) this.count(map, JSON.parse(previous) as ElementRecord, -1);
      map.records.set(index, JSON.stringify(record));
      this.count(map, record, +1);
      if (state) map.states.set(index, this.elements.state(mapId, index, state));
      else map.states.delete(index);
      if (record.status === 'failed' && map.meta.atomic && map.failedIndex === undefined) {
        map.failedIndex = index;
        map.settledFrom ??= map.offset;
        map.offset = map.meta.total;
      }
      void this.locks.release(lease);
    }
    // One element per job: slide the window by one per settled element. More: refill it once a
    // job's worth of its places are free.
    const batch = map.meta.batchSize;
    const chunk = map.meta.elementsPerJob ?? 1;
    const free = batch - (map.offset - map.records.size);
    const next =
      chunk === 1
        ? this.take(map, settlements.length - lost.length)
        : free >= Math.min(chunk, batch)
          ? this.take(map, free)
          : [];
    const progress = this.progressOf(map);
    const signalOwner = progress.done && !map.signalled;
    if (signalOwner) map.signalled = true;
    return { progress, next, signalOwner, lost };
  }

  async records(mapId: string, from: number, to: number): Promise<Array<ElementRecord | undefined>> {
    const map = this.need(mapId, 'records');
    const out: Array<ElementRecord | undefined> = [];
    for (let i = from; i < to; i++) {
      const raw = map.records.get(i);
      out.push(
        raw
          ? (JSON.parse(raw) as ElementRecord)
          : map.settledFrom !== undefined && i >= map.settledFrom
            ? { status: 'skipped' }
            : undefined,
      );
    }
    return out;
  }

  async progress(mapId: string): Promise<MapProgress> {
    return this.progressOf(this.need(mapId, 'progress'));
  }

  async stalled(mapId: string, limit: number): Promise<number[]> {
    const map = this.need(mapId, 'stalled');
    const out: number[] = [];
    const end = map.settledFrom ?? map.offset;
    for (let i = 0; i < end && out.length < limit; i++) {
      if (!map.records.has(i) && !(await this.locks.isHeld(elementLeaseKey(mapId, i)))) out.push(i);
    }
    return out;
  }

  async claimSignal(mapId: string): Promise<boolean> {
    const map = this.need(mapId, 'claimSignal');
    if (!this.progressOf(map).done || map.signalled) return false;
    map.signalled = true;
    return true;
  }

  async listOpen(limit: number): Promise<string[]> {
    return [...this.maps.values()]
      .filter((m) => m.open)
      .sort((a, b) => a.meta.createdAt - b.meta.createdAt)
      .slice(0, limit)
      .map((m) => m.meta.mapId);
  }

  async close(mapId: string): Promise<void> {
    const map = this.maps.get(mapId);
    if (map) map.open = false;
  }

  async elementState(mapId: string, index: number): Promise<RunState | undefined> {
    return this.elements.readState(mapId, index, this.maps.get(mapId)?.states.get(index));
  }

  /**
   * Testing aid: the stored element inputs and states of a map, verbatim (sealed ones sealed).
   * @internal
   */
  readRaw(mapId: string): { inputs: string[]; states: string[] } {
    const map = this.maps.get(mapId);
    return { inputs: [...(map?.inputs.values() ?? [])], states: [...(map?.states.values() ?? [])] };
  }

  async startRollback(mapId: string, batchSize: number): Promise<number[]> {
    const map = this.need(mapId, 'startRollback');
    if (map.rollback) return [];
    const order = [...map.states.keys()]
      .filter((i) => {
        const raw = map.records.get(i);
        return raw !== undefined && (JSON.parse(raw) as ElementRecord).status === 'completed';
      })
      .sort((a, b) => b - a);
    map.rollback = { order, offset: 0, outcomes: new Map(), signalled: false };
    map.open = true;
    return this.takeRollback(map, batchSize);
  }

  async settleRollback(
    mapId: string,
    index: number,
    failures: RollbackFailure[],
    lease: Lease | undefined,
  ): Promise<{ next: number[]; signalOwner: boolean }> {
    const map = this.need(mapId, 'settleRollback');
    const rollback = map.rollback;
    if (!rollback) return { next: [], signalOwner: false };
    if (!rollback.outcomes.has(index)) rollback.outcomes.set(index, clone(failures));
    if (lease) void this.locks.release(lease);
    const next = this.takeRollback(map, 1);
    const done = rollback.outcomes.size >= rollback.order.length;
    const signalOwner = done && !rollback.signalled;
    if (signalOwner) rollback.signalled = true;
    return { next, signalOwner };
  }

  async rollbackProgress(mapId: string): Promise<MapRollbackProgress | undefined> {
    const rollback = this.maps.get(mapId)?.rollback;
    if (!rollback) return undefined;
    return {
      total: rollback.order.length,
      reported: rollback.outcomes.size,
      failures: [...rollback.outcomes.entries()].sort((a, b) => b[0] - a[0]).flatMap(([, f]) => clone(f)),
    };
  }

  async stalledRollback(mapId: string, limit: number): Promise<number[]> {
    const rollback = this.maps.get(mapId)?.rollback;
    if (!rollback) return [];
    const out: number[] = [];
    for (const index of rollback.order.slice(0, rollback.offset)) {
      if (out.length >= limit) break;
      if (!rollback.outcomes.has(index) && !(await this.locks.isHeld(elementLeaseKey(mapId, index)))) out.push(index);
    }
    return out;
  }

  private take(map: MemoryMap, count: number): number[] {
    const out: number[] = [];
    while (out.length < count && map.offset < map.meta.total) out.push(map.offset++);
    return out;
  }

  private takeRollback(map: MemoryMap, count: number): number[] {
    const rollback = map.rollback!;
    const out: number[] = [];
    while (out.length < count && rollback.offset < rollback.order.length) out.push(rollback.order[rollback.offset++]);
    return out;
  }

  private count(map: MemoryMap, record: ElementRecord, delta: number): void {
    if (record.status === 'completed') map.counts.succeeded += delta;
    else if (record.status === 'failed') map.counts.failed += delta;
    else if (record.status === 'halted') map.counts.halted += delta;
    else map.counts.skipped += delta;
  }

  private progressOf(map: MemoryMap): MapProgress {
    const end = map.settledFrom ?? map.meta.total;
    const settled = map.records.size;
    return {
      total: map.meta.total,
      dispatched: map.settledFrom ?? map.offset,
      settled,
      succeeded: map.counts.succeeded,
      failed: map.counts.failed,
      halted: map.counts.halted,
      skipped: map.counts.skipped + (map.meta.total - end),
      failedIndex: map.failedIndex,
      done: settled >= end,
    };
  }

  private need(mapId: string, operation = 'map store'): MemoryMap {
    const map = this.maps.get(mapId);
    if (!map) throw storageError(StorageErrorCode.MapMissing, { runId: mapId, mapId, operation });
    return map;
  }
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
