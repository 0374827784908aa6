import { createMemoryAdapters, MemoryCoordinationStore } from '../../lib/storage/memory';
import { describeCoordinationStoreConformance } from '../conformance/coordination-store.conformance';
import { ManualClock } from '../conformance/manual-clock';
import { T0 } from '../conformance/run-state.factory';

/** A memory coordination store on a manual clock: expiry, windows and poison pills are exact and instant. */
describeCoordinationStoreConformance('memory', () => {
  const clock = new ManualClock();
  const store = new MemoryCoordinationStore(clock);
  return {
    store,
    advance: (ms) => clock.advance(ms),
    shortMs: 1000,
    cleanup: async () => store.clear(),
  };
});

describe('MemoryCoordinationStore: time from its clock', () => {
  it('reads now, lease ends, windows and heartbeats from the injected clock', async () => {
    const clock = new ManualClock();
    const store = new MemoryCoordinationStore(clock);
    await expect(store.now()).resolves.toBe(T0);
    await store.acquireLock('k', 'a', 1000);
    clock.advance(400);
    await expect(store.acquireLock('k', 'b', 1000)).resolves.toEqual({
      acquired: false,
      holder: 'a',
      retryAfterMs: 600,
    });
    // The lock is held through its last ms (Redis's boundary) and free one ms later.
    clock.advance(600);
    await expect(store.acquireLock('k', 'b', 1000)).resolves.toMatchObject({ acquired: false, retryAfterMs: 1 });
    clock.advance(1);
    await expect(store.acquireLock('k', 'b', 1000)).resolves.toMatchObject({ acquired: true, fence: 2 });
    // A semaphore lease is over once its expiry comes.
    await store.acquireSemaphore('s', 'a', 1, 500);
    clock.advance(499);
    await expect(store.acquireSemaphore('s', 'b', 1, 500)).resolves.toEqual({
      acquired: false,
      holders: 1,
      retryAfterMs: 1,
    });
    clock.advance(1);
    await expect(store.acquireSemaphore('s', 'b', 1, 500)).resolves.toEqual({ acquired: true, holders: 1 });
    // Windows are aligned on the epoch of the clock's time.
    const windowMs = 1000;
    const left = windowMs - (clock.now() % windowMs);
    await store.consumeRate('r', [{ windowMs, limit: 1 }]);
    await expect(store.consumeRate('r', [{ windowMs, limit: 1 }])).resolves.toEqual({
      allowed: false,
      window: 0,
      retryAfterMs: left,
    });
    // A holder is alive while its heartbeat is at most poisonPillMs old.
    const { epoch } = await store.assignOrder('o', 60_000);
    await store.assignOrder('o', 60_000);
    clock.advance(999);
    await expect(store.orderTurn('o', 2, epoch, 1000)).resolves.toMatchObject({ state: 'wait', retryAfterMs: 1 });
    clock.advance(1);
    await expect(store.orderTurn('o', 2, epoch, 1000)).resolves.toMatchObject({ state: 'wait', retryAfterMs: 1 });
    clock.advance(1);
    await expect(store.orderTurn('o', 2, epoch, 1000)).resolves.toMatchObject({ state: 'poison_advance' });
  });

  it('sweeps entries nobody reads again once they expire', async () => {
    const clock = new ManualClock();
    const store = new MemoryCoordinationStore(clock);
    const sizes = () => {
      const maps = store as unknown as Record<string, Map<string, unknown>>;
      return ['locks', 'semaphores', 'rates', 'periods', 'orders'].map((name) => maps[name].size);
    };
    for (let i = 0; i < 100; i++) {
      await store.acquireLock(`lock-${i}`, 'a', 1000);
      await store.acquireSemaphore(`sem-${i}`, 'a', 1, 1000);
      await store.consumeRate(`rate-${i}`, [{ windowMs: 500, limit: 5 }]);
      await store.markPeriod(`period-${i}`, 'b', 1000);
      await store.assignOrder(`order-${i}`, 1000);
    }
    expect(sizes()).toEqual([100, 100, 100, 100, 100]);
    clock.advance(1001);
    // Enough operations on another key for a sweep (one every 1024 operations).
    for (let i = 0; i < 600; i++) await store.isPeriodMarked('other', 'b');
    expect(sizes()).toEqual([0, 0, 0, 0, 100]);
    // The ordered locks keep their epoch (30 days), like on Redis.
    clock.advance(30 * 24 * 60 * 60 * 1000);
    for (let i = 0; i < 1024; i++) await store.isPeriodMarked('other', 'b');
    expect(sizes()).toEqual([0, 0, 0, 0, 0]);
  });

  it('is built by createMemoryAdapters on the same clock as the other adapters', async () => {
    const clock = new ManualClock(T0 + 42);
    const { coordination } = createMemoryAdapters(clock);
    expect(coordination).toBeInstanceOf(MemoryCoordinationStore);
    await expect(coordination.now()).resolves.toBe(T0 + 42);
  });
});
