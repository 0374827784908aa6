import type { RunEventBus, RunLiveEvent, RunWakeUp } from '../../lib/core/ports';
import { newRunId, T0 } from './run-state.factory';

/** A run event bus built with `retentionMs` and `maxLen`, and a way to let time pass for it. */
export interface RunEventsHarness {
  bus: RunEventBus;
  /** A second bus on the same backend (another process), when the adapter has one. */
  other?: RunEventBus;
  /** Let `ms` pass on the bus's clock (a manual clock is advanced; Redis is waited for). */
  elapse(ms: number): Promise<void>;
  /** Remove everything this harness created and close its buses. */
  cleanup(): Promise<void>;
}

/** Builds a fresh, isolated harness whose bus keeps `retentionMs` and about `maxLen` entries per run. */
export type RunEventsFactory = (options: { retentionMs: number; maxLen: number }) => Promise<RunEventsHarness>;

const RETENTION_MS = 60_000;
const MAX_LEN = 1000;

function started(runId: string, step: string, attempt = 1): RunLiveEvent {
  return { type: 'step.started', runId, reactorName: 'orders', at: T0, step, attempt };
}

/** Resolves once `predicate` holds, polling every 5 ms, or rejects after `ms`. */
async function eventually(predicate: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Resolves after `ms` of real time (to see that nothing more arrives). */
const settle = (ms = 50) => new Promise((resolve) => setTimeout(resolve, ms));

/** The RunEventBus contract (`lib/core/ports/run-events.port.ts`), for any adapter. */
export function describeRunEventBusConformance(name: string, factory: RunEventsFactory): void {
  describe(`RunEventBus conformance: ${name}`, () => {
    const harnesses: RunEventsHarness[] = [];
    const make = async (options = { retentionMs: RETENTION_MS, maxLen: MAX_LEN }) => {
      const h = await factory(options);
      harnesses.push(h);
      return h;
    };
    afterEach(async () => {
      for (const h of harnesses.splice(0)) await h.cleanup();
    });

    it('keeps every event of a run in order, each with an increasing cursor, and gives them back as appended', async () => {
      const { bus } = await make();
      const runId = newRunId();
      const events: RunLiveEvent[] = [
        { type: 'run.started', runId, reactorName: 'orders', at: T0 },
        started(runId, 'reserve'),
        { type: 'step.completed', runId, reactorName: 'orders', at: T0 + 1, step: 'reserve', outcome: 'success' },
        {
          type: 'step.retrying',
          runId,
          reactorName: 'orders',
          at: T0 + 2,
          step: 'charge',
          attempt: 1,
          delayMs: 250,
          error: 'card "declined": try again ✓',
        },
        { type: 'step.failed', runId, reactorName: 'orders', at: T0 + 3, step: 'charge', error: 'no', attempts: 2 },
        { type: 'step.compensated', runId, reactorName: 'orders', at: T0 + 4, step: 'reserve' },
        { type: 'run.paused', runId, reactorName: 'orders', at: T0 + 5, interrupts: ['approve', 'child.ship'] },
        { type: 'run.finished', runId, reactorName: 'orders', at: T0 + 6, status: 'failed', error: 'no' },
      ];
      const ids: string[] = [];
      for (const event of events) ids.push(await bus.append(event));
      expect(new Set(ids).size).toBe(ids.length);
      const entries = await bus.read(runId);
      expect(entries.map((e) => e.id)).toEqual(ids);
      expect(entries.map((e) => e.event)).toEqual(events);
    });

    it('replays from a cursor: only what came after it, at most `limit` at a time', async () => {
      const { bus } = await make();
      const runId = newRunId();
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push(await bus.append(started(runId, `s${i}`)));
      expect((await bus.read(runId, { after: ids[2] })).map((e) => e.id)).toEqual(ids.slice(3));
      expect(await bus.read(runId, { after: ids[6] })).toEqual([]);
      const page = await bus.read(runId, { after: ids[0], limit: 2 });
      expect(page.map((e) => e.id)).toEqual(ids.slice(1, 3));
      expect((await bus.read(runId, { after: page[1].id, limit: 100 })).map((e) => e.id)).toEqual(ids.slice(3));
      expect((await bus.read(runId, { limit: 3 })).map((e) => e.id)).toEqual(ids.slice(0, 3));
      // The cursor of "nothing seen yet" replays everything.
      expect((await bus.read(runId, { after: '0' })).map((e) => e.id)).toEqual(ids);
      // Cursors keep increasing after a read.
      const next = await bus.append(started(runId, 'late'));
      expect((await bus.read(runId, { after: ids[6] })).map((e) => e.id)).toEqual([next]);
    });

    it('keeps one log per run, and none for a run with no events', async () => {
      const { bus } = await make();
      const [a, b] = [newRunId(), newRunId()];
      await bus.append(started(a, 'x'));
      await bus.append(started(b, 'y'));
      await bus.append(started(a, 'z'));
      expect((await bus.read(a)).map((e) => (e.event as { step: string }).step)).toEqual(['x', 'z']);
      expect((await bus.read(b)).map((e) => (e.event as { step: string }).step)).toEqual(['y']);
      expect(await bus.read(newRunId())).toEqual([]);
      // A composed child's events are its own.
      await bus.append(started(`${a}/child`, 'c'));
      expect(await bus.read(a)).toHaveLength(2);
      expect(await bus.read(`${a}/child`)).toHaveLength(1);
    });

    it('wakes the run’s subscribers with the type of each event appended, and `settled` on a signal', async () => {
      const { bus } = await make();
      const [runId, other] = [newRunId(), newRunId()];
      const seen: RunWakeUp[] = [];
      const otherSeen: RunWakeUp[] = [];
      const off = await bus.subscribe(runId, (w) => seen.push(w));
      const offOther = await bus.subscribe(other, (w) => otherSeen.push(w));
      await bus.append(started(runId, 'a'));
      await bus.append({ type: 'run.finished', runId, reactorName: 'orders', at: T0, status: 'completed' });
      await bus.signal(runId);
      await eventually(() => seen.length === 3);
      expect(seen).toEqual(['step.started', 'run.finished', 'settled']);
      await settle();
      expect(otherSeen).toEqual([]);
      off();
      offOther();
    });

    it('stops waking a subscriber that unsubscribed, and keeps waking the others', async () => {
      const { bus } = await make();
      const runId = newRunId();
      const first: RunWakeUp[] = [];
      const second: RunWakeUp[] = [];
      const offFirst = await bus.subscribe(runId, (w) => first.push(w));
      const offSecond = await bus.subscribe(runId, (w) => second.push(w));
      await bus.signal(runId);
      await eventually(() => first.length === 1 && second.length === 1);
      offFirst();
      offFirst(); // idempotent
      await bus.signal(runId);
      await eventually(() => second.length === 2);
      await settle();
      expect(first).toHaveLength(1);
      offSecond();
      await bus.append(started(runId, 'after'));
      await settle();
      expect(second).toHaveLength(2);
      // Subscribing again after everyone left works.
      const third: RunWakeUp[] = [];
      const offThird = await bus.subscribe(runId, (w) => third.push(w));
      await bus.signal(runId);
      await eventually(() => third.length === 1);
      offThird();
    });

    it('reaches a subscription made before the append in another process (once subscribe resolved)', async () => {
      const h = await make();
      const publisher = h.other ?? h.bus;
      for (let i = 0; i < 5; i++) {
        const runId = newRunId();
        const seen: RunWakeUp[] = [];
        const off = await h.bus.subscribe(runId, (w) => seen.push(w));
        await publisher.append({ type: 'run.finished', runId, reactorName: 'orders', at: T0, status: 'completed' });
        await eventually(() => seen.length === 1);
        expect(seen).toEqual(['run.finished']);
        expect((await h.bus.read(runId)).map((e) => e.event.type)).toEqual(['run.finished']);
        off();
      }
    });

    it('isolates subscribers: one that throws does not keep the others from waking', async () => {
      const { bus } = await make();
      const runId = newRunId();
      const seen: RunWakeUp[] = [];
      const offBad = await bus.subscribe(runId, () => {
        throw new Error('listener bug');
      });
      const offGood = await bus.subscribe(runId, (w) => seen.push(w));
      await bus.signal(runId);
      await eventually(() => seen.length === 1);
      offBad();
      offGood();
    });

    it('keeps about the newest `maxLen` entries of a run', async () => {
      const { bus } = await make({ retentionMs: RETENTION_MS, maxLen: 10 });
      const runId = newRunId();
      const ids: string[] = [];
      for (let i = 0; i < 300; i++) ids.push(await bus.append(started(runId, `s${i}`)));
      const kept = await bus.read(runId, { limit: 1000 });
      // "About": Redis trims whole stream nodes (100 entries each by default); never fewer than maxLen.
      expect(kept.length).toBeGreaterThanOrEqual(10);
      expect(kept.length).toBeLessThanOrEqual(110);
      expect(kept.map((e) => e.id)).toEqual(ids.slice(ids.length - kept.length));
    });

    it('forgets a run’s log once its retention passed after the last entry', async () => {
      const h = await make({ retentionMs: 300, maxLen: MAX_LEN });
      const runId = newRunId();
      await h.bus.append(started(runId, 'a'));
      await h.elapse(200);
      // An append keeps the whole log for the retention again.
      await h.bus.append(started(runId, 'b'));
      await h.elapse(200);
      expect(await h.bus.read(runId)).toHaveLength(2);
      await h.elapse(250);
      expect(await h.bus.read(runId)).toEqual([]);
    });

    it('refuses a cursor that is not one and a limit that is not a positive integer', async () => {
      const { bus } = await make();
      const runId = newRunId();
      await bus.append(started(runId, 'a'));
      await expect(bus.read(runId, { after: 'latest' })).rejects.toThrow(RangeError);
      await expect(bus.read(runId, { after: '' })).rejects.toThrow(RangeError);
      await expect(bus.read(runId, { limit: 0 })).rejects.toThrow(RangeError);
      await expect(bus.read(runId, { limit: 1.5 })).rejects.toThrow(RangeError);
    });
  });
}
