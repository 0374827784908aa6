import type { CoordinationStore, RateWindow } from '../../lib/core/ports';
import { waitFor } from './adapter-harness';

/** A coordination store, and the means to let its time pass. */
export interface CoordinationHarness {
  store: CoordinationStore;
  /**
   * Move the store's time forward. Present for fake clocks; absent for real time, where the suite
   * uses real short TTLs ({@link shortMs}) and polls the store's time with a deadline.
   */
  advance?(ms: number): void;
  /** TTL, lease and poison pill the suite lets run out. Keep it short with real time. @default 200 */
  shortMs?: number;
  /** Remove everything this harness created. */
  cleanup(): Promise<void>;
}

/** Builds a fresh, isolated harness (called once per test). */
export type CoordinationFactory = () => CoordinationHarness | Promise<CoordinationHarness>;

const LONG = 60_000;
const MINUTE = 60_000;
const HOUR = 3_600_000;

/** The CoordinationStore contract (`lib/core/ports/coordination-store.port.ts`), for any adapter. */
export function describeCoordinationStoreConformance(name: string, factory: CoordinationFactory): void {
  describe(`CoordinationStore conformance: ${name}`, () => {
    let h: CoordinationHarness;
    let store: CoordinationStore;
    beforeEach(async () => {
      h = await factory();
      store = h.store;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const short = () => h.shortMs ?? 200;

    /**
     * Make more than `ms` pass on the store's clock since this call: advance a fake clock, or poll
     * the store's time (never a fixed sleep). An entry written before the call with a TTL of at
     * most `ms` has expired afterwards.
     */
    async function pass(ms: number): Promise<void> {
      if (h.advance) {
        h.advance(ms + 1);
        return;
      }
      const until = (await store.now()) + ms;
      await waitFor(async () => (await store.now()) > until, `${ms} ms of store time to pass`, ms + 5000);
    }

    /** Make sure at least `ms` are left in the current window of length `windowMs` (else wait for the next). */
    async function roomInWindow(windowMs: number, ms: number): Promise<void> {
      const left = windowMs - ((await store.now()) % windowMs);
      if (left < ms) await pass(left);
    }

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

    describe('locks', () => {
      it('are exclusive: another owner is refused with the holder and a retry within the TTL', async () => {
        const taken = await store.acquireLock('invoice:{42}', 'run-a', LONG);
        expect(taken).toEqual({ acquired: true, fence: expect.any(Number), count: 1 });
        const refused = await store.acquireLock('invoice:{42}', 'run-b', LONG);
        expect(refused).toEqual({ acquired: false, holder: 'run-a', retryAfterMs: expect.any(Number) });
        if (refused.acquired) throw new Error('unreachable');
        expect(refused.retryAfterMs).toBeGreaterThan(0);
        expect(refused.retryAfterMs).toBeLessThanOrEqual(LONG);
        // Another name is another lock.
        expect(await store.acquireLock('invoice:{43}', 'run-b', LONG)).toMatchObject({ acquired: true, count: 1 });
      });

      it('go to exactly one of 20 concurrent owners', async () => {
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.acquireLock('shared', `owner-${i}`, LONG)),
        );
        const winners = replies.flatMap((r, i) => (r.acquired ? [`owner-${i}`] : []));
        expect(winners).toHaveLength(1);
        for (const reply of replies) {
          if (!reply.acquired) expect(reply.holder).toBe(winners[0]);
        }
      });

      it('are re-entrant: the owner counts up under one fence and refreshes the TTL', async () => {
        const first = await store.acquireLock('k', 'run-a', short());
        const second = await store.acquireLock('k', 'run-a', LONG);
        const third = await store.acquireLock('k', 'run-a', LONG);
        if (!first.acquired) throw new Error('first take refused');
        expect(second).toEqual({ acquired: true, fence: first.fence, count: 2 });
        expect(third).toEqual({ acquired: true, fence: first.fence, count: 3 });
        await pass(short());
        // The re-entry pushed the TTL to LONG.
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: false, holder: 'run-a' });
      });

      it('are free only once released down to zero; a release after that is refused', async () => {
        const { fence } = await takeLock(store, 'k', 'run-a');
        await store.acquireLock('k', 'run-a', LONG);
        await store.acquireLock('k', 'run-a', LONG);
        expect(await store.releaseLock('k', 'run-a', fence)).toBe(true);
        expect(await store.releaseLock('k', 'run-a', fence)).toBe(true);
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: false, holder: 'run-a' });
        expect(await store.releaseLock('k', 'run-a', fence)).toBe(true);
        expect(await store.releaseLock('k', 'run-a', fence)).toBe(false);
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: true, count: 1 });
      });

      it('refuse extend and release with a wrong owner or a wrong fence, changing nothing', async () => {
        const { fence } = await takeLock(store, 'k', 'run-a', short());
        expect(await store.extendLock('k', 'run-b', fence, LONG)).toBe(false);
        expect(await store.extendLock('k', 'run-a', fence + 1, LONG)).toBe(false);
        expect(await store.releaseLock('k', 'run-b', fence)).toBe(false);
        expect(await store.releaseLock('k', 'run-a', fence + 1)).toBe(false);
        expect(await store.extendLock('other', 'run-a', fence, LONG)).toBe(false);
        // Still held once, with its short TTL: nothing was extended or counted down.
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: false, holder: 'run-a' });
        await pass(short());
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: true, count: 1 });
      });

      it('extend pushes the expiry past the first TTL for the holder', async () => {
        const { fence } = await takeLock(store, 'k', 'run-a', short());
        expect(await store.extendLock('k', 'run-a', fence, LONG)).toBe(true);
        await pass(short());
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: false, holder: 'run-a' });
        expect(await store.releaseLock('k', 'run-a', fence)).toBe(true);
      });

      it('expire after their TTL: another owner takes them and the old holder can neither extend nor release', async () => {
        const old = await takeLock(store, 'k', 'run-a', short());
        await pass(short());
        const next = await takeLock(store, 'k', 'run-b');
        expect(next.fence).toBeGreaterThan(old.fence);
        expect(await store.extendLock('k', 'run-a', old.fence, LONG)).toBe(false);
        expect(await store.releaseLock('k', 'run-a', old.fence)).toBe(false);
        expect(await store.acquireLock('k', 'run-a', LONG)).toMatchObject({ acquired: false, holder: 'run-b' });
      });

      it('give growing fences across owners, which do not restart after the lock expires', async () => {
        const a = await takeLock(store, 'k', 'run-a');
        expect(await store.releaseLock('k', 'run-a', a.fence)).toBe(true);
        const b = await takeLock(store, 'k', 'run-b', short());
        expect(b.fence).toBeGreaterThan(a.fence);
        await pass(short());
        const c = await takeLock(store, 'k', 'run-c');
        expect(c.fence).toBeGreaterThan(b.fence);
        expect(await store.releaseLock('k', 'run-c', c.fence)).toBe(true);
        // The first owner again: a new fence, and its old one no longer matches.
        const again = await takeLock(store, 'k', 'run-a');
        expect(again.fence).toBeGreaterThan(c.fence);
        expect(await store.extendLock('k', 'run-a', a.fence, LONG)).toBe(false);
        expect(await store.releaseLock('k', 'run-a', a.fence)).toBe(false);
        expect(await store.releaseLock('k', 'run-a', again.fence)).toBe(true);
      });

      it('cannot be extended back by a holder whose TTL ran out, even with nobody else taking them (a step is fenced so)', async () => {
        const lapsed = await takeLock(store, 'k', 'run-a', short());
        await pass(short());
        expect(await store.extendLock('k', 'run-a', lapsed.fence, LONG)).toBe(false);
        // Nothing was revived: the next take, even the same owner's, is a new holder.
        const next = await takeLock(store, 'k', 'run-a');
        expect(next).toMatchObject({ count: 1 });
        expect(next.fence).toBeGreaterThan(lapsed.fence);
      });

      it('refuse a non-positive TTL and a fence that is not a positive integer', async () => {
        await expect(store.acquireLock('k', 'run-a', 0)).rejects.toThrow(RangeError);
        await expect(store.extendLock('k', 'run-a', 1, -5)).rejects.toThrow(RangeError);
        await expect(store.extendLock('k', 'run-a', 1.5, LONG)).rejects.toThrow(RangeError);
        await expect(store.releaseLock('k', 'run-a', 0)).rejects.toThrow(RangeError);
        // Nothing was taken by the refused calls.
        expect(await store.acquireLock('k', 'run-b', LONG)).toMatchObject({ acquired: true, count: 1 });
      });
    });

    describe('semaphores', () => {
      it('never go above the limit: 3 of 20 concurrent acquirers get a slot', async () => {
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.acquireSemaphore('pool', `h-${i}`, 3, LONG)),
        );
        expect(replies.filter((r) => r.acquired)).toHaveLength(3);
        for (const reply of replies) expect(reply.holders).toBeLessThanOrEqual(3);
        expect(replies.filter((r) => !r.acquired)).toEqual(
          Array.from({ length: 17 }, () => ({ acquired: false, holders: 3, retryAfterMs: expect.any(Number) })),
        );
      });

      it('let a holder take its slot again without taking a second one', async () => {
        expect(await store.acquireSemaphore('pool', 'h-1', 2, LONG)).toEqual({ acquired: true, holders: 1 });
        expect(await store.acquireSemaphore('pool', 'h-1', 2, LONG)).toEqual({ acquired: true, holders: 1 });
        expect(await store.acquireSemaphore('pool', 'h-2', 2, LONG)).toEqual({ acquired: true, holders: 2 });
        expect(await store.acquireSemaphore('pool', 'h-1', 2, LONG)).toEqual({ acquired: true, holders: 2 });
        expect(await store.acquireSemaphore('pool', 'h-3', 2, LONG)).toMatchObject({ acquired: false, holders: 2 });
      });

      it('give a released slot to another holder; a second or foreign release is refused', async () => {
        await store.acquireSemaphore('pool', 'h-1', 1, LONG);
        expect(await store.acquireSemaphore('pool', 'h-2', 1, LONG)).toMatchObject({ acquired: false });
        expect(await store.releaseSemaphore('pool', 'h-2')).toBe(false);
        expect(await store.releaseSemaphore('pool', 'h-1')).toBe(true);
        expect(await store.releaseSemaphore('pool', 'h-1')).toBe(false);
        expect(await store.acquireSemaphore('pool', 'h-2', 1, LONG)).toEqual({ acquired: true, holders: 1 });
        expect(await store.releaseSemaphore('other', 'h-2')).toBe(false);
      });

      it("return a crashed holder's slot when its lease ends, without a release", async () => {
        expect(await store.acquireSemaphore('pool', 'crashed', 1, short())).toEqual({ acquired: true, holders: 1 });
        expect(await store.acquireSemaphore('pool', 'h-2', 1, LONG)).toMatchObject({ acquired: false, holders: 1 });
        await pass(short());
        expect(await store.acquireSemaphore('pool', 'h-2', 1, LONG)).toEqual({ acquired: true, holders: 1 });
        // The crashed holder lost its slot for good.
        expect(await store.extendSemaphore('pool', 'crashed', LONG)).toBe(false);
        expect(await store.releaseSemaphore('pool', 'crashed')).toBe(false);
      });

      it('bound retryAfterMs by the first lease to end', async () => {
        await store.acquireSemaphore('pool', 'long', 2, LONG);
        await store.acquireSemaphore('pool', 'short', 2, short());
        const refused = await store.acquireSemaphore('pool', 'h-3', 2, LONG);
        if (refused.acquired) throw new Error('a third holder got a slot of 2');
        expect(refused.retryAfterMs).toBeGreaterThan(0);
        expect(refused.retryAfterMs).toBeLessThanOrEqual(short());
        await pass(refused.retryAfterMs);
        expect(await store.acquireSemaphore('pool', 'h-3', 2, LONG)).toEqual({ acquired: true, holders: 2 });
      });

      it('extend keeps a holder past its first lease, and only a holder', async () => {
        await store.acquireSemaphore('pool', 'h-1', 1, short());
        expect(await store.extendSemaphore('pool', 'h-1', LONG)).toBe(true);
        expect(await store.extendSemaphore('pool', 'h-2', LONG)).toBe(false);
        await pass(short());
        expect(await store.acquireSemaphore('pool', 'h-2', 1, LONG)).toMatchObject({ acquired: false, holders: 1 });
        // h-2's refused extend did not take a slot either.
        expect(await store.releaseSemaphore('pool', 'h-2')).toBe(false);
      });

      it('cannot be extended back by a holder whose lease ran out, even with the slot free', async () => {
        await store.acquireSemaphore('pool', 'h-1', 2, short());
        await pass(short());
        expect(await store.extendSemaphore('pool', 'h-1', LONG)).toBe(false);
        expect(await store.releaseSemaphore('pool', 'h-1')).toBe(false);
      });

      it('refuse a limit that is not a positive integer and a non-positive lease', async () => {
        await expect(store.acquireSemaphore('pool', 'h', 0, LONG)).rejects.toThrow(RangeError);
        await expect(store.acquireSemaphore('pool', 'h', 2.5, LONG)).rejects.toThrow(RangeError);
        await expect(store.acquireSemaphore('pool', 'h', 1, 0)).rejects.toThrow(RangeError);
        await expect(store.extendSemaphore('pool', 'h', -1)).rejects.toThrow(RangeError);
      });
    });

    describe('rate limits', () => {
      it('allow `limit` uses in a window, then refuse until the window ends (0 < retryAfterMs <= windowMs)', async () => {
        await roomInWindow(HOUR, 10_000);
        const windows = [{ windowMs: HOUR, limit: 3 }];
        for (let i = 0; i < 3; i++) expect(await store.consumeRate('api:{x}', windows)).toEqual({ allowed: true });
        const before = await store.now();
        const refused = await store.consumeRate('api:{x}', windows);
        const after = await store.now();
        expect(refused).toEqual({ allowed: false, window: 0, retryAfterMs: expect.any(Number) });
        if (refused.allowed) throw new Error('unreachable');
        expect(refused.retryAfterMs).toBeGreaterThan(0);
        expect(refused.retryAfterMs).toBeLessThanOrEqual(HOUR);
        // Exactly the end of the window the call fell in (the store's time is between before and after).
        const end = (Math.floor(before / HOUR) + 1) * HOUR;
        expect(refused.retryAfterMs).toBeLessThanOrEqual(end - before);
        expect(refused.retryAfterMs).toBeGreaterThanOrEqual(end - after);
        // Another name is another limit.
        expect(await store.consumeRate('api:{y}', windows)).toEqual({ allowed: true });
      });

      it('check every window before counting any: a full long window burns nothing in the short one', async () => {
        await roomInWindow(MINUTE, 10_000);
        const both = [
          { windowMs: MINUTE, limit: 5 },
          { windowMs: HOUR, limit: 2 },
        ];
        expect(await store.consumeRate('api', both)).toEqual({ allowed: true });
        expect(await store.consumeRate('api', both)).toEqual({ allowed: true });
        expect(await store.consumeRate('api', both)).toMatchObject({ allowed: false, window: 1 });
        expect(await store.consumeRate('api', both)).toMatchObject({ allowed: false, window: 1 });
        // The minute window counted the two allowed uses only: one more fits under a limit of 3.
        const minute = [{ windowMs: MINUTE, limit: 3 }];
        expect(await store.consumeRate('api', minute)).toEqual({ allowed: true });
        expect(await store.consumeRate('api', minute)).toMatchObject({ allowed: false, window: 0 });
        // Refused by the first full window in the order given.
        expect(await store.consumeRate('api', [{ windowMs: HOUR, limit: 2 }, ...minute])).toMatchObject({
          allowed: false,
          window: 0,
        });
      });

      it('start counting again in the next window', async () => {
        const windowMs = Math.max(short(), 100);
        await roomInWindow(windowMs, windowMs / 2);
        const windows: RateWindow[] = [{ windowMs, limit: 2 }];
        expect(await store.consumeRate('burst', windows)).toEqual({ allowed: true });
        expect(await store.consumeRate('burst', windows)).toEqual({ allowed: true });
        const refused = await store.consumeRate('burst', windows);
        if (refused.allowed) throw new Error('a third use was allowed in a window of 2');
        expect(refused.retryAfterMs).toBeLessThanOrEqual(windowMs);
        await pass(refused.retryAfterMs);
        expect(await store.consumeRate('burst', windows)).toEqual({ allowed: true });
        expect(await store.consumeRate('burst', windows)).toEqual({ allowed: true });
      });

      it('refuse no windows, two windows of one length, and lengths or limits that are not positive integers', async () => {
        await expect(store.consumeRate('api', [])).rejects.toThrow(RangeError);
        await expect(
          store.consumeRate('api', [
            { windowMs: 1000, limit: 1 },
            { windowMs: 1000, limit: 2 },
          ]),
        ).rejects.toThrow(RangeError);
        await expect(store.consumeRate('api', [{ windowMs: 0, limit: 1 }])).rejects.toThrow(RangeError);
        await expect(store.consumeRate('api', [{ windowMs: 10.5, limit: 1 }])).rejects.toThrow(RangeError);
        await expect(store.consumeRate('api', [{ windowMs: 1000, limit: 0 }])).rejects.toThrow(RangeError);
      });
    });

    describe('periods', () => {
      it('are marked per name and bucket', async () => {
        expect(await store.isPeriodMarked('report:{acme}', '2026-05-01')).toBe(false);
        await store.markPeriod('report:{acme}', '2026-05-01', LONG);
        expect(await store.isPeriodMarked('report:{acme}', '2026-05-01')).toBe(true);
        expect(await store.isPeriodMarked('report:{acme}', '2026-05-02')).toBe(false);
        expect(await store.isPeriodMarked('report:{other}', '2026-05-01')).toBe(false);
        // Marking again is harmless.
        await store.markPeriod('report:{acme}', '2026-05-01', LONG);
        expect(await store.isPeriodMarked('report:{acme}', '2026-05-01')).toBe(true);
      });

      it('forget a mark after its TTL', async () => {
        await store.markPeriod('report', 'i42', short());
        await store.markPeriod('report', 'i43', LONG);
        await pass(short());
        expect(await store.isPeriodMarked('report', 'i42')).toBe(false);
        expect(await store.isPeriodMarked('report', 'i43')).toBe(true);
        await expect(store.markPeriod('report', 'i44', 0)).rejects.toThrow(RangeError);
      });
    });

    describe('ordered locks', () => {
      const assign = (key = 'queue:{a}') => store.assignOrder(key, LONG);

      it('assign nonces 1..n in order, in one epoch, also when assigned concurrently', async () => {
        const serial = [];
        for (let i = 0; i < 5; i++) serial.push(await assign());
        const epoch = serial[0].epoch;
        expect(serial).toEqual([1, 2, 3, 4, 5].map((nonce) => ({ nonce, epoch })));
        const concurrent = await Promise.all(Array.from({ length: 10 }, () => assign('queue:{b}')));
        expect(concurrent.map((a) => a.nonce).sort((x, y) => x - y)).toEqual(
          Array.from({ length: 10 }, (_, i) => i + 1),
        );
        expect(new Set(concurrent.map((a) => a.epoch)).size).toBe(1);
      });

      it('let the first nonce go while later ones wait for the live one ahead', async () => {
        const { epoch } = await assign();
        await assign();
        await assign();
        expect(await store.orderTurn('queue:{a}', 1, epoch, LONG)).toEqual({
          state: 'go',
          retryAfterMs: 0,
          lastCompleted: 0,
          firstFailed: 0,
        });
        for (const nonce of [2, 3]) {
          const turn = await store.orderTurn('queue:{a}', nonce, epoch, LONG);
          expect(turn).toEqual({ state: 'wait', retryAfterMs: expect.any(Number), lastCompleted: 0, firstFailed: 0 });
          expect(turn.retryAfterMs).toBeGreaterThan(0);
          expect(turn.retryAfterMs).toBeLessThanOrEqual(LONG);
        }
      });

      it('advance moves the turn to the next nonce', async () => {
        const { epoch } = await assign();
        await assign();
        await assign();
        await store.orderAdvance('queue:{a}', 1, epoch, false, LONG);
        expect(await store.orderTurn('queue:{a}', 2, epoch, LONG)).toMatchObject({ state: 'go', lastCompleted: 1 });
        expect(await store.orderTurn('queue:{a}', 3, epoch, LONG)).toMatchObject({ state: 'wait', lastCompleted: 1 });
        await store.orderAdvance('queue:{a}', 2, epoch, false, LONG);
        expect(await store.orderTurn('queue:{a}', 3, epoch, LONG)).toMatchObject({ state: 'go', lastCompleted: 2 });
      });

      it('skip holders whose heartbeat is older than poisonPillMs (poison_advance)', async () => {
        const { epoch } = await assign();
        await assign();
        await assign();
        await pass(short());
        expect(await store.orderTurn('queue:{a}', 3, epoch, short())).toEqual({
          state: 'poison_advance',
          retryAfterMs: 0,
          lastCompleted: 2,
          firstFailed: 0,
        });
        // A skipped holder that comes back goes (its turn is past) and moves nothing when done.
        expect(await store.orderTurn('queue:{a}', 1, epoch, short())).toMatchObject({ state: 'go', lastCompleted: 2 });
        await store.orderAdvance('queue:{a}', 1, epoch, false, LONG);
        expect(await store.orderTurn('queue:{a}', 3, epoch, short())).toMatchObject({ state: 'go', lastCompleted: 2 });
      });

      it('a heartbeat (or a turn asked) keeps a holder alive past poisonPillMs; a stale-epoch heartbeat does not', async () => {
        const keys = ['beating', 'asking', 'stale-beat', 'silent'];
        const epochs: Record<string, number> = {};
        for (const key of keys) {
          epochs[key] = (await assign(key)).epoch;
          await assign(key);
        }
        await pass(short());
        await store.orderHeartbeat('beating', 1, epochs.beating);
        await store.orderTurn('asking', 1, epochs.asking, short());
        await store.orderHeartbeat('stale-beat', 1, epochs['stale-beat'] + 1);
        const turns = await Promise.all(keys.map((key) => store.orderTurn(key, 2, epochs[key], short())));
        expect(turns.map((t) => t.state)).toEqual(['wait', 'wait', 'poison_advance', 'poison_advance']);
        for (const turn of turns.slice(0, 2)) {
          expect(turn.retryAfterMs).toBeGreaterThan(0);
          expect(turn.retryAfterMs).toBeLessThanOrEqual(short());
        }
      });

      it('remember the smallest failed nonce, reported with every turn', async () => {
        const { epoch } = await assign();
        for (let i = 0; i < 3; i++) await assign();
        await store.orderAdvance('queue:{a}', 1, epoch, false, LONG);
        expect(await store.orderTurn('queue:{a}', 2, epoch, LONG)).toMatchObject({ state: 'go', firstFailed: 0 });
        // Nonce 3 fails out of turn, then nonce 2 fails: the smaller wins.
        await store.orderAdvance('queue:{a}', 3, epoch, true, LONG);
        expect(await store.orderTurn('queue:{a}', 2, epoch, LONG)).toMatchObject({ state: 'go', firstFailed: 3 });
        await store.orderAdvance('queue:{a}', 2, epoch, true, LONG);
        expect(await store.orderTurn('queue:{a}', 3, epoch, LONG)).toEqual({
          state: 'go',
          retryAfterMs: 0,
          lastCompleted: 2,
          firstFailed: 2,
        });
        // A larger failure does not replace it.
        await store.orderAdvance('queue:{a}', 3, epoch, true, LONG);
        expect(await store.orderTurn('queue:{a}', 4, epoch, LONG)).toEqual({
          state: 'go',
          retryAfterMs: 0,
          lastCompleted: 3,
          firstFailed: 2,
        });
        // The drain forgets it: the next batch starts with no failure.
        await store.orderAdvance('queue:{a}', 4, epoch, false, LONG);
        const next = await assign();
        expect(next).toEqual({ nonce: 1, epoch: epoch + 1 });
        expect(await store.orderTurn('queue:{a}', 1, next.epoch, LONG)).toMatchObject({ state: 'go', firstFailed: 0 });
      });

      it('reset when every nonce completed: the next assign starts at 1 in a new epoch, old nonces are stale', async () => {
        const first = await assign();
        await assign();
        await store.orderAdvance('queue:{a}', 1, first.epoch, false, LONG);
        await store.orderAdvance('queue:{a}', 2, first.epoch, true, LONG);
        const next = await assign();
        expect(next).toEqual({ nonce: 1, epoch: first.epoch + 1 });
        expect(await store.orderTurn('queue:{a}', 2, first.epoch, LONG)).toEqual({
          state: 'stale',
          retryAfterMs: 0,
          lastCompleted: 0,
          firstFailed: 0,
        });
        // An old-epoch advance or heartbeat changes nothing.
        await store.orderAdvance('queue:{a}', 1, first.epoch, true, LONG);
        await store.orderHeartbeat('queue:{a}', 1, first.epoch);
        expect(await store.orderTurn('queue:{a}', 1, next.epoch, LONG)).toEqual({
          state: 'go',
          retryAfterMs: 0,
          lastCompleted: 0,
          firstFailed: 0,
        });
        expect(await assign()).toEqual({ nonce: 2, epoch: next.epoch });
      });

      it('answer drained to a nonce of the current epoch once the key was reset, and stale for a key never assigned', async () => {
        const { epoch } = await assign();
        await store.orderAdvance('queue:{a}', 1, epoch, false, LONG);
        const drained = { state: 'drained', retryAfterMs: 0, lastCompleted: 0, firstFailed: 0 };
        expect(await store.orderTurn('queue:{a}', 1, epoch, LONG)).toEqual(drained);
        // Advancing a drained key does nothing either.
        await store.orderAdvance('queue:{a}', 1, epoch, true, LONG);
        expect(await store.orderTurn('queue:{a}', 1, epoch, LONG)).toEqual(drained);
        expect(await store.orderTurn('never', 1, 1, LONG)).toMatchObject({ state: 'stale' });
      });

      it('refuse nonces and epochs that are not positive integers, and a non-positive poison pill or TTL', async () => {
        await expect(store.assignOrder('q', 0)).rejects.toThrow(RangeError);
        await expect(store.orderTurn('q', 0, 1, LONG)).rejects.toThrow(RangeError);
        await expect(store.orderTurn('q', 1, 1.5, LONG)).rejects.toThrow(RangeError);
        await expect(store.orderTurn('q', 1, 1, 0)).rejects.toThrow(RangeError);
        await expect(store.orderHeartbeat('q', -1, 1)).rejects.toThrow(RangeError);
        await expect(store.orderAdvance('q', 1, 1, false, 0)).rejects.toThrow(RangeError);
        await expect(store.orderAdvance('q', 1, 0, false, LONG)).rejects.toThrow(RangeError);
      });
    });
  });
}

/** Take lock `key` for `owner` (failing the test when refused); its fence. */
async function takeLock(
  store: CoordinationStore,
  key: string,
  owner: string,
  ttlMs = LONG,
): Promise<{ fence: number; count: number }> {
  const reply = await store.acquireLock(key, owner, ttlMs);
  if (!reply.acquired) throw new Error(`lock '${key}' is held by '${reply.holder}', expected it free for '${owner}'`);
  return reply;
}
