import { randomUUID } from 'node:crypto';
import type { FlowEntry, FlowStore, GatherSpec } from '../../lib/core/ports';
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
      await h?.cleanup();
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

    const reserve = (key: string, limit: number, periodMs: number) => store.reserveStart(reactor, key, limit, periodMs);
    const gather = (key: string, newRunId: string, item: string, spec: GatherSpec) =>
      store.gather(reactor, key, newRunId, item, spec);
    const take = (key: string, runId: string) => store.take(reactor, key, runId);
    /** A debounce of `periodMs`, due at most `maxWaitMs` after it opened. */
    const debounce = (periodMs: number, maxWaitMs = LONG, ttlMs = HOUR): GatherSpec => ({
      mode: 'last',
      periodMs,
      maxWaitMs,
      ttlMs,
    });
    /** A batch due `maxWaitMs` after it opened, or at once when it holds `maxSize` items. */
    const batch = (maxWaitMs: number, maxSize?: number, ttlMs = HOUR): GatherSpec => ({
      mode: 'all',
      maxWaitMs,
      ...(maxSize === undefined ? {} : { maxSize }),
      ttlMs,
    });

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
        const other = `${reactor}-other`;
        expect(await enter('k1', 'a')).toEqual({ state: 'admitted' });
        expect(await enter('k2', 'b')).toEqual({ state: 'admitted' });
        expect(await store.enter(other, 'k1', 'c', 1, 10)).toEqual({ state: 'admitted' });
        expect(await enter('k1', 'd')).toEqual({ state: 'queued', position: 1 });
        expect(await liveIds('k1')).toEqual(['a']);
        expect(await liveIds('k2')).toEqual(['b']);
        expect((await store.inspect(other, 'k1', 10)).live.map((l) => l.runId)).toEqual(['c']);
        // A leave on another key or reactor frees nothing here, and finds no run of this key.
        expect(await leave('k2', 'b')).toEqual([]);
        expect(await store.leave(other, 'k1', 'c', 1)).toEqual([]);
        expect(await leave('k2', 'a')).toEqual([]);
        expect(await store.leave(other, 'k1', 'a', 1)).toEqual([]);
        expect(await liveIds('k1')).toEqual(['a']);
        expect(await inspect('k1')).toMatchObject({ queued: 1, next: ['d'] });
      });

      it('is idempotent: a run that holds a slot is admitted again without a second slot, a queued one keeps its place', async () => {
        expect(await enter('k', 'a', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'a', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'b', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'c', 2)).toEqual({ state: 'queued', position: 1 });
        expect(await enter('k', 'd', 2)).toEqual({ state: 'queued', position: 2 });
        expect(await enter('k', 'a', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'd', 2)).toEqual({ state: 'queued', position: 2 });
        expect(await enter('k', 'c', 2)).toEqual({ state: 'queued', position: 1 });
        expect(await enter('k', 'e', 2)).toEqual({ state: 'queued', position: 3 });
        expect(await liveIds('k')).toEqual(['a', 'b']);
        expect(await inspect('k')).toMatchObject({ queued: 3, next: ['c', 'd', 'e'] });
        // One leave frees the one slot `a` holds.
        expect(await leave('k', 'a', 2)).toEqual(['c']);
        expect(await enter('k', 'c', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'e', 2)).toEqual({ state: 'queued', position: 2 });
      });

      it('admits queued runs first in, first out as slots free, returning them in order', async () => {
        for (const run of ['a', 'b']) expect(await enter('k', run, 2)).toEqual({ state: 'admitted' });
        for (const run of ['c', 'd', 'e']) await enter('k', run, 2);
        expect(await leave('k', 'b', 2)).toEqual(['c']);
        expect(await liveIds('k')).toEqual(['a', 'c']);
        expect(await inspect('k')).toMatchObject({ queued: 2, next: ['d', 'e'] });
        expect(await enter('k', 'e', 2)).toEqual({ state: 'queued', position: 2 });
        expect(await leave('k', 'a', 2)).toEqual(['d']);
        expect(await enter('k', 'e', 2)).toEqual({ state: 'queued', position: 1 });
        expect(await leave('k', 'c', 2)).toEqual(['e']);
        expect(await leave('k', 'd', 2)).toEqual([]);
        expect(await leave('k', 'e', 2)).toEqual([]);
        expect(await inspect('k')).toEqual({ key: 'k', live: [], queued: 0, next: [] });
      });

      it('admits as many queued runs as there are free slots under the limit given to leave, in order', async () => {
        expect(await enter('k', 'a', 1)).toEqual({ state: 'admitted' });
        for (const run of ['b', 'c', 'd', 'e']) await enter('k', run, 1);
        expect(await leave('k', 'a', 3)).toEqual(['b', 'c', 'd']);
        expect(await liveIds('k')).toEqual(['b', 'c', 'd']);
        expect(await inspect('k')).toMatchObject({ queued: 1, next: ['e'] });
      });

      it('never lets a newcomer overtake a queued run, even with a slot free under its limit', async () => {
        expect(await enter('k', 'a', 1)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'b', 1)).toEqual({ state: 'queued', position: 1 });
        // One run holds a slot of 2, but `b` waits: `c` queues behind it.
        expect(await enter('k', 'c', 2)).toEqual({ state: 'queued', position: 2 });
        expect(await liveIds('k')).toEqual(['a']);
        expect(await leave('k', 'a', 2)).toEqual(['b', 'c']);
        expect(await enter('k', 'd', 2)).toEqual({ state: 'queued', position: 1 });
      });

      it('admits nothing more when a run leaves twice, or when an unknown run leaves', async () => {
        expect(await enter('k', 'a', 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'b', 2)).toEqual({ state: 'admitted' });
        for (const run of ['c', 'd']) await enter('k', run, 2);
        expect(await leave('k', 'a', 2)).toEqual(['c']);
        expect(await leave('k', 'a', 2)).toEqual([]);
        expect(await leave('k', 'nobody', 2)).toEqual([]);
        expect(await leave('unknown-key', 'a', 2)).toEqual([]);
        expect(await liveIds('k')).toEqual(['b', 'c']);
        expect(await inspect('k')).toMatchObject({ queued: 1, next: ['d'] });
      });

      it('lets a queued run leave: its place goes, those behind move up, and it is never admitted', async () => {
        expect(await enter('k', 'a')).toEqual({ state: 'admitted' });
        for (const run of ['b', 'c', 'd']) await enter('k', run);
        expect(await leave('k', 'c')).toEqual([]);
        expect(await leave('k', 'c')).toEqual([]);
        expect(await liveIds('k')).toEqual(['a']);
        expect(await inspect('k')).toMatchObject({ queued: 2, next: ['b', 'd'] });
        expect(await enter('k', 'd')).toEqual({ state: 'queued', position: 2 });
        expect(await leave('k', 'a')).toEqual(['b']);
        expect(await leave('k', 'b')).toEqual(['d']);
        expect(await leave('k', 'd')).toEqual([]);
        expect(await inspect('k')).toEqual({ key: 'k', live: [], queued: 0, next: [] });
        // Leaving the only queued run of a full key frees its place in the queue.
        await enter('k', 'x', 1, 1);
        expect(await enter('k', 'y', 1, 1)).toEqual({ state: 'queued', position: 1 });
        expect(await enter('k', 'z', 1, 1)).toEqual({ state: 'full', queued: 1 });
        expect(await leave('k', 'y')).toEqual([]);
        expect(await enter('k', 'z', 1, 1)).toEqual({ state: 'queued', position: 1 });
      });

      it('answers `full` when the queue holds maxQueued runs, storing nothing', async () => {
        expect(await enter('k', 'a', 1, 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'b', 1, 2)).toEqual({ state: 'queued', position: 1 });
        expect(await enter('k', 'c', 1, 2)).toEqual({ state: 'queued', position: 2 });
        expect(await enter('k', 'd', 1, 2)).toEqual({ state: 'full', queued: 2 });
        expect(await enter('k', 'd', 1, 2)).toEqual({ state: 'full', queued: 2 });
        // Runs already in are answered as such, full queue or not.
        expect(await enter('k', 'a', 1, 2)).toEqual({ state: 'admitted' });
        expect(await enter('k', 'c', 1, 2)).toEqual({ state: 'queued', position: 2 });
        expect(await liveIds('k')).toEqual(['a']);
        expect(await inspect('k')).toMatchObject({ queued: 2, next: ['b', 'c'] });
        // `d` was not stored: its leave changes nothing, and it is never admitted.
        expect(await leave('k', 'd')).toEqual([]);
        expect(await leave('k', 'a')).toEqual(['b']);
        expect(await enter('k', 'd', 1, 2)).toEqual({ state: 'queued', position: 2 });
        expect(await leave('k', 'b')).toEqual(['c']);
        expect(await leave('k', 'c')).toEqual(['d']);
        // A larger maxQueued lets more wait.
        expect(await enter('k', 'e', 1, 1)).toEqual({ state: 'queued', position: 1 });
        expect(await enter('k', 'f', 1, 1)).toEqual({ state: 'full', queued: 1 });
        expect(await enter('k', 'f', 1, 2)).toEqual({ state: 'queued', position: 2 });
      });

      it('is atomic: of 20 concurrent enters, exactly `limit` are admitted, maxQueued queued in distinct places, the rest full', async () => {
        const runs = Array.from({ length: 20 }, (_, i) => `run-${i}`);
        const entries = await Promise.all(runs.map((run) => enter('k', run, 3, 10)));
        const admitted = runs.filter((_, i) => entries[i].state === 'admitted');
        const queued = runs
          .map((run, i) => ({ run, entry: entries[i] }))
          .flatMap(({ run, entry }) => (entry.state === 'queued' ? [{ run, position: entry.position }] : []))
          .sort((a, b) => a.position - b.position);
        expect(admitted).toHaveLength(3);
        expect(queued.map((q) => q.position)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
        expect(entries.filter((e) => e.state === 'full')).toEqual(
          Array.from({ length: 7 }, () => ({ state: 'full', queued: 10 })),
        );
        expect(await liveIds('k')).toEqual([...admitted].sort());
        expect(await inspect('k')).toMatchObject({ queued: 10, next: queued.map((q) => q.run) });
        // Concurrent leaves of the three admit the first three queued, each reply in queue order.
        const replies = await Promise.all(admitted.map((run) => leave('k', run, 3)));
        expect(replies.flat().sort()).toEqual(
          queued
            .slice(0, 3)
            .map((q) => q.run)
            .sort(),
        );
        for (const reply of replies) {
          const places = reply.map((run) => queued.findIndex((q) => q.run === run));
          expect(places).toEqual([...places].sort((a, b) => a - b));
        }
        expect(await liveIds('k')).toEqual(
          queued
            .slice(0, 3)
            .map((q) => q.run)
            .sort(),
        );
        expect(await inspect('k')).toMatchObject({ queued: 7, next: queued.slice(3).map((q) => q.run) });
      });

      it('follows the contract through a long random interleaving of enters and leaves (never more than `limit` live)', async () => {
        const random = seeded(20_240_601);
        const limit = 3;
        const maxQueued = 4;
        const model = new ConcurrencyModel();
        const pool = Array.from({ length: 10 }, (_, i) => `run-${i}`);
        for (let step = 0; step < 250; step++) {
          const run = pool[Math.floor(random() * pool.length)];
          if (random() < 0.55) {
            const expected = model.enter(run, limit, maxQueued);
            expect({ step, op: 'enter', run, reply: await enter('k', run, limit, maxQueued) }).toEqual({
              step,
              op: 'enter',
              run,
              reply: expected,
            });
          } else {
            const expected = model.leave(run, limit);
            expect({ step, op: 'leave', run, reply: await leave('k', run, limit) }).toEqual({
              step,
              op: 'leave',
              run,
              reply: expected,
            });
          }
          const view = await inspect('k', 10);
          expect(view.live.length).toBeLessThanOrEqual(limit);
          expect({ step, live: view.live.map((l) => l.runId).sort(), next: view.next, queued: view.queued }).toEqual({
            step,
            live: [...model.live].sort(),
            next: model.queue,
            queued: model.queue.length,
          });
        }
      });

      it('admits every run exactly once and never more than `limit` at a time under concurrent churn', async () => {
        const random = seeded(7);
        const limit = 3;
        const runs = Array.from({ length: 40 }, (_, i) => `run-${i}`);
        const entries = await Promise.all(runs.map((run) => enter('k', run, limit, 100)));
        const admitted = runs.filter((_, i) => entries[i].state === 'admitted');
        expect(admitted).toHaveLength(limit);
        expect(entries.filter((e) => e.state === 'queued')).toHaveLength(runs.length - limit);
        const live = new Set(admitted);
        const everAdmitted = [...admitted];
        while (live.size > 0) {
          // Some of the live runs leave at once (and a few leave again), concurrently.
          const leaving = [...live].filter(() => random() < 0.7);
          if (leaving.length === 0) leaving.push([...live][0]);
          const again = leaving.filter(() => random() < 0.3);
          const replies = await Promise.all([...leaving, ...again].map((run) => leave('k', run, limit)));
          for (const run of leaving) live.delete(run);
          for (const run of replies.flat()) {
            expect(live.has(run)).toBe(false);
            live.add(run);
            everAdmitted.push(run);
          }
          const view = await inspect('k');
          expect(view.live.length).toBeLessThanOrEqual(limit);
          expect(view.live.map((l) => l.runId).sort()).toEqual([...live].sort());
        }
        expect(everAdmitted.sort()).toEqual([...runs].sort());
        expect(await inspect('k')).toEqual({ key: 'k', live: [], queued: 0, next: [] });
      });
    });

    describe('concurrency: inspect', () => {
      it('shows the live runs with when each was admitted, the queue length and its first `peek` ids', async () => {
        const t0 = await store.now();
        await enter('k', 'a', 2);
        const t1 = await store.now();
        await pass(2);
        await enter('k', 'b', 2);
        const t2 = await store.now();
        for (const run of ['c', 'd', 'e']) await enter('k', run, 2);
        const view = await inspect('k', 2);
        expect(view).toEqual({
          key: 'k',
          live: expect.any(Array),
          queued: 3,
          next: ['c', 'd'],
        });
        const since = Object.fromEntries(view.live.map((l) => [l.runId, l.since]));
        expect(Object.keys(since).sort()).toEqual(['a', 'b']);
        expect(since.a).toBeGreaterThanOrEqual(t0);
        expect(since.a).toBeLessThanOrEqual(t1);
        expect(since.b).toBeGreaterThan(t1);
        expect(since.b).toBeLessThanOrEqual(t2);
        expect((await inspect('k', 0)).next).toEqual([]);
        expect((await inspect('k', 10)).next).toEqual(['c', 'd', 'e']);
        // A run admitted from the queue holds its slot since the leave that admitted it.
        await pass(2);
        const before = await store.now();
        expect(await leave('k', 'a', 2)).toEqual(['c']);
        const after = await store.now();
        const moved = (await inspect('k', 10)).live.find((l) => l.runId === 'c');
        expect(moved!.since).toBeGreaterThanOrEqual(before);
        expect(moved!.since).toBeLessThanOrEqual(after);
        expect((await inspect('k', 10)).live.find((l) => l.runId === 'b')!.since).toBe(since.b);
      });

      it('shows an unknown key as empty', async () => {
        expect(await inspect('nothing-here', 5)).toEqual({ key: 'nothing-here', live: [], queued: 0, next: [] });
      });
    });

    describe('concurrency: keys and prune', () => {
      it("lists the reactor's keys, oldest activity first, at most `limit`", async () => {
        expect(await store.keys(reactor, 10)).toEqual([]);
        for (const key of ['k1', 'k2', 'k3']) {
          await enter(key, `run-${key}`);
          await pass(1);
        }
        expect(await store.keys(reactor, 10)).toEqual(['k1', 'k2', 'k3']);
        expect(await store.keys(reactor, 2)).toEqual(['k1', 'k2']);
        // Entering again (even idempotently, even queued) is activity: the key moves to the end.
        await enter('k1', 'run-k1');
        await pass(1);
        expect(await store.keys(reactor, 10)).toEqual(['k2', 'k3', 'k1']);
        await enter('k2', 'another');
        await pass(1);
        expect(await store.keys(reactor, 10)).toEqual(['k3', 'k1', 'k2']);
        // So is a leave: a key lately held is listed by when it was last left.
        expect(await leave('k3', 'run-k3')).toEqual([]);
        expect(await store.keys(reactor, 10)).toEqual(['k1', 'k2', 'k3']);
        // Another reactor's keys are its own.
        await store.enter(`${reactor}-other`, 'k9', 'x', 1, 1);
        expect(await store.keys(reactor, 10)).toEqual(['k1', 'k2', 'k3']);
        expect(await store.keys(`${reactor}-other`, 10)).toEqual(['k9']);
        expect(await store.keys(`${reactor}-none`, 10)).toEqual([]);
      });

      it('takes keys verbatim: braces, colons, spaces and any text are keys like others', async () => {
        const keys = ['{tenant}:a', 'a}:{b', 'with space', 'ключ/é', '*'];
        for (const key of keys) {
          expect(await enter(key, 'same-run')).toEqual({ state: 'admitted' });
          await pass(1);
        }
        expect(await store.keys(reactor, 10)).toEqual(keys);
        for (const key of keys) expect(await liveIds(key)).toEqual(['same-run']);
        expect(await enter('{tenant}:a', 'other')).toEqual({ state: 'queued', position: 1 });
        expect(await enter('*', 'other')).toEqual({ state: 'queued', position: 1 });
        expect(await leave('{tenant}:a', 'same-run')).toEqual(['other']);
        expect(await inspect('*')).toMatchObject({ key: '*', queued: 1, next: ['other'] });
        // Reactor names too: one with braces and colons is a reactor of its own.
        const braced = `{${reactor}}:a}`;
        expect(await store.enter(braced, '{tenant}:a', 'third', 1, 10)).toEqual({ state: 'admitted' });
        expect(await store.keys(braced, 10)).toEqual(['{tenant}:a']);
        expect(await liveIds('{tenant}:a')).toEqual(['other']);
      });

      it('prunes a key only when it holds no run and its last activity is older than idleMs', async () => {
        expect(await store.prune(reactor, 'k', 0)).toBe(false);
        await enter('k', 'a');
        await enter('k', 'b');
        await pass(short());
        // Idle long enough, but it holds runs.
        expect(await store.prune(reactor, 'k', 0)).toBe(false);
        expect(await leave('k', 'a')).toEqual(['b']);
        await pass(short());
        expect(await store.prune(reactor, 'k', 0)).toBe(false);
        // Empty now, but the leave just now was activity.
        expect(await leave('k', 'b')).toEqual([]);
        expect(await store.prune(reactor, 'k', short())).toBe(false);
        expect(await store.keys(reactor, 10)).toEqual(['k']);
        await pass(short());
        expect(await store.prune(reactor, 'k', LONG)).toBe(false);
        expect(await store.prune(reactor, 'k', short())).toBe(true);
        expect(await store.keys(reactor, 10)).toEqual([]);
        expect(await store.prune(reactor, 'k', 0)).toBe(false);
        // A pruned key is listed again on its next enter.
        expect(await enter('k', 'c')).toEqual({ state: 'admitted' });
        expect(await store.keys(reactor, 10)).toEqual(['k']);
      });

      it('lists the key whatever enter and leave answer (full, unknown run), as activity', async () => {
        expect(await enter('k1', 'a', 1, 1)).toEqual({ state: 'admitted' });
        expect(await enter('k1', 'b', 1, 1)).toEqual({ state: 'queued', position: 1 });
        await pass(1);
        expect(await enter('k2', 'a')).toEqual({ state: 'admitted' });
        await pass(1);
        // A full queue stores no run, but the call is activity of its key.
        expect(await enter('k1', 'c', 1, 1)).toEqual({ state: 'full', queued: 1 });
        expect(await store.keys(reactor, 10)).toEqual(['k2', 'k1']);
        await pass(1);
        // So is a leave of a run that is not there, even on a key that never held one.
        expect(await leave('k2', 'nobody')).toEqual([]);
        expect(await store.keys(reactor, 10)).toEqual(['k1', 'k2']);
        await pass(1);
        expect(await leave('never-held', 'nobody')).toEqual([]);
        expect(await store.keys(reactor, 10)).toEqual(['k1', 'k2', 'never-held']);
        // Such a key holds nothing: it is pruned once idle.
        await pass(short());
        expect(await store.prune(reactor, 'never-held', short())).toBe(true);
        expect(await store.keys(reactor, 10)).toEqual(['k1', 'k2']);
      });

      it('lists every reactor whose runs entered a key, whatever enter answered, and never forgets it', async () => {
        const other = `${reactor}-other`;
        const never = `${reactor}-never`;
        expect(await store.reactors()).not.toContain(reactor);
        expect(await enter('k', 'a', 1, 1)).toEqual({ state: 'admitted' });
        expect(await store.reactors()).toContain(reactor);
        // Listed once, however many runs and keys enter.
        await enter('k', 'b', 1, 1);
        await enter('k2', 'c');
        expect((await store.reactors()).filter((r) => r === reactor)).toEqual([reactor]);
        // An enter answered `full` lists its reactor too.
        await store.enter(other, 'k', 'x', 1, 1);
        await store.enter(other, 'k', 'y', 1, 1);
        expect(await store.enter(other, 'k', 'z', 1, 1)).toEqual({ state: 'full', queued: 1 });
        // Leaving, throttling and gathering list no reactor.
        await store.leave(never, 'k', 'a', 1);
        await store.reserveStart(never, 'k', 1, LONG);
        await store.gather(never, 'k', 'g', 'item', batch(LONG));
        // Every run gone and every key pruned: still listed.
        expect(await leave('k', 'a')).toEqual(['b']);
        expect(await leave('k', 'b')).toEqual([]);
        expect(await leave('k2', 'c')).toEqual([]);
        await pass(short());
        expect(await store.prune(reactor, 'k', short())).toBe(true);
        expect(await store.prune(reactor, 'k2', short())).toBe(true);
        expect(await store.keys(reactor, 10)).toEqual([]);
        const listed = await store.reactors();
        expect(listed).toEqual(expect.arrayContaining([reactor, other]));
        expect(listed).not.toContain(never);
        expect(listed).toEqual([...listed].sort());
      });

      it('prunes one key of one reactor only', async () => {
        await enter('k1', 'a');
        await enter('k2', 'a');
        await store.enter(`${reactor}-other`, 'k1', 'a', 1, 1);
        for (const run of [
          () => leave('k1', 'a'),
          () => leave('k2', 'a'),
          () => store.leave(`${reactor}-other`, 'k1', 'a', 1),
        ])
          await run();
        await pass(short());
        expect(await store.prune(reactor, 'k1', short())).toBe(true);
        expect(await store.keys(reactor, 10)).toEqual(['k2']);
        expect(await store.keys(`${reactor}-other`, 10)).toEqual(['k1']);
      });
    });

    describe('throttle: reserveStart', () => {
      it('lets `limit` starts go now in a window, then gives the starts of the next windows (aligned on the epoch)', async () => {
        await roomInWindow(HOUR, 10_000);
        const before = await store.now();
        const replies = [];
        for (let i = 0; i < 8; i++) replies.push(await reserve('k', 3, HOUR));
        const after = await store.now();
        const window = Math.floor(before / HOUR);
        for (const { now } of replies) {
          expect(now).toBeGreaterThanOrEqual(before);
          expect(now).toBeLessThanOrEqual(after);
        }
        expect(replies.map((r) => r.startAt)).toEqual([
          replies[0].now,
          replies[1].now,
          replies[2].now,
          (window + 1) * HOUR,
          (window + 1) * HOUR,
          (window + 1) * HOUR,
          (window + 2) * HOUR,
          (window + 2) * HOUR,
        ]);
        // Another key, another reactor: their own windows.
        expect(await reserve('k2', 3, HOUR)).toEqual({ startAt: expect.any(Number), now: expect.any(Number) });
        const other = await store.reserveStart(`${reactor}-other`, 'k', 3, HOUR);
        expect(other.startAt).toBe(other.now);
        // Aligned on the epoch, whatever the period.
        const odd = 7_919;
        await roomInWindow(odd, 1_000);
        const first = await reserve('odd', 1, odd);
        const second = await reserve('odd', 1, odd);
        expect(first.startAt).toBe(first.now);
        expect(second.startAt).toBe((Math.floor(first.now / odd) + 1) * odd);
      });

      it('spreads a backlog over successive windows, exactly `limit` in each, also when reserved concurrently', async () => {
        await roomInWindow(HOUR, 10_000);
        const limit = 4;
        const serial = [];
        for (let i = 0; i < 26; i++) serial.push(await reserve('serial', limit, HOUR));
        const window = Math.floor(serial[0].now / HOUR);
        serial.forEach((reply, i) => {
          const expected = i < limit ? reply.now : (window + Math.floor(i / limit)) * HOUR;
          expect({ i, startAt: reply.startAt }).toEqual({ i, startAt: expected });
        });
        const concurrent = await Promise.all(Array.from({ length: 26 }, () => reserve('concurrent', limit, HOUR)));
        const perWindow = new Map<number, number>();
        for (const { startAt, now } of concurrent) {
          const w = Math.floor(startAt / HOUR);
          perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
          if (w === window) expect(startAt).toBe(now);
          else expect(startAt).toBe(w * HOUR);
        }
        expect([...perWindow].sort(([a], [b]) => a - b)).toEqual(
          Array.from({ length: 7 }, (_, i) => [window + i, i < 6 ? limit : 2]),
        );
      });

      it('keeps the backlog however long: the 200th start of a limit of 1 waits 199 windows', async () => {
        await roomInWindow(HOUR, 10_000);
        const replies = await Promise.all(Array.from({ length: 200 }, () => reserve('k', 1, HOUR)));
        const window = Math.floor(replies[0].now / HOUR);
        expect(replies.map((r) => Math.floor(r.startAt / HOUR)).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 200 }, (_, i) => window + i),
        );
        expect((await reserve('k', 1, HOUR)).startAt).toBe((window + 200) * HOUR);
      });

      it('lets starts go at once again once the reserved windows are past, and fills a reserved window from its start', async () => {
        const period = Math.max(short(), 100);
        await roomInWindow(period, period / 2);
        const a = await reserve('k', 2, period);
        const b = await reserve('k', 2, period);
        const c = await reserve('k', 2, period);
        const w0 = Math.floor(a.now / period);
        expect([a.startAt, b.startAt, c.startAt]).toEqual([a.now, b.now, (w0 + 1) * period]);
        // In the window `c` reserved, its second place goes at once.
        await reach(c.startAt);
        const d = await reserve('k', 2, period);
        expect(d.startAt).toBe(d.now);
        if (Math.floor(d.now / period) === w0 + 1) {
          // That window is full now: the next start waits for the one after.
          expect((await reserve('k', 2, period)).startAt).toBe((w0 + 2) * period);
        }
        // Once the reserved windows are past, a start goes at once and counts in its own window.
        await pass(3 * period);
        await roomInWindow(period, period / 2);
        const e = await reserve('k', 2, period);
        const f = await reserve('k', 2, period);
        const g = await reserve('k', 2, period);
        expect([e.startAt, f.startAt, g.startAt]).toEqual([e.now, f.now, (Math.floor(e.now / period) + 1) * period]);
      });
    });

    describe('gather: debounce (last)', () => {
      it('opens for the first start, keeps the last item, and pushes the due time periodMs after each start', async () => {
        const period = short();
        const first = await gather('k', 'run-1', 'item-1', debounce(period));
        expect(first).toEqual({
          runId: 'run-1',
          opened: true,
          full: false,
          dueAt: first.now + period,
          size: 1,
          now: first.now,
        });
        await pass(2);
        const second = await gather('k', 'run-2', 'item-2', debounce(period));
        expect(second).toEqual({
          runId: 'run-1',
          opened: false,
          full: false,
          dueAt: second.now + period,
          size: 1,
          now: second.now,
        });
        expect(second.now).toBeGreaterThan(first.now);
        await pass(2);
        const third = await gather('k', 'run-3', 'item-3', debounce(period));
        expect(third).toMatchObject({ runId: 'run-1', opened: false, dueAt: third.now + period, size: 1 });
        // Not due yet: ask again at the last due time.
        const early = await take('k', 'run-1');
        expect(early).toEqual({ due: false, dueAt: third.dueAt, now: expect.any(Number) });
        if (early?.due !== false) throw new Error('unreachable');
        expect(early.now).toBeLessThan(third.dueAt);
        expect(early.now).toBeGreaterThanOrEqual(third.now);
        // The runs that joined have no gather of their own.
        expect(await take('k', 'run-2')).toBeUndefined();
        expect(await take('k', 'run-3')).toBeUndefined();
        await reach(third.dueAt);
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['item-3'] });
      });

      it('is due at most maxWaitMs after it opened, however many starts follow', async () => {
        const period = short();
        const maxWait = 2 * period;
        const spec = debounce(period, maxWait);
        const first = await gather('k', 'run-1', 'item-0', spec);
        expect(first.dueAt).toBe(first.now + period);
        const cap = first.now + maxWait;
        let capped = false;
        for (let i = 1; i < 20 && !capped; i++) {
          await pass(Math.floor(period / 2));
          const reply = await gather('k', `run-x${i}`, `item-${i}`, spec);
          expect(reply).toEqual({
            runId: 'run-1',
            opened: false,
            full: false,
            dueAt: Math.min(reply.now + period, cap),
            size: 1,
            now: reply.now,
          });
          capped = reply.dueAt === cap;
        }
        expect(capped).toBe(true);
        await reach(cap);
        // Due: a start now still joins (nobody took it yet), and the gather stays due at its cap.
        const late = await gather('k', 'run-late', 'item-late', spec);
        expect(late).toMatchObject({ runId: 'run-1', opened: false, dueAt: cap, size: 1 });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['item-late'] });
      });

      it('is due at the earlier of periodMs after the start and maxWaitMs after it opened', async () => {
        const reply = await gather('k', 'run-1', 'a', debounce(LONG, 1_000));
        expect(reply.dueAt).toBe(reply.now + 1_000);
        const other = await gather('k2', 'run-2', 'b', debounce(1_000, LONG));
        expect(other.dueAt).toBe(other.now + 1_000);
      });
    });

    describe('gather: batch (all)', () => {
      it('keeps every item in order and is due maxWaitMs after it opened, whatever starts follow', async () => {
        const spec = batch(LONG, 10);
        const first = await gather('k', 'run-1', 'a', spec);
        expect(first).toEqual({
          runId: 'run-1',
          opened: true,
          full: false,
          dueAt: first.now + LONG,
          size: 1,
          now: first.now,
        });
        for (const [i, item] of ['b', 'c', 'd'].entries()) {
          await pass(1);
          const reply = await gather('k', `run-${i + 2}`, item, spec);
          expect(reply).toEqual({
            runId: 'run-1',
            opened: false,
            full: false,
            dueAt: first.now + LONG,
            size: i + 2,
            now: reply.now,
          });
        }
        expect(await take('k', 'run-1')).toEqual({ due: false, dueAt: first.now + LONG, now: expect.any(Number) });
        expect(await take('k', 'run-2')).toBeUndefined();
        // `now` is the store's time of the call.
        const before = await store.now();
        const reply = await gather('k', 'run-9', 'e', spec);
        const after = await store.now();
        expect(reply.now).toBeGreaterThanOrEqual(before);
        expect(reply.now).toBeLessThanOrEqual(after);
      });

      it('closes when it holds maxSize items: due at once, and the next start opens another gather', async () => {
        const spec = batch(LONG, 3);
        await gather('k', 'run-1', 'a', spec);
        await gather('k', 'run-2', 'b', spec);
        const third = await gather('k', 'run-3', 'c', spec);
        expect(third).toEqual({ runId: 'run-1', opened: false, full: true, dueAt: third.now, size: 3, now: third.now });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a', 'b', 'c'] });
        const fourth = await gather('k', 'run-4', 'd', spec);
        expect(fourth).toEqual({
          runId: 'run-4',
          opened: true,
          full: false,
          dueAt: fourth.now + LONG,
          size: 1,
          now: fourth.now,
        });
        expect(await take('k', 'run-4')).toMatchObject({ due: false });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a', 'b', 'c'] });
      });

      it('a full batch is closed before it is taken: the next start opens another', async () => {
        const spec = batch(LONG, 2);
        await gather('k', 'run-1', 'a', spec);
        expect(await gather('k', 'run-2', 'b', spec)).toMatchObject({ runId: 'run-1', full: true, size: 2 });
        expect(await gather('k', 'run-3', 'c', spec)).toMatchObject({
          runId: 'run-3',
          opened: true,
          full: false,
          size: 1,
        });
        expect(await gather('k', 'run-4', 'd', spec)).toMatchObject({
          runId: 'run-3',
          opened: false,
          full: true,
          size: 2,
        });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a', 'b'] });
        expect(await take('k', 'run-3')).toEqual({ due: true, items: ['c', 'd'] });
      });

      it('with maxSize 1, every start is a gather of its own, full at once', async () => {
        const spec = batch(LONG, 1);
        for (const run of ['run-1', 'run-2']) {
          const reply = await gather('k', run, `item-${run}`, spec);
          expect(reply).toEqual({ runId: run, opened: true, full: true, dueAt: reply.now, size: 1, now: reply.now });
          expect(await take('k', run)).toEqual({ due: true, items: [`item-${run}`] });
        }
      });

      it('without maxSize never fills; due at maxWaitMs, it still takes starts until it is taken', async () => {
        const spec = batch(short());
        const first = await gather('k', 'run-1', 'item-0', spec);
        for (let i = 1; i < 30; i++) {
          expect(await gather('k', `run-x${i}`, `item-${i}`, spec)).toMatchObject({
            runId: 'run-1',
            opened: false,
            full: false,
            dueAt: first.now + short(),
            size: i + 1,
          });
        }
        await reach(first.dueAt);
        expect(await gather('k', 'run-late', 'item-30', spec)).toMatchObject({
          runId: 'run-1',
          opened: false,
          dueAt: first.dueAt,
          size: 31,
        });
        expect(await take('k', 'run-1')).toEqual({
          due: true,
          items: Array.from({ length: 31 }, (_, i) => `item-${i}`),
        });
      });

      it('is atomic: concurrent starts fill gathers of maxSize, each item in exactly one', async () => {
        const spec = batch(LONG, 5);
        const items = Array.from({ length: 23 }, (_, i) => `item-${i}`);
        const replies = await Promise.all(items.map((item, i) => gather('k', `run-${i}`, item, spec)));
        const byRun = new Map<string, typeof replies>();
        for (const reply of replies) byRun.set(reply.runId, [...(byRun.get(reply.runId) ?? []), reply]);
        expect([...byRun.values()].map((r) => r.length).sort((a, b) => a - b)).toEqual([3, 5, 5, 5, 5]);
        for (const group of byRun.values()) {
          expect(group.filter((r) => r.opened)).toHaveLength(1);
          expect(group.find((r) => r.opened)!.size).toBe(1);
          expect(group.map((r) => r.size).sort()).toEqual(Array.from({ length: group.length }, (_, i) => i + 1));
          expect(group.filter((r) => r.full).map((r) => r.size)).toEqual(group.length === 5 ? [5] : []);
        }
        const taken = await Promise.all([...byRun.keys()].map((runId) => take('k', runId)));
        const full = taken.filter((t) => t?.due);
        expect(full).toHaveLength(4);
        expect(taken.filter((t) => t && !t.due)).toHaveLength(1);
        // Every item of the full gathers, once; the open one holds the rest.
        const inFull = full.flatMap((t) => (t!.due ? t!.items : []));
        expect(new Set(inFull).size).toBe(20);
        // Each gather keeps its items in the order they joined (by the size each start was answered).
        for (const [runId, group] of byRun) {
          const reply = await take('k', runId);
          if (!reply?.due) continue;
          const order = [...group].sort((a, b) => a.size - b.size).map((r) => items[replies.indexOf(r)]);
          expect(reply.items).toEqual(order);
        }
      });
    });

    describe('gather: take', () => {
      it('answers undefined when no gather of that run is stored', async () => {
        expect(await take('k', 'nobody')).toBeUndefined();
        await gather('k', 'run-1', 'a', batch(LONG));
        expect(await take('other-key', 'run-1')).toBeUndefined();
        expect(await store.take(`${reactor}-other`, 'k', 'run-1')).toBeUndefined();
        expect(await take('k', 'run-1')).toMatchObject({ due: false });
      });

      it('not due: the due time and the store time; due: the items, the same each time; then later starts open another', async () => {
        const spec = batch(short());
        const first = await gather('k', 'run-1', 'a', spec);
        await gather('k', 'run-2', 'b', spec);
        const before = await store.now();
        const early = await take('k', 'run-1');
        const after = await store.now();
        expect(early).toEqual({ due: false, dueAt: first.now + short(), now: expect.any(Number) });
        if (early?.due !== false) throw new Error('unreachable');
        expect(early.now).toBeGreaterThanOrEqual(before);
        expect(early.now).toBeLessThanOrEqual(after);
        // Asking early closed nothing: starts still join.
        expect(await gather('k', 'run-3', 'c', spec)).toMatchObject({ runId: 'run-1', opened: false, size: 3 });
        await reach(early.dueAt);
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a', 'b', 'c'] });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a', 'b', 'c'] });
        // Taken: closed, so the next start opens a new gather of its own run.
        const next = await gather('k', 'run-4', 'd', spec);
        expect(next).toEqual({
          runId: 'run-4',
          opened: true,
          full: false,
          dueAt: next.now + short(),
          size: 1,
          now: next.now,
        });
        expect(await gather('k', 'run-5', 'e', spec)).toMatchObject({ runId: 'run-4', opened: false, size: 2 });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a', 'b', 'c'] });
        expect(await take('k', 'run-4')).toMatchObject({ due: false, dueAt: next.dueAt });
      });

      it('closes a debounce it takes: the next start opens a new one', async () => {
        const spec = debounce(short());
        const first = await gather('k', 'run-1', 'a', spec);
        await reach(first.dueAt);
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a'] });
        const next = await gather('k', 'run-2', 'b', spec);
        expect(next).toMatchObject({ runId: 'run-2', opened: true, dueAt: next.now + short() });
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a'] });
      });

      it('keeps gathers of keys and reactors apart', async () => {
        const spec = batch(LONG, 2);
        expect(await gather('k1', 'run-1', 'a', spec)).toMatchObject({ runId: 'run-1', opened: true });
        expect(await gather('k2', 'run-2', 'b', spec)).toMatchObject({ runId: 'run-2', opened: true });
        expect(await store.gather(`${reactor}-other`, 'k1', 'run-3', 'c', spec)).toMatchObject({
          runId: 'run-3',
          opened: true,
        });
        expect(await gather('k1', 'run-4', 'd', spec)).toMatchObject({ runId: 'run-1', full: true });
        expect(await take('k1', 'run-1')).toEqual({ due: true, items: ['a', 'd'] });
        expect(await take('k2', 'run-2')).toMatchObject({ due: false });
        expect(await store.take(`${reactor}-other`, 'k1', 'run-3')).toMatchObject({ due: false });
      });
    });

    describe('gather: ttl', () => {
      it('forgets a taken gather ttlMs after it opened', async () => {
        const ttl = short();
        const first = await gather('k', 'run-1', 'a', batch(1, undefined, ttl));
        await reach(first.dueAt);
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a'] });
        await reach(first.now + ttl + 1);
        expect(await take('k', 'run-1')).toBeUndefined();
      });

      it('forgets an open gather nobody took ttlMs after it opened, later starts not extending it: the next start opens another', async () => {
        const ttl = 2 * short();
        const spec = debounce(1, ttl, ttl);
        const first = await gather('k', 'run-1', 'a', spec);
        await pass(short());
        expect(await gather('k', 'run-2', 'b', spec)).toMatchObject({ runId: 'run-1', opened: false });
        await reach(first.now + ttl + 1);
        expect(await take('k', 'run-1')).toBeUndefined();
        const next = await gather('k', 'run-3', 'c', spec);
        expect(next).toMatchObject({ runId: 'run-3', opened: true, size: 1 });
        await reach(next.dueAt);
        expect(await take('k', 'run-3')).toEqual({ due: true, items: ['c'] });
      });

      it('forgets a full batch nobody took, ttlMs after it opened', async () => {
        const ttl = short();
        const first = await gather('k', 'run-1', 'a', batch(LONG, 1, ttl));
        expect(first.full).toBe(true);
        expect(await take('k', 'run-1')).toEqual({ due: true, items: ['a'] });
        await reach(first.now + ttl + 1);
        expect(await take('k', 'run-1')).toBeUndefined();
      });
    });

    describe('arguments', () => {
      it('refuses limits, sizes and times that are not positive integers, storing nothing', async () => {
        const refused: Array<() => Promise<unknown>> = [
          () => enter('k', 'a', 0, 10),
          () => enter('k', 'a', 1.5, 10),
          () => enter('k', 'a', -1, 10),
          () => enter('k', 'a', 1, 0),
          () => enter('k', 'a', 1, 2.5),
          () => enter('k', 'a', Number.NaN, 10),
          () => leave('k', 'a', 0),
          () => leave('k', 'a', 0.5),
          () => store.keys(reactor, 0),
          () => store.keys(reactor, 1.5),
          () => store.inspect(reactor, 'k', -1),
          () => store.inspect(reactor, 'k', 1.5),
          () => store.prune(reactor, 'k', -1),
          () => store.prune(reactor, 'k', 0.5),
          () => reserve('k', 0, 1000),
          () => reserve('k', 1.5, 1000),
          () => reserve('k', 1, 0),
          () => reserve('k', 1, 10.5),
          () => gather('k', 'run-1', 'x', { ...debounce(1000), periodMs: 0 }),
          () => gather('k', 'run-1', 'x', { ...debounce(1000), periodMs: 1.5 }),
          () => gather('k', 'run-1', 'x', { mode: 'last', maxWaitMs: 1000, ttlMs: 1000 }),
          () => gather('k', 'run-1', 'x', { ...batch(1000), maxWaitMs: 0 }),
          () => gather('k', 'run-1', 'x', { ...batch(1000), maxWaitMs: -5 }),
          () => gather('k', 'run-1', 'x', { ...batch(1000, 0) }),
          () => gather('k', 'run-1', 'x', { ...batch(1000, 2.5) }),
          () => gather('k', 'run-1', 'x', { ...batch(1000), ttlMs: 0 }),
          () => gather('k', 'run-1', 'x', { ...batch(1000), ttlMs: 1.5 }),
          () => gather('k', 'run-1', 'x', { ...batch(1000), mode: 'some' as GatherSpec['mode'] }),
        ];
        for (const [i, call] of refused.entries()) {
          await expect(
            Promise.resolve()
              .then(call)
              .then(() => i),
          ).rejects.toThrow(RangeError);
        }
        // None of them stored anything.
        expect(await inspect('k')).toEqual({ key: 'k', live: [], queued: 0, next: [] });
        expect(await store.keys(reactor, 10)).toEqual([]);
        expect(await store.reactors()).not.toContain(reactor);
        expect(await take('k', 'run-1')).toBeUndefined();
        const reply = await reserve('k', 1, HOUR);
        expect(reply.startAt).toBe(reply.now);
      });
    });
  });
}

/** The concurrency contract, as plain data (the reference the random interleaving is checked against). */
class ConcurrencyModel {
  live: string[] = [];
  queue: string[] = [];

  enter(runId: string, limit: number, maxQueued: number): FlowEntry {
    if (this.live.includes(runId)) return { state: 'admitted' };
    const place = this.queue.indexOf(runId);
    if (place >= 0) return { state: 'queued', position: place + 1 };
    if (this.live.length < limit && this.queue.length === 0) {
      this.live.push(runId);
      return { state: 'admitted' };
    }
    if (this.queue.length >= maxQueued) return { state: 'full', queued: this.queue.length };
    this.queue.push(runId);
    return { state: 'queued', position: this.queue.length };
  }

  leave(runId: string, limit: number): string[] {
    if (this.live.includes(runId)) this.live = this.live.filter((id) => id !== runId);
    else if (this.queue.includes(runId)) this.queue = this.queue.filter((id) => id !== runId);
    else return [];
    const admitted: string[] = [];
    while (this.live.length < limit && this.queue.length > 0) {
      const next = this.queue.shift()!;
      this.live.push(next);
      admitted.push(next);
    }
    return admitted;
  }
}

/** A seeded pseudo-random generator in [0, 1) (mulberry32): the same interleaving on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
