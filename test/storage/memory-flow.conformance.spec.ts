import { createMemoryAdapters, MemoryFlowStore } from '../../lib/storage/memory';
import { describeFlowStoreConformance } from '../conformance/flow-store.conformance';
import { ManualClock } from '../conformance/manual-clock';
import { T0 } from '../conformance/run-state.factory';

/** A memory flow store on a manual clock: windows, due times and expiry are exact and instant. */
describeFlowStoreConformance('memory', () => {
  const clock = new ManualClock();
  const store = new MemoryFlowStore(clock);
  return {
    store,
    advance: (ms) => clock.advance(ms),
    shortMs: 1000,
    cleanup: async () => store.clear(),
  };
});

describe('MemoryFlowStore: time from its clock', () => {
  it('reads now, admissions, windows, due times and expiry from the injected clock, with exact boundaries', async () => {
    const clock = new ManualClock();
    const store = new MemoryFlowStore(clock);
    await expect(store.now()).resolves.toBe(T0);
    await store.enter('r', 'k', 'a', 1, 10);
    clock.advance(5);
    await store.enter('r', 'k', 'b', 1, 10);
    clock.advance(5);
    await expect(store.leave('r', 'k', 'a', 1)).resolves.toEqual(['b']);
    await expect(store.inspect('r', 'k', 10)).resolves.toEqual({
      key: 'k',
      live: [{ runId: 'b', since: T0 + 10 }],
      queued: 0,
      next: [],
    });
    // Prune: idle means last activity strictly older than now - idleMs.
    await store.leave('r', 'k', 'b', 1);
    clock.advance(100);
    await expect(store.prune('r', 'k', 100)).resolves.toBe(false);
    clock.advance(1);
    await expect(store.prune('r', 'k', 100)).resolves.toBe(true);

    // Throttle windows are aligned on the epoch of the clock's time.
    const period = 1000;
    clock.advance(period - (clock.now() % period) - 1); // the window's last ms
    const window = Math.floor(clock.now() / period);
    await expect(store.reserveStart('r', 't', 1, period)).resolves.toEqual({ startAt: clock.now(), now: clock.now() });
    await expect(store.reserveStart('r', 't', 1, period)).resolves.toMatchObject({ startAt: (window + 1) * period });
    clock.advance(1);
    await expect(store.reserveStart('r', 't', 2, period)).resolves.toEqual({ startAt: clock.now(), now: clock.now() });
    await expect(store.reserveStart('r', 't', 2, period)).resolves.toMatchObject({ startAt: (window + 2) * period });

    // A gather is due from its due time on, and kept through its ttl's last ms (Redis's boundary).
    const opened = await store.gather('r', 'g', 'run-1', 'x', { mode: 'all', maxWaitMs: 100, ttlMs: 500 });
    clock.advance(99);
    await expect(store.take('r', 'g', 'run-1')).resolves.toEqual({ due: false, dueAt: opened.dueAt, now: clock.now() });
    clock.advance(1);
    await expect(store.take('r', 'g', 'run-1')).resolves.toEqual({ due: true, items: ['x'] });
    clock.advance(400);
    await expect(store.take('r', 'g', 'run-1')).resolves.toEqual({ due: true, items: ['x'] });
    clock.advance(1);
    await expect(store.take('r', 'g', 'run-1')).resolves.toBeUndefined();
  });

  it('hands out copies: changing a reply changes nothing stored', async () => {
    const store = new MemoryFlowStore(new ManualClock());
    await store.enter('r', 'k', 'a', 1, 10);
    await store.enter('r', 'k', 'b', 1, 10);
    (await store.inspect('r', 'k', 10)).next.push('intruder');
    await store.gather('r', 'g', 'run-1', 'x', { mode: 'all', maxWaitMs: 1, maxSize: 1, ttlMs: 1000 });
    const taken = await store.take('r', 'g', 'run-1');
    if (taken?.due) taken.items.push('intruder');
    await expect(store.inspect('r', 'k', 10)).resolves.toMatchObject({ queued: 1, next: ['b'] });
    await expect(store.take('r', 'g', 'run-1')).resolves.toEqual({ due: true, items: ['x'] });
  });

  it('sweeps throttle windows and gathers nobody reads again once they expire; an emptied key keeps only its index entry', async () => {
    const clock = new ManualClock();
    const store = new MemoryFlowStore(clock);
    const sizes = () => {
      const maps = store as unknown as Record<string, Map<string, unknown>>;
      return ['slots', 'indexes', 'throttles', 'open', 'gathers'].map((name) => maps[name].size);
    };
    for (let i = 0; i < 100; i++) {
      await store.enter(`r${i}`, 'k', 'a', 1, 1);
      await store.leave(`r${i}`, 'k', 'a', 1);
      await store.reserveStart('r', `t${i}`, 1, 1000);
      await store.gather('r', `g${i}`, 'run', 'x', { mode: 'last', periodMs: 10, maxWaitMs: 10, ttlMs: 1000 });
    }
    expect(sizes()).toEqual([0, 100, 100, 100, 100]);
    clock.advance(1001);
    // Enough operations for a sweep (one every 1024 operations).
    for (let i = 0; i < 700; i++) await store.now().then(() => store.inspect('r', 'k', 0));
    expect(sizes()).toEqual([0, 100, 0, 0, 0]);
    for (let i = 0; i < 100; i++) await store.prune(`r${i}`, 'k', 0);
    expect(sizes()).toEqual([0, 0, 0, 0, 0]);
  });

  it('is built by createMemoryAdapters on the same clock as the other adapters', async () => {
    const clock = new ManualClock(T0 + 42);
    const { flow } = createMemoryAdapters(clock);
    expect(flow).toBeInstanceOf(MemoryFlowStore);
    await expect(flow.now()).resolves.toBe(T0 + 42);
    clock.advance(8);
    await expect(flow.reserveStart('r', 'k', 1, 1)).resolves.toEqual({ startAt: T0 + 50, now: T0 + 50 });
  });
});
