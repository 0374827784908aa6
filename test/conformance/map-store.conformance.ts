import { randomUUID } from 'node:crypto';
import { LeaseLostError, ReactorError } from '../../lib/core/errors';
import type { RunState } from '../../lib/core/model/run-state';
import { elementLeaseKey, mapIdOf } from '../../lib/core/model/keys';
import type { Lease, LockManager } from '../../lib/core/ports';
import type { ElementRecord, MapMeta } from '../../lib/core/model/map';
import type { MapStore } from '../../lib/core/ports/map-store.port';
import type { RollbackFailure, RunFailure } from '../../lib/core/results/run-outcome';
import { makeRunState, newRunId, T0 } from './run-state.factory';
import { SECRET } from './test-cipher';

/** A map store and the lock manager of the same runtime (element leases taken from `locks`). */
export interface MapStoreHarness {
  maps: MapStore;
  locks: LockManager;
  /** The stored element inputs and states of a map, verbatim (the store was given `testCipher`). */
  readRaw(mapId: string): Promise<{ inputs: string[]; states: string[] }>;
  /** Remove everything this harness created. */
  cleanup(): Promise<void>;
}

/** Builds a fresh, isolated harness (called once per test). */
export type MapStoreFactory = () => MapStoreHarness | Promise<MapStoreHarness>;

const LONG_TTL = 60_000;

const completed = (value: unknown): ElementRecord => ({ status: 'completed', value });
const halted = (reason: string): ElementRecord => ({ status: 'halted', reason, details: { why: reason } });
const skipped: ElementRecord = { status: 'skipped' };
function failed(message: string): ElementRecord {
  const failure: RunFailure = {
    message,
    code: 'STEP_FAILED',
    reactorName: 'reserve-item',
    stepName: 'reserve',
    exceptionClass: 'Error',
    errorMessage: message,
    retryable: false,
    inputs: {},
    rollbackFailures: [],
  };
  return { status: 'failed', failure };
}
function rollbackFailure(index: number): RollbackFailure {
  return {
    step: 'reserve',
    kind: 'undo',
    reason: 'raised',
    message: `undo of ${index} broke`,
    reactorName: 'reserve-item',
    mapStep: 'reserve-all',
    elementIndex: index,
  };
}

/** The MapStore contract (`lib/core/ports/map-store.port.ts`), for any adapter. */
export function describeMapStoreConformance(name: string, factory: MapStoreFactory): void {
  describe(`MapStore conformance: ${name}`, () => {
    let h: MapStoreHarness;
    let maps: MapStore;
    beforeEach(async () => {
      h = await factory();
      maps = h.maps;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    /** A map id of a top-level run, or (composed) of a child run `<root>/<step>`. */
    const newMapId = (composed = false) =>
      mapIdOf(composed ? `${newRunId()}/pay` : newRunId(), `reserve-all-${randomUUID().slice(0, 8)}`);

    function metaOf(mapId: string, overrides: Partial<MapMeta> = {}): MapMeta {
      const parentRunId = mapId.slice(0, mapId.lastIndexOf(':'));
      return {
        mapId,
        ownerRunId: parentRunId.split('/')[0],
        ownerReactor: 'import',
        parentRunId,
        step: mapId.slice(mapId.lastIndexOf(':') + 1),
        elementReactor: 'reserve-item',
        total: 5,
        batchSize: 2,
        atomic: false,
        createdAt: T0,
        ...overrides,
      };
    }

    /** Create a map of `total` elements with inputs `{ n: i }`. */
    async function newMap(overrides: Partial<MapMeta> = {}, composed = false): Promise<string> {
      const mapId = newMapId(composed);
      const meta = metaOf(mapId, overrides);
      await maps.putInputs(
        mapId,
        0,
        Array.from({ length: meta.total }, (_, n) => ({ n })),
      );
      expect(await maps.create(meta)).toBe(true);
      return mapId;
    }

    const leaseOf = (mapId: string, index: number): Lease => ({
      key: elementLeaseKey(mapId, index),
      token: randomUUID(),
    });

    /** Claim element `index` (it must be acquirable) and return its lease. */
    async function claim(mapId: string, index: number): Promise<Lease> {
      const lease = leaseOf(mapId, index);
      const claimed = await maps.claimElement(mapId, index, lease, LONG_TTL);
      expect(claimed).toMatchObject({ acquired: true, done: false });
      return lease;
    }

    async function settle(mapId: string, index: number, record: ElementRecord, state?: RunState) {
      return maps.settleElement(mapId, index, record, state, await claim(mapId, index));
    }

    /** Settle with a lease taken directly (for an index that already has a record). */
    async function overwrite(mapId: string, index: number, record: ElementRecord, state?: RunState) {
      const lease = (await h.locks.acquire(elementLeaseKey(mapId, index), LONG_TTL))!;
      return maps.settleElement(mapId, index, record, state, lease);
    }

    const elementState = (i: number) => makeRunState({ runId: `element-${i}`, status: 'completed' });

    describe('encrypted element inputs and states (the store was given an input cipher)', () => {
      it('stores them sealed when asked and reads them back; others stay in clear', async () => {
        expect(maps.encryptsInputs).toBe(true);
        const mapId = newMapId();
        await maps.putInputs(mapId, 0, [{ card: SECRET }, { card: `${SECRET}-2` }], { encrypt: true });
        await maps.create(metaOf(mapId, { total: 3, encryptInputs: true }));
        await maps.putInputs(mapId, 2, [{ card: `${SECRET}-3` }]);
        await maps.reserve(mapId, 3);
        const lease = leaseOf(mapId, 0);
        const claimed = await maps.claimElement(mapId, 0, lease, LONG_TTL);
        expect(claimed).toMatchObject({ acquired: true, done: false, input: { card: SECRET } });
        const state = makeRunState({ runId: 'element-0', encryptInputs: true, inputs: { card: SECRET } });
        await maps.putElementState(mapId, 0, state, lease);
        await expect(maps.elementState(mapId, 0)).resolves.toEqual(state);
        await maps.settleElement(mapId, 0, completed('ok'), { ...state, status: 'completed' }, lease);
        await expect(maps.elementState(mapId, 0)).resolves.toEqual({ ...state, status: 'completed' });
        await expect(maps.claimElement(mapId, 1, leaseOf(mapId, 1), LONG_TTL)).resolves.toMatchObject({
          input: { card: `${SECRET}-2` },
        });

        const raw = await h.readRaw(mapId);
        expect(raw.inputs).toHaveLength(3);
        expect(raw.inputs.filter((v) => v.includes(SECRET))).toEqual([`{"card":"${SECRET}-3"}`]);
        expect(raw.states).toHaveLength(1);
        expect(raw.states[0]).toMatch(/^~/);
      });
    });

    describe('create, meta and inputs', () => {
      it('creates a map once and returns its metadata', async () => {
        const mapId = newMapId();
        const meta = metaOf(mapId, { outer: { mapId: 'outer:map', index: 3 } });
        await expect(maps.meta(mapId)).resolves.toBeUndefined();
        await expect(maps.create(meta)).resolves.toBe(true);
        await expect(maps.create({ ...meta, total: 99 })).resolves.toBe(false);
        await expect(maps.meta(mapId)).resolves.toEqual(meta);
        await expect(maps.progress(mapId)).resolves.toEqual({
          total: 5,
          dispatched: 0,
          settled: 0,
          succeeded: 0,
          failed: 0,
          halted: 0,
          skipped: 0,
          done: false,
        });
        expect(await maps.listOpen(10)).toEqual([mapId]);
      });

      it('keeps inputs stored before the map is created, and stores more after', async () => {
        const mapId = newMapId();
        await maps.putInputs(mapId, 0, [{ sku: 'a' }, { sku: 'b' }]);
        await maps.putInputs(mapId, 2, [{ sku: 'c', nested: { qty: [1, 2] } }]);
        await maps.create(metaOf(mapId, { total: 4 }));
        await maps.putInputs(mapId, 3, [{ sku: 'd' }]);
        await maps.reserve(mapId, 4);
        const inputs = [];
        for (let i = 0; i < 4; i++) {
          const claimed = await maps.claimElement(mapId, i, leaseOf(mapId, i), LONG_TTL);
          inputs.push(claimed.acquired && !claimed.done ? claimed.input : undefined);
        }
        expect(inputs).toEqual([{ sku: 'a' }, { sku: 'b' }, { sku: 'c', nested: { qty: [1, 2] } }, { sku: 'd' }]);
      });

      it('stores a chunk of 1,000 inputs', async () => {
        const mapId = newMapId();
        await maps.putInputs(
          mapId,
          1000,
          Array.from({ length: 1000 }, (_, i) => ({ row: 1000 + i })),
        );
        await maps.create(metaOf(mapId, { total: 2000 }));
        await maps.reserve(mapId, 2000);
        const claimed = await maps.claimElement(mapId, 1999, leaseOf(mapId, 1999), LONG_TTL);
        expect(claimed).toMatchObject({ acquired: true, done: false, input: { row: 1999 } });
        // An element whose inputs were never stored gets empty inputs.
        const missing = await maps.claimElement(mapId, 5, leaseOf(mapId, 5), LONG_TTL);
        expect(missing).toMatchObject({ acquired: true, done: false, input: {} });
      });

      it('works for the map of a composed child (run id <root>/<step>)', async () => {
        const mapId = await newMap({ total: 2 }, true);
        expect(mapId).toContain('/pay:');
        expect(await maps.reserve(mapId, 2)).toEqual([0, 1]);
        await settle(mapId, 0, completed('a'));
        const last = await settle(mapId, 1, completed('b'));
        expect(last.signalOwner).toBe(true);
        expect(await maps.records(mapId, 0, 2)).toEqual([completed('a'), completed('b')]);
      });
    });

    describe('reserve', () => {
      it('reserves indices in order and never past total', async () => {
        const mapId = await newMap({ total: 5 });
        expect(await maps.reserve(mapId, 3)).toEqual([0, 1, 2]);
        expect(await maps.reserve(mapId, 3)).toEqual([3, 4]);
        expect(await maps.reserve(mapId, 1)).toEqual([]);
        expect(await maps.reserve(mapId, 0)).toEqual([]);
        expect((await maps.progress(mapId)).dispatched).toBe(5);
      });

      it('hands each index to one of many concurrent callers', async () => {
        const mapId = await newMap({ total: 50 });
        const batches = await Promise.all(Array.from({ length: 20 }, () => maps.reserve(mapId, 3)));
        expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
      });
    });

    describe('claimElement', () => {
      it('takes the element lease and returns the inputs, no state and no skip', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 2);
        const lease = leaseOf(mapId, 1);
        await expect(maps.claimElement(mapId, 1, lease, LONG_TTL)).resolves.toEqual({
          acquired: true,
          done: false,
          input: { n: 1 },
          state: undefined,
          skip: false,
        });
        expect(await h.locks.isHeld(lease.key)).toBe(true);
        // The lease is the one given: its token releases it.
        expect(await h.locks.release(lease)).toBe(true);
      });

      it('is not acquired while someone holds the element lease', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 1);
        const held = (await h.locks.acquire(elementLeaseKey(mapId, 0), LONG_TTL))!;
        await expect(maps.claimElement(mapId, 0, leaseOf(mapId, 0), LONG_TTL)).resolves.toEqual({ acquired: false });
        await h.locks.release(held);
        await expect(maps.claimElement(mapId, 0, leaseOf(mapId, 0), LONG_TTL)).resolves.toMatchObject({
          acquired: true,
          done: false,
        });
      });

      it('is done, without taking the lease, for an element that has a record or a map that is not stored', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 1);
        await settle(mapId, 0, completed(1));
        const lease = leaseOf(mapId, 0);
        await expect(maps.claimElement(mapId, 0, lease, LONG_TTL)).resolves.toEqual({ acquired: true, done: true });
        expect(await h.locks.isHeld(lease.key)).toBe(false);
        const gone = newMapId();
        await expect(maps.claimElement(gone, 0, leaseOf(gone, 0), LONG_TTL)).resolves.toEqual({
          acquired: true,
          done: true,
        });
        expect(await h.locks.isHeld(elementLeaseKey(gone, 0))).toBe(false);
      });

      it('returns the state saved between attempts', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 1);
        const lease = await claim(mapId, 0);
        const state = makeRunState({ runId: `${mapId}#0`, attempts: { reserve: 2 } });
        await maps.putElementState(mapId, 0, state, lease);
        await h.locks.release(lease);
        await expect(maps.claimElement(mapId, 0, leaseOf(mapId, 0), LONG_TTL)).resolves.toEqual({
          acquired: true,
          done: false,
          input: { n: 0 },
          state,
          skip: false,
        });
        await expect(maps.elementState(mapId, 0)).resolves.toEqual(state);
      });

      it('says skip once an atomic map has failed', async () => {
        const mapId = await newMap({ atomic: true });
        await maps.reserve(mapId, 2);
        const late = leaseOf(mapId, 1);
        await settle(mapId, 0, failed('boom'));
        await expect(maps.claimElement(mapId, 1, late, LONG_TTL)).resolves.toMatchObject({
          acquired: true,
          done: false,
          skip: true,
        });
      });
    });

    describe('putElementState', () => {
      it('is fenced by the element lease', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 1);
        await claim(mapId, 0);
        const error = await maps
          .putElementState(mapId, 0, elementState(0), { key: elementLeaseKey(mapId, 0), token: 'someone-else' })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LeaseLostError);
        await expect(maps.elementState(mapId, 0)).resolves.toBeUndefined();
      });
    });

    describe('chunks of elements (one job, one round trip each way)', () => {
      it('claims each element of a chunk as a single claim would, in the order asked', async () => {
        const mapId = await newMap({ total: 6, elementsPerJob: 4 });
        await maps.reserve(mapId, 4);
        await settle(mapId, 0, completed(0));
        const elsewhere = (await h.locks.acquire(elementLeaseKey(mapId, 1), LONG_TTL))!;
        const token = randomUUID();
        const chunk = [0, 1, 2, 3].map((index) => ({ index, lease: { key: elementLeaseKey(mapId, index), token } }));
        const claims = await maps.claimElements(mapId, chunk, LONG_TTL);
        expect(claims).toEqual([
          { acquired: true, done: true },
          { acquired: false },
          { acquired: true, done: false, input: { n: 2 }, skip: false },
          { acquired: true, done: false, input: { n: 3 }, skip: false },
        ]);
        expect(await h.locks.isHeld(chunk[2].lease.key)).toBe(true);
        await h.locks.release(elsewhere);
      });

      it('settles a chunk: each element fenced by its own lease, a lost one reported and not written', async () => {
        const mapId = await newMap({ total: 3, batchSize: 3, elementsPerJob: 3 });
        await maps.reserve(mapId, 3);
        const token = randomUUID();
        const chunk = [0, 1, 2].map((index) => ({ index, lease: { key: elementLeaseKey(mapId, index), token } }));
        await maps.claimElements(mapId, chunk, LONG_TTL);
        // Element 1's lease expired and another worker holds it now.
        await h.locks.release(chunk[1].lease);
        const other = (await h.locks.acquire(elementLeaseKey(mapId, 1), LONG_TTL))!;

        const settled = await maps.settleElements(
          mapId,
          chunk.map(({ index, lease }) => ({ index, record: completed(index), lease })),
        );
        expect(settled.lost).toEqual([1]);
        expect(settled.signalOwner).toBe(false);
        expect(settled.progress).toMatchObject({ settled: 2, succeeded: 2, done: false });
        expect(await maps.records(mapId, 0, 3)).toEqual([completed(0), undefined, completed(2)]);
        expect(await h.locks.isHeld(chunk[0].lease.key)).toBe(false);

        // The live holder settles it, and the map is done: the owner signal goes to it alone.
        const last = await maps.settleElements(mapId, [{ index: 1, record: completed(1), lease: other }]);
        expect(last).toMatchObject({ lost: [], signalOwner: true, progress: { settled: 3, done: true } });
      });
    });

    describe('settleElement', () => {
      it('stores the record by index, releases the lease and counts it', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 2);
        const lease = await claim(mapId, 1);
        const settled = await maps.settleElement(mapId, 1, completed({ id: 'r-1' }), undefined, lease);
        expect(settled.signalOwner).toBe(false);
        expect(settled.progress).toEqual({
          total: 5,
          dispatched: 3,
          settled: 1,
          succeeded: 1,
          failed: 0,
          halted: 0,
          skipped: 0,
          done: false,
        });
        expect(await h.locks.isHeld(lease.key)).toBe(false);
        expect(await maps.records(mapId, 0, 3)).toEqual([undefined, completed({ id: 'r-1' }), undefined]);
      });

      it('with a window of 2, slides it by one index per settled element, never past total', async () => {
        const mapId = await newMap({ total: 5 });
        expect(await maps.reserve(mapId, 2)).toEqual([0, 1]);
        expect((await settle(mapId, 0, completed(0))).next).toEqual([2]);
        expect((await settle(mapId, 1, completed(1))).next).toEqual([3]);
        expect((await settle(mapId, 3, completed(3))).next).toEqual([4]);
        expect((await settle(mapId, 2, completed(2))).next).toEqual([]);
        const last = await settle(mapId, 4, completed(4));
        expect(last).toEqual({
          next: [],
          signalOwner: true,
          progress: {
            total: 5,
            dispatched: 5,
            settled: 5,
            succeeded: 5,
            failed: 0,
            halted: 0,
            skipped: 0,
            done: true,
          },
        });
      });

      it('an overwrite replaces the record and moves the counts', async () => {
        const mapId = await newMap({ total: 2 });
        await maps.reserve(mapId, 2);
        await settle(mapId, 0, failed('first try'));
        const again = await overwrite(mapId, 0, completed('second try'));
        expect(again.progress).toMatchObject({ settled: 1, succeeded: 1, failed: 0 });
        const third = await overwrite(mapId, 0, halted('third'));
        expect(third.progress).toMatchObject({ settled: 1, succeeded: 0, failed: 0, halted: 1 });
        expect(await maps.records(mapId, 0, 1)).toEqual([halted('third')]);
      });

      it('keeps the final state when given and drops a saved one when not', async () => {
        const mapId = await newMap({ total: 3 });
        await maps.reserve(mapId, 3);
        await settle(mapId, 0, completed(0), elementState(0));
        const lease = await claim(mapId, 1);
        await maps.putElementState(mapId, 1, elementState(1), lease);
        await maps.settleElement(mapId, 1, completed(1), undefined, lease);
        await expect(maps.elementState(mapId, 0)).resolves.toEqual(elementState(0));
        await expect(maps.elementState(mapId, 1)).resolves.toBeUndefined();
        await expect(maps.elementState(mapId, 2)).resolves.toBeUndefined();
        await expect(maps.elementState(newMapId(), 0)).resolves.toBeUndefined();
      });

      it('atomic: the first failure settles every undispatched element as skipped', async () => {
        const mapId = await newMap({ total: 10, atomic: true });
        expect(await maps.reserve(mapId, 3)).toEqual([0, 1, 2]);
        const failure = await settle(mapId, 1, failed('no stock'));
        expect(failure).toEqual({
          next: [],
          signalOwner: false,
          progress: {
            total: 10,
            dispatched: 3,
            settled: 1,
            succeeded: 0,
            failed: 1,
            halted: 0,
            skipped: 7,
            failedIndex: 1,
            done: false,
          },
        });
        expect(await maps.reserve(mapId, 5)).toEqual([]);
        // A later failure does not move the first one.
        expect((await settle(mapId, 0, failed('also broke'))).progress).toMatchObject({ failedIndex: 1, failed: 2 });
        const last = await settle(mapId, 2, skipped);
        expect(last.signalOwner).toBe(true);
        expect(last.progress).toEqual({
          total: 10,
          dispatched: 3,
          settled: 3,
          succeeded: 0,
          failed: 2,
          halted: 0,
          skipped: 8,
          failedIndex: 1,
          done: true,
        });
        expect(await maps.records(mapId, 0, 10)).toEqual([
          failed('also broke'),
          failed('no stock'),
          skipped,
          ...Array.from({ length: 7 }, () => skipped),
        ]);
        expect(await maps.stalled(mapId, 10)).toEqual([]);
      });

      it('slides a larger window by one index per element when a job runs one element', async () => {
        const mapId = await newMap({ total: 30, batchSize: 10 });
        expect(await maps.reserve(mapId, 10)).toEqual([...Array(10).keys()]);
        expect((await settle(mapId, 0, completed(0))).next).toEqual([10]);
        expect((await settle(mapId, 3, completed(3))).next).toEqual([11]);
      });

      it('refills the window in one bulk once a job of elements fits in it, never past it or total', async () => {
        const mapId = await newMap({ total: 30, batchSize: 10, elementsPerJob: 5 });
        expect(await maps.reserve(mapId, 10)).toEqual([...Array(10).keys()]);
        for (let i = 0; i < 4; i++) expect((await settle(mapId, i, completed(i))).next).toEqual([]);
        // Five places free, a job's worth: fill the window again with the next five indices.
        expect((await settle(mapId, 4, completed(4))).next).toEqual([10, 11, 12, 13, 14]);
        expect((await settle(mapId, 5, completed(5))).next).toEqual([]);
        // Never past total, and never more than the window in flight.
        for (let i = 6; i < 15; i++) await settle(mapId, i, completed(i));
        const progress = await maps.progress(mapId);
        expect(progress.dispatched - progress.settled).toBeLessThanOrEqual(10);
        expect(progress.dispatched).toBeLessThanOrEqual(30);
      });

      it('non-atomic: a failure does not stop the map', async () => {
        const mapId = await newMap({ total: 3 });
        await maps.reserve(mapId, 2);
        expect((await settle(mapId, 0, failed('x'))).next).toEqual([2]);
        expect((await maps.progress(mapId)).failedIndex).toBeUndefined();
      });

      it('gives the owner signal to exactly one of many concurrent settles', async () => {
        const total = 24;
        const mapId = await newMap({ total, batchSize: total });
        await maps.reserve(mapId, total);
        const leases = await Promise.all(Array.from({ length: total }, (_, i) => claim(mapId, i)));
        const settled = await Promise.all(
          leases.map((lease, i) => maps.settleElement(mapId, i, completed(i), undefined, lease)),
        );
        expect(settled.filter((s) => s.signalOwner)).toHaveLength(1);
        expect(settled.filter((s) => s.progress.done).length).toBeGreaterThanOrEqual(1);
        await expect(maps.claimSignal(mapId)).resolves.toBe(false);
        // A redelivered element settling again does not signal again.
        expect((await overwrite(mapId, 3, completed(3))).signalOwner).toBe(false);
      });

      it('is fenced: a foreign or missing lease throws LeaseLostError and writes nothing', async () => {
        const mapId = await newMap();
        await maps.reserve(mapId, 2);
        const lease = await claim(mapId, 0);
        for (const wrong of [
          { key: lease.key, token: 'someone-else' },
          { key: elementLeaseKey(mapId, 1), token: randomUUID() },
        ]) {
          const index = wrong.key === lease.key ? 0 : 1;
          const error = await maps
            .settleElement(mapId, index, completed('x'), elementState(index), wrong)
            .catch((e: unknown) => e);
          expect(error).toBeInstanceOf(LeaseLostError);
          expect((error as ReactorError).code).toBe('LEASE_LOST');
        }
        expect(await maps.records(mapId, 0, 2)).toEqual([undefined, undefined]);
        expect(await maps.progress(mapId)).toMatchObject({ settled: 0, succeeded: 0, dispatched: 2 });
        await expect(maps.elementState(mapId, 0)).resolves.toBeUndefined();
        expect(await h.locks.isHeld(lease.key)).toBe(true);
        // The holder can still settle.
        expect((await maps.settleElement(mapId, 0, completed('ok'), undefined, lease)).progress.settled).toBe(1);
      });
    });

    describe('records and progress', () => {
      it('reads a range with holes as undefined', async () => {
        const mapId = await newMap({ total: 5 });
        await maps.reserve(mapId, 5);
        await settle(mapId, 0, completed({ a: 1 }));
        await settle(mapId, 2, halted('stop'));
        await settle(mapId, 3, skipped);
        expect(await maps.records(mapId, 0, 5)).toEqual([
          completed({ a: 1 }),
          undefined,
          halted('stop'),
          skipped,
          undefined,
        ]);
        expect(await maps.records(mapId, 2, 4)).toEqual([halted('stop'), skipped]);
        expect(await maps.records(mapId, 3, 3)).toEqual([]);
      });

      it('counts every status', async () => {
        const mapId = await newMap({ total: 6 });
        await maps.reserve(mapId, 5);
        await settle(mapId, 0, completed(0));
        await settle(mapId, 1, completed(1));
        await settle(mapId, 2, failed('f'));
        await settle(mapId, 3, halted('h'));
        await settle(mapId, 4, skipped);
        expect(await maps.progress(mapId)).toEqual({
          total: 6,
          dispatched: 6,
          settled: 5,
          succeeded: 2,
          failed: 1,
          halted: 1,
          skipped: 1,
          done: false,
        });
      });

      it('an empty map is done at once, and its signal can be claimed once', async () => {
        const mapId = await newMap({ total: 0 });
        expect(await maps.reserve(mapId, 2)).toEqual([]);
        expect(await maps.progress(mapId)).toMatchObject({ total: 0, settled: 0, done: true });
        await expect(maps.claimSignal(mapId)).resolves.toBe(true);
        await expect(maps.claimSignal(mapId)).resolves.toBe(false);
      });

      it('claimSignal is false while the map is not done', async () => {
        const mapId = await newMap({ total: 2 });
        await maps.reserve(mapId, 2);
        await settle(mapId, 0, completed(0));
        await expect(maps.claimSignal(mapId)).resolves.toBe(false);
      });

      it('operations that need the map fail clearly when it is not stored', async () => {
        const mapId = newMapId();
        const calls: Array<() => Promise<unknown>> = [
          () => maps.reserve(mapId, 1),
          () => maps.progress(mapId),
          () => maps.records(mapId, 0, 1),
          () => maps.stalled(mapId, 1),
          () => maps.claimSignal(mapId),
          () => maps.startRollback(mapId, 1),
          () => maps.settleRollback(mapId, 0, [], undefined),
        ];
        for (const call of calls) {
          const error = await call().catch((e: unknown) => e);
          expect(error).toBeInstanceOf(ReactorError);
          expect((error as Error).message).toContain(`Map '${mapId}' is not stored`);
        }
        await expect(maps.meta(mapId)).resolves.toBeUndefined();
        await expect(maps.rollbackProgress(mapId)).resolves.toBeUndefined();
        await expect(maps.stalledRollback(mapId, 5)).resolves.toEqual([]);
      });
    });

    describe('stalled', () => {
      it('lists dispatched elements with no record and no live lease', async () => {
        const mapId = await newMap({ total: 9 });
        await maps.reserve(mapId, 5);
        await settle(mapId, 0, completed(0));
        await settle(mapId, 1, completed(1));
        await settle(mapId, 3, completed(3)); // the window slid to 5, 6, 7
        const held = (await h.locks.acquire(elementLeaseKey(mapId, 2), LONG_TTL))!;
        await claim(mapId, 5);
        expect(await maps.stalled(mapId, 10)).toEqual([4, 6, 7]);
        expect(await maps.stalled(mapId, 1)).toEqual([4]);
        await h.locks.release(held);
        expect(await maps.stalled(mapId, 10)).toEqual([2, 4, 6, 7]);
        expect(await maps.stalled(mapId, 0)).toEqual([]);
      });

      it('pages past many held leases', async () => {
        const total = 2100;
        const mapId = await newMap({ total });
        await maps.reserve(mapId, total);
        await Promise.all(Array.from({ length: 1200 }, (_, i) => h.locks.acquire(elementLeaseKey(mapId, i), LONG_TTL)));
        expect(await maps.stalled(mapId, 3)).toEqual([1200, 1201, 1202]);
      });
    });

    describe('listOpen and close', () => {
      it('lists open maps oldest first, and close drops one but keeps its records', async () => {
        const a = await newMap({ total: 1, createdAt: T0 + 20 });
        const b = await newMap({ total: 1, createdAt: T0 + 10 }, true);
        const c = await newMap({ total: 1, createdAt: T0 + 30 });
        expect(await maps.listOpen(10)).toEqual([b, a, c]);
        expect(await maps.listOpen(2)).toEqual([b, a]);
        expect(await maps.listOpen(0)).toEqual([]);
        await maps.reserve(a, 1);
        await settle(a, 0, completed('kept'));
        await maps.close(a);
        await maps.close(a);
        expect(await maps.listOpen(10)).toEqual([b, c]);
        expect(await maps.records(a, 0, 1)).toEqual([completed('kept')]);
        await expect(maps.meta(a)).resolves.toMatchObject({ mapId: a });
      });
    });

    describe('rollback', () => {
      /** Map of 6: completed+state at 0, 3, 5; completed without state at 1; failed+state at 2; halted at 4. */
      async function settledMap(): Promise<string> {
        const mapId = await newMap({ total: 6, batchSize: 2, createdAt: T0 + 5 });
        await maps.reserve(mapId, 6);
        await settle(mapId, 0, completed(0), elementState(0));
        await settle(mapId, 1, completed(1));
        await settle(mapId, 2, failed('f'), elementState(2));
        await settle(mapId, 3, completed(3), elementState(3));
        await settle(mapId, 4, halted('h'));
        await settle(mapId, 5, completed(5), elementState(5));
        await maps.close(mapId);
        return mapId;
      }

      it('starts once: completed elements with a state, highest index first, and reopens the map', async () => {
        const mapId = await settledMap();
        await expect(maps.rollbackProgress(mapId)).resolves.toBeUndefined();
        expect(await maps.listOpen(10)).toEqual([]);
        expect(await maps.startRollback(mapId, 2)).toEqual([5, 3]);
        expect(await maps.startRollback(mapId, 2)).toEqual([]);
        expect(await maps.rollbackProgress(mapId)).toEqual({ total: 3, reported: 0, failures: [] });
        expect(await maps.listOpen(10)).toEqual([mapId]);
      });

      it('a rollback with nothing to undo is complete at once', async () => {
        const mapId = await newMap({ total: 1 });
        await maps.reserve(mapId, 1);
        await settle(mapId, 0, completed(0));
        expect(await maps.startRollback(mapId, 5)).toEqual([]);
        expect(await maps.rollbackProgress(mapId)).toEqual({ total: 0, reported: 0, failures: [] });
      });

      it('settles outcomes (first wins), slides by one, and signals the owner once when all reported', async () => {
        const mapId = await settledMap();
        await maps.startRollback(mapId, 2);
        const lease5 = (await h.locks.acquire(elementLeaseKey(mapId, 5), LONG_TTL))!;
        expect(await maps.settleRollback(mapId, 5, [], lease5)).toEqual({ next: [0], signalOwner: false });
        expect(await h.locks.isHeld(lease5.key)).toBe(false);
        // A duplicate report of 5 changes nothing.
        expect(await maps.settleRollback(mapId, 5, [rollbackFailure(5)], undefined)).toEqual({
          next: [],
          signalOwner: false,
        });
        const lease3 = (await h.locks.acquire(elementLeaseKey(mapId, 3), LONG_TTL))!;
        // A foreign token does not release the lease.
        await maps.settleRollback(mapId, 3, [rollbackFailure(3)], { key: lease3.key, token: 'someone-else' });
        expect(await h.locks.isHeld(lease3.key)).toBe(true);
        expect(await maps.rollbackProgress(mapId)).toEqual({
          total: 3,
          reported: 2,
          failures: [rollbackFailure(3)],
        });
        const last = await maps.settleRollback(mapId, 0, [rollbackFailure(0), rollbackFailure(0)], undefined);
        expect(last).toEqual({ next: [], signalOwner: true });
        expect(await maps.settleRollback(mapId, 0, [], undefined)).toEqual({ next: [], signalOwner: false });
        expect(await maps.rollbackProgress(mapId)).toEqual({
          total: 3,
          reported: 3,
          failures: [rollbackFailure(3), rollbackFailure(0), rollbackFailure(0)],
        });
      });

      it('signals exactly once across concurrent reports', async () => {
        const mapId = await newMap({ total: 12, batchSize: 12 });
        await maps.reserve(mapId, 12);
        for (let i = 0; i < 12; i++) await settle(mapId, i, completed(i), elementState(i));
        const first = await maps.startRollback(mapId, 12);
        expect(first).toEqual(Array.from({ length: 12 }, (_, i) => 11 - i));
        const settled = await Promise.all(first.map((i) => maps.settleRollback(mapId, i, [], undefined)));
        expect(settled.filter((s) => s.signalOwner)).toHaveLength(1);
      });

      it('settleRollback before any rollback started does nothing', async () => {
        const mapId = await settledMap();
        const lease = (await h.locks.acquire(elementLeaseKey(mapId, 5), LONG_TTL))!;
        expect(await maps.settleRollback(mapId, 5, [], lease)).toEqual({ next: [], signalOwner: false });
        await expect(maps.rollbackProgress(mapId)).resolves.toBeUndefined();
      });

      it('stalledRollback lists reserved positions with no outcome and no live lease, in rollback order', async () => {
        const mapId = await settledMap();
        expect(await maps.stalledRollback(mapId, 5)).toEqual([]);
        await maps.startRollback(mapId, 2);
        expect(await maps.stalledRollback(mapId, 5)).toEqual([5, 3]);
        const held = (await h.locks.acquire(elementLeaseKey(mapId, 5), LONG_TTL))!;
        expect(await maps.stalledRollback(mapId, 5)).toEqual([3]);
        expect((await maps.settleRollback(mapId, 3, [], undefined)).next).toEqual([0]);
        expect(await maps.stalledRollback(mapId, 5)).toEqual([0]);
        await h.locks.release(held);
        expect(await maps.stalledRollback(mapId, 5)).toEqual([5, 0]);
        expect(await maps.stalledRollback(mapId, 1)).toEqual([5]);
      });
    });
  });
}
