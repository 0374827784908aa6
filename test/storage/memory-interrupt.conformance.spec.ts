import { createMemoryAdapters, MemoryInterruptStore, MemoryReactorStorage } from '../../lib/storage/memory';
import { describeInterruptStoreConformance } from '../conformance/interrupt-store.conformance';
import { ManualClock } from '../conformance/manual-clock';
import { makeRunState, newRunId, T0 } from '../conformance/run-state.factory';

describeInterruptStoreConformance('memory', () => {
  const { storage, interrupts } = createMemoryAdapters(new ManualClock());
  return {
    storage,
    interrupts,
    cleanup: async () => {
      storage.clear();
      interrupts.clear();
    },
  };
});

describe('MemoryInterruptStore: expiry by the store clock', () => {
  const payload = { kind: 'payload' as const, payload: 'yes', at: T0 };

  it('lets a correlation binding expire after its retention', async () => {
    const clock = new ManualClock();
    const { interrupts } = createMemoryAdapters(clock);
    const [r1, r2] = [newRunId(), newRunId()];
    await interrupts.bindCorrelationId('approvals', 'order-1', r1, 'approve', { retentionMs: 1000 });
    clock.advance(999);
    await expect(interrupts.findCorrelationId('approvals', 'order-1')).resolves.toBe(r1);
    // Refreshed by the same run.
    await interrupts.bindCorrelationId('approvals', 'order-1', r1, 'approve', { retentionMs: 1000 });
    clock.advance(999);
    await expect(
      interrupts.bindCorrelationId('approvals', 'order-1', r2, 'approve', { retentionMs: 1000 }),
    ).resolves.toEqual({ ok: false, boundTo: r1 });
    clock.advance(1);
    await expect(interrupts.findCorrelationId('approvals', 'order-1')).resolves.toBeUndefined();
    await expect(
      interrupts.bindCorrelationId('approvals', 'order-1', r2, 'approve', { retentionMs: 1000 }),
    ).resolves.toEqual({ ok: true });
  });

  it('keeps a mailbox as long as its longest-lived entry, then drops it whole', async () => {
    const clock = new ManualClock();
    const { interrupts } = createMemoryAdapters(clock);
    const mail = (path: string, ttlMs: number) =>
      interrupts.mailResume('approvals', 'order-1', path, payload, { now: clock.now(), ttlMs });
    await expect(mail('approve', 5000)).resolves.toEqual({ kind: 'queued', expiresAt: T0 + 5000 });
    // A shorter TTL does not cut the earlier entry short.
    await expect(mail('ship', 1000)).resolves.toEqual({ kind: 'queued', expiresAt: T0 + 1000 });
    clock.advance(4999);
    await expect(mail('ship', 1000)).resolves.toEqual({ kind: 'exists' });
    clock.advance(1);
    await expect(mail('ship', 1000)).resolves.toEqual({ kind: 'queued', expiresAt: T0 + 6000 });
    await expect(
      interrupts.bindCorrelationId('approvals', 'order-1', newRunId(), 'approve', { retentionMs: 1000 }),
    ).resolves.toEqual({ ok: true });
  });

  it('reads the run status and moves the live-run index of the storage it was given', async () => {
    const storage = new MemoryReactorStorage();
    const interrupts = new MemoryInterruptStore(storage, new ManualClock());
    const state = makeRunState({ status: 'paused' });
    await storage.save(state);
    expect(storage.statusOf(state.runId)).toEqual({ status: 'paused', terminal: false });
    expect(storage.statusOf(newRunId())).toBeUndefined();
    await interrupts.claim(state.runId, 'approve', payload, { now: T0 + 5, retentionMs: 1000 });
    expect(await storage.listActive(1, T0 + 5)).toEqual([]);
    expect(await storage.listActive(1, T0 + 6)).toEqual([state.runId]);
    // touchActive leaves a terminal or missing run alone.
    await storage.save({ ...state, status: 'completed' });
    expect(storage.touchActive(state.runId, T0)).toBe(false);
    expect(storage.touchActive(newRunId(), T0)).toBe(false);
    expect(await storage.listActive(10)).toEqual([]);
  });

  it('refuses a non-positive retention or TTL', async () => {
    const { interrupts } = createMemoryAdapters(new ManualClock());
    await expect(interrupts.claim('r', 'approve', payload, { now: T0, retentionMs: 0 })).rejects.toThrow(RangeError);
    await expect(
      interrupts.mailResume('approvals', 'order-1', 'approve', payload, { now: T0, ttlMs: -1 }),
    ).rejects.toThrow(RangeError);
  });
});
