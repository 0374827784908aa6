import { randomUUID } from 'node:crypto';
import type { FlowStore } from '../../lib/core/ports';
import { waitFor } from './adapter-harness';

/** A flow store, and the means to let its time pass. */
export interface FlowHarness {
  store: FlowStore;
  /**
   * Move the store's time forward. Present for fake clocks; absent for real time, where the suite
   * uses real short periods ({@link shortMs}) and polls the store's time with a deadline.
   */
  advance?(ms: number): void;
  /** Period, wait and TTL the suite lets run out. Keep it short with real time. @default 200 */
  shortMs?: number;
  /** Remove everything this harness created. */
  cleanup(): Promise<void>;
}

/** Builds a fresh, isolated harness (called once per test). */
export type FlowFactory = () => FlowHarness | Promise<FlowHarness>;

const LONG = 60_000;
const HOUR = 3_600_000;

/** The FlowStore contract (`lib/core/ports/flow-store.port.ts`), for any adapter. */
export function describeFlowStoreConformance(name: string, factory: FlowFactory): void {
  describe(`FlowStore conformance: ${name}`, () => {
    let h: FlowHarness;
    let store: FlowStore;
    /** This test's reactor name (unique, so tests never meet on a shared backend). */
    let reactor: string;
    beforeEach(async () => {
      h = await factory();
      store = h.store;
      reactor = `reactor-${randomUUID()}`;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const short = () => h.shortMs ?? 200;

    /**
     * Make more than `ms` pass on the store's clock since this call: advance a fake clock, or poll
     * the store's time (never a fixed sleep).
     */
    async function pass(ms: number): Promise<void> {
      if (h.advance) {
        h.advance(ms + 1);
        return;
      }
      const until = (await store.now()) + ms;
      await waitFor(async () => (await store.now()) > until, `${ms} ms of store time to pass`, ms + 5000);
    }

    /** Make the store's time reach `at` (ms) at least. */
    async function reach(at: number): Promise<void> {
      const now = await store.now();
      if (now >= at) return;
      if (h.advance) {
        h.advance(at - now);
        return;
      }
      await waitFor(async () => (await store.now()) >= at, `store time to reach ${at}`, at - now + 5000);
    }

    /** Make sure at least `ms` are left in the current window of length `windowMs` (else wait for the next). */
    async function roomInWindow(windowMs: number, ms: number): Promise<void> {
      const left = windowMs - ((await store.now()) % windowMs);
      if (left < ms) await pass(left);
    }

    const enter = (key: string, runId: string, limit = 1, maxQueued = 100) =>
      store.enter(reactor, key, runId, limit, maxQueued);
    const leave = (key: string, runId: string, limit = 1) => store.leave(reactor, key, runId, limit);
    const inspect = (key: string, peek = 100) => store.inspect(reactor, key, peek);
    /** The ids holding a slot of `key`, sorted (the contract gives no order to `live`). */
    const liveIds = async (key: string) => (await inspect(key)).live.map((l) => l.runId).sort();

    describe('now', () => {
      it('is the store time in whole ms, never going back', async () => {
        const first = await store.now();
        const second = await store.now();
        expect(Number.isInteger(first)).toBe(true);
        expect(second).toBeGreaterThanOrEqual(first);
        await pass(5);
        expect(await store.now()).toBeGreaterThan(second + 5);
      });
    });

    describe('concurrency: enter and leave', () => {
      it('admits up to `limit` runs, then queues the others with 1-based positions', async () => {
        expect(await enter('k', 'a', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'b', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'c', 2)).toEqual({ state: 'queued', position: 1 });
        expect(await enter('k', 'd', 2)).toEqual({ state: 'queued', position: 2 });
        expect(await enter('k', 'e', 2)).toEqual({ state: 'queued', position: 3 });
        expect(await liveIds('k')).toEqual(['a', 'b']);
        expect(await inspect('k')).toMatchObject({ key: 'k', queued: 3, next: ['c', 'd', 'e'] });
      });

      it('keeps keys and reactors apart', async () => {
        expect(await enter('k1', 'a')).toEqual({ state: 'admitted' });
        expect(await enter('k2', 'b')).toEqual({ state: 'admitted' });
        expect(await store.enter(`${reactor}-other`, 'k1', 'c', 1, 10)).toEqual({ state: 'admitted' });
        expect(await enter('k1', 'd')).toEqual({ state: 'queued', position: 1 });
        expect(await liveIds('k1')).toEqual(['a']);
        expect(await liveIds('k2')).toEqual(['b']);
        expect((await store.inspect(`${reactor}-other`, 'k1', 10)).live.map((l) => l.runId)).toEqual(['c']);
        // A leave on another key or reactor frees nothing here.
        expect(await leave('k2', 'b')).toEqual([]);
        expect(await store.leave(`${reactor}-other`, 'k1', 'c', 1)).toEqual([]);
        expect(await inspect('k1')).toMatchObject({ queued: 1, next: ['d'] });
      });
    });
  });
}
