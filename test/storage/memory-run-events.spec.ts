import { MemoryRunEventBus } from '../../lib/storage/memory/memory-run-events';
import { describeRunEventBusConformance } from '../conformance/run-events.conformance';
import { ManualClock } from '../conformance/manual-clock';
import { newRunId, T0 } from '../conformance/run-state.factory';

describeRunEventBusConformance('memory', async ({ retentionMs, maxLen }) => {
  const clock = new ManualClock();
  const bus = new MemoryRunEventBus({ clock, retentionMs, maxLen });
  return {
    bus,
    elapse: async (ms) => clock.advance(ms),
    cleanup: async () => {
      bus.clear();
      await bus.close();
    },
  };
});

describe('MemoryRunEventBus: bounds', () => {
  const event = (runId: string) => ({ type: 'run.started' as const, runId, reactorName: 'r', at: T0 });

  it('keeps the logs of at most `maxRuns` runs, dropping the least recently appended to', async () => {
    const bus = new MemoryRunEventBus({ clock: new ManualClock(), maxRuns: 2 });
    const [a, b, c] = [newRunId(), newRunId(), newRunId()];
    await bus.append(event(a));
    await bus.append(event(b));
    await bus.append(event(a));
    await bus.append(event(c));
    expect(await bus.read(a)).toHaveLength(2);
    expect(await bus.read(b)).toEqual([]);
    expect(await bus.read(c)).toHaveLength(1);
  });

  it('hands out copies: an event changed after append or read changes nothing kept', async () => {
    const bus = new MemoryRunEventBus({ clock: new ManualClock() });
    const runId = newRunId();
    const appended = { type: 'run.paused' as const, runId, reactorName: 'r', at: T0, interrupts: ['a'] };
    await bus.append(appended);
    appended.interrupts.push('b');
    const [read] = await bus.read(runId);
    (read.event as typeof appended).interrupts.push('c');
    expect((await bus.read(runId))[0].event).toEqual({ ...appended, interrupts: ['a'] });
  });

  it('drops a subscription when its function is called, and the run’s entry with the last one', async () => {
    const bus = new MemoryRunEventBus();
    const runId = newRunId();
    const listener = () => undefined;
    const off1 = await bus.subscribe(runId, listener);
    const off2 = await bus.subscribe(runId, listener);
    expect(bus.subscribers(runId)).toBe(2);
    off1();
    off1();
    expect(bus.subscribers(runId)).toBe(1);
    off2();
    expect(bus.subscribers(runId)).toBe(0);
  });

  it('refuses options that are not positive integers', () => {
    expect(() => new MemoryRunEventBus({ maxLen: 0 })).toThrow(RangeError);
    expect(() => new MemoryRunEventBus({ retentionMs: -1 })).toThrow(RangeError);
    expect(() => new MemoryRunEventBus({ maxRuns: 1.5 })).toThrow(RangeError);
  });
});
