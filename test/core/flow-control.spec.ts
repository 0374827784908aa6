/**
 * Flow control of a reactor's starts (issue 24) on the embedded runtime: fair concurrency queues
 * per key, queue bounds, slots given back by every ending, throttle windows, debounce and batch
 * gathers, definition and key errors, and the flow sweep. Time is a TestClock: delayed jobs run
 * when the test moves it.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorDefinition, ReactorOptions } from '../../lib/core/definition/definition';
import type { StepContext } from '../../lib/core/definition/step';
import { ConfigurationError, DefinitionError, FlowQueueFullError } from '../../lib/core/errors';
import type { RunOutcome } from '../../lib/core/results/run-outcome';
import { failure, halt, success } from '../../lib/core/results/step-outcome';
import { TestClock } from '../../lib/testing/test-clock';
import { createTestEngine, type TestEngine } from '../../lib/testing/test-engine';
import { deferred } from './harness';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** An engine on the embedded runtime whose delayed jobs wait for {@link advance}. */
function setup(): TestEngine & { clock: TestClock } {
  const clock = new TestClock();
  return createTestEngine({ clock, logger: quiet }) as TestEngine & { clock: TestClock };
}

/** Let timers that just fired hand their jobs over, then wait until no job is pending. */
async function settle(t: TestEngine): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await t.idle();
}

/** Move time `ms` forward, stopping at each due timer (its jobs run at its time), as the testing kit does. */
async function advance(t: TestEngine & { clock: TestClock }, ms: number): Promise<void> {
  const { clock } = t;
  await settle(t);
  const target = clock.now() + ms;
  for (let next = clock.nextTimerAt(); next !== undefined && next <= target; next = clock.nextTimerAt()) {
    clock.advance(Math.max(0, next - clock.now()));
    await settle(t);
  }
  clock.advance(Math.max(0, target - clock.now()));
  await settle(t);
}

/** Resolve once `condition()` holds (checked between event-loop turns); throw after `timeoutMs` of real time. */
async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Real work of a few milliseconds (not a synchronization: the test waits on conditions). */
const work = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Tenant = { tenant: string; n: number };

describe('flow control (embedded runtime)', () => {
  it('fairness: 1,000 runs of tenant A never delay tenant B by more than `limit` completions; at most `limit` live per key', async () => {
    const t = setup();
    const L = 2;
    const live = new Map<string, number>();
    const maxLive = new Map<string, number>();
    const done = new Map<string, number>([
      ['A', 0],
      ['B', 0],
    ]);
    let aDoneAtFirstB: number | undefined;
    const aStarted = deferred();
    const def = defineReactor(
      'flow-fair',
      (r: ReactorBuilder<Tenant>) =>
        r.step(
          'work',
          async ({ tenant, n }: Tenant) => {
            const now = (live.get(tenant) ?? 0) + 1;
            live.set(tenant, now);
            maxLive.set(tenant, Math.max(maxLive.get(tenant) ?? 0, now));
            if (tenant === 'B' && aDoneAtFirstB === undefined) aDoneAtFirstB = done.get('A');
            try {
              if (tenant === 'A') await aStarted.promise;
              await work(2);
            } finally {
              live.set(tenant, live.get(tenant)! - 1);
            }
            done.set(tenant, done.get(tenant)! + 1);
            return success(`${tenant}${n}`);
          },
          { tenant: r.input('tenant', { type: 'string' }), n: r.input('n', { type: 'integer' }) },
        ),
      { concurrency: { key: (i) => String(i.tenant), limit: L } },
    );
    t.engine.register(def);

    const runIds: string[] = [];
    const aStarts: RunOutcome[] = [];
    for (let n = 0; n < 1_000; n++) aStarts.push(await t.engine.start(def, { tenant: 'A', n }));
    runIds.push(...aStarts.map((o) => o.runId));
    for (const [i, outcome] of aStarts.entries()) {
      expect(outcome.status).toBe('dispatched');
      if (i < L) expect(outcome).not.toHaveProperty('flow');
      else
        expect(outcome).toMatchObject({
          status: 'dispatched',
          flow: { state: 'queued', key: 'A', position: i - L + 1 },
        });
    }
    const positions = aStarts.slice(L).map((o) => (o as { flow?: { position?: number } }).flow?.position ?? 0);
    expect(positions.every((p, i) => i === 0 || p > positions[i - 1])).toBe(true);

    // A's backlog drains at L at a time; once it is under way, B starts 10.
    aStarted.resolve();
    await until(() => done.get('A')! >= 10);
    const aDoneAtBStart = done.get('A')!;
    const bStarts: RunOutcome[] = [];
    for (let n = 0; n < 10; n++) bStarts.push(await t.engine.start(def, { tenant: 'B', n }));
    runIds.push(...bStarts.map((o) => o.runId));
    expect(bStarts[0]).not.toHaveProperty('flow');
    expect(bStarts[L]).toMatchObject({ flow: { state: 'queued', key: 'B', position: 1 } });

    await until(() => done.get('A') === 1_000 && done.get('B') === 10, 15_000);
    await settle(t);
    expect(aDoneAtFirstB).toBeDefined();
    expect(aDoneAtFirstB! - aDoneAtBStart).toBeLessThanOrEqual(L);
    expect(aDoneAtFirstB!).toBeLessThan(1_000 - 100); // B did not wait for A's backlog
    expect(maxLive.get('A')).toBe(L);
    expect(maxLive.get('B')).toBeLessThanOrEqual(L);
    const statuses = await Promise.all(runIds.map(async (id) => (await t.engine.get(id))?.status));
    expect(statuses.filter((s) => s === 'completed')).toHaveLength(1_010);
    const queues = await t.engine.flowQueues('flow-fair');
    for (const key of queues?.keys ?? []) expect(key).toMatchObject({ live: [], queued: 0 });
  }, 20_000);

  it('a queued run is not refused and spends no retry; past maxQueued the start throws FLOW_QUEUE_FULL and stores nothing', async () => {
    const t = setup();
    const gate = deferred();
    const calls: string[] = [];
    const def = defineReactor(
      'flow-bounded',
      (r: ReactorBuilder<Tenant>) =>
        r.step(
          'work',
          async ({ tenant, n }: Tenant, ctx: StepContext) => {
            calls.push(ctx.runId);
            if (tenant === 'A' && n === 0) await gate.promise;
            return success(n);
          },
          { tenant: r.input('tenant', { type: 'string' }), n: r.input('n', { type: 'integer' }) },
          { retries: { maxAttempts: 3, baseDelayMs: 10 } },
        ),
      { concurrency: { key: (i) => String(i.tenant), limit: 1, maxQueued: 2 } },
    );
    t.engine.register(def);
    const first = await t.engine.start(def, { tenant: 'A', n: 0 });
    await until(() => calls.length === 1);
    // `run` of a start that must wait is not refused: it is queued (and `dispatched`).
    const second = await t.engine.run(def, { tenant: 'A', n: 1 });
    const third = await t.engine.start(def, { tenant: 'A', n: 2 });
    expect(second).toMatchObject({ status: 'dispatched', flow: { state: 'queued', key: 'A', position: 1 } });
    expect(third).toMatchObject({ status: 'dispatched', flow: { state: 'queued', key: 'A', position: 2 } });

    const refused = await t.engine
      .start(def, { tenant: 'A', n: 3 }, { runId: 'flow-bounded-refused' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FlowQueueFullError);
    expect(refused).toMatchObject({
      code: 'FLOW_QUEUE_FULL',
      reactorName: 'flow-bounded',
      key: 'A',
      queued: 2,
      retryable: true,
    });
    expect((refused as Error).message).toContain("'flow-bounded'");
    expect((refused as Error).message).toContain("'A'");
    await expect(t.storage.load('flow-bounded-refused')).resolves.toBeUndefined();
    const queues = await t.engine.flowQueues('flow-bounded', { peek: 10 });
    expect(queues?.keys.find((k) => k.key === 'A')).toMatchObject({
      live: [{ runId: first.runId }],
      queued: 2,
      next: [second.runId, third.runId],
    });
    // Another key has slots of its own.
    const other = await t.engine.start(def, { tenant: 'B', n: 0 });
    expect(other).not.toHaveProperty('flow');

    gate.resolve();
    await settle(t);
    for (const id of [first.runId, second.runId, third.runId, other.runId]) {
      expect(await t.engine.get(id)).toMatchObject({ status: 'completed', attempts: { work: 1 } });
      expect((await t.storage.load(id))?.retryCount).toBeUndefined();
      expect(calls.filter((c) => c === id)).toHaveLength(1);
    }
    // Drained: the key takes starts again.
    expect(await t.engine.run(def, { tenant: 'A', n: 4 })).toMatchObject({ status: 'completed', value: 4 });
  });

  it('a failed (rolled back), halted or cancelled run gives its slot back; a cancelled queued run never executes', async () => {
    const t = setup();
    const gates = new Map<string, ReturnType<typeof deferred<void>>>();
    const executed: string[] = [];
    const undone: string[] = [];
    type Mode = { id: string; mode: 'ok' | 'gate' | 'fail' | 'halt' };
    const def = defineReactor(
      'flow-release',
      (r: ReactorBuilder<Mode>) => {
        const id = r.input('id', { type: 'string' });
        const mode = r.input('mode', { type: 'string' });
        const prep = r.step(
          'prep',
          {
            run: async ({ id, mode }: Mode) => {
              executed.push(id);
              if (mode === 'gate') await gates.get(id)!.promise;
              return success(id);
            },
            undo: (_result: unknown, { id }: Mode) => void undone.push(id),
          },
          { id, mode },
        );
        return r.step(
          'work',
          ({ id, mode }: Mode) => {
            if (mode === 'fail') return failure(new Error('declined'), { retryable: false });
            if (mode === 'halt') return halt('stop here');
            return success(id);
          },
          { id, mode },
          { waitFor: [prep] },
        );
      },
      { concurrency: { limit: 1 } },
    );
    t.engine.register(def);
    gates.set('r1', deferred());
    const start = (id: string, mode: Mode['mode']) =>
      t.engine.start(def, { id, mode }, { runId: `flow-release-${id}` });
    await start('r1', 'gate');
    await until(() => executed.includes('r1'));
    const queued = [
      await start('r2', 'fail'),
      await start('r3', 'halt'),
      await start('r4', 'ok'),
      await start('r5', 'ok'),
    ];
    queued.forEach((o, i) => expect(o).toMatchObject({ flow: { state: 'queued', key: '', position: i + 1 } }));
    // A queued run cancelled: it leaves the queue and never executes.
    expect(await t.engine.cancel('flow-release-r4', 'not needed')).toMatchObject({
      status: 'cancelled',
      reason: 'not needed',
    });

    gates.get('r1')!.resolve();
    await settle(t);
    expect(executed).toEqual(['r1', 'r2', 'r3', 'r5']);
    const status = async (id: string) => (await t.engine.get(`flow-release-${id}`))?.status;
    expect(await Promise.all(['r1', 'r2', 'r3', 'r4', 'r5'].map(status))).toEqual([
      'completed',
      'failed',
      'halted',
      'cancelled',
      'completed',
    ]);
    expect(undone).toContain('r2'); // rolled back before its slot went to r3

    // A running run cancelled gives its slot back when it ends.
    gates.set('r6', deferred());
    await start('r6', 'gate');
    await until(() => executed.includes('r6'));
    expect(await start('r7', 'ok')).toMatchObject({ flow: { state: 'queued', position: 1 } });
    await t.engine.cancel('flow-release-r6', 'stop');
    gates.get('r6')!.resolve();
    await settle(t);
    expect(await status('r6')).toBe('cancelled');
    expect(undone).toContain('r6');
    expect(await status('r7')).toBe('completed');
    const queues = await t.engine.flowQueues('flow-release');
    expect(queues?.keys.find((k) => k.key === '') ?? { live: [], queued: 0 }).toMatchObject({ live: [], queued: 0 });
  });

  it('throttle: 10 starts at once go 3 per window; the handles say delayed to each window start', async () => {
    const t = setup();
    const period = 1_000;
    const startedAt = new Map<number, number>();
    const def = defineReactor(
      'flow-throttle',
      (r: ReactorBuilder<{ n: number }>) =>
        r.step('work', ({ n }: { n: number }) => (startedAt.set(n, t.clock.now()), success(n)), {
          n: r.input('n', { type: 'integer' }),
        }),
      { throttle: { limit: 3, periodMs: period } },
    );
    t.engine.register(def);
    t.clock.advance(period - (t.clock.now() % period) + 100); // 100 ms into a window
    const w0 = Math.floor(t.clock.now() / period);
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, n) => t.engine.start(def, { n })));
    const startAts = outcomes.map((o) => (o as { flow?: { state: string; startAt?: number } }).flow);
    expect(startAts.filter((f) => f === undefined)).toHaveLength(3);
    for (const k of [1, 2, 3]) {
      const inWindow = startAts.filter((f) => f?.startAt === (w0 + k) * period);
      expect(inWindow).toHaveLength(k === 3 ? 1 : 3);
      for (const f of inWindow) expect(f).toMatchObject({ state: 'delayed', key: '' });
    }
    await advance(t, 3 * period);
    expect(startedAt.size).toBe(10);
    const perWindow = new Map<number, number>();
    for (const at of startedAt.values())
      perWindow.set(Math.floor(at / period), (perWindow.get(Math.floor(at / period)) ?? 0) + 1);
    expect([...perWindow.entries()].sort(([a], [b]) => a - b)).toEqual([
      [w0, 3],
      [w0 + 1, 3],
      [w0 + 2, 3],
      [w0 + 3, 1],
    ]);
    // Each delayed run started at its handle's startAt, not before.
    outcomes.forEach((o, n) => {
      const at = (o as { flow?: { startAt?: number } }).flow?.startAt;
      if (at !== undefined) expect(startedAt.get(n)).toBe(at);
    });
    for (const o of outcomes) expect((await t.engine.get(o.runId))?.status).toBe('completed');
  });

  describe('debounce', () => {
    type Event = { account: string; n: number };
    const executed: Array<{ runId: string; account: string; n: number; at: number }> = [];
    function debounced(
      t: TestEngine,
      options: ReactorOptions['debounce'] = { key: (i) => String(i.account), periodMs: 1_000, maxWaitMs: 3_000 },
    ) {
      const def = defineReactor(
        'flow-debounce',
        (r: ReactorBuilder<Event>) =>
          r.step(
            'work',
            ({ account, n }: Event, ctx: StepContext) => (
              executed.push({ runId: ctx.runId, account, n, at: t.clock.now() }),
              success(n)
            ),
            { account: r.input('account', { type: 'string' }), n: r.input('n', { type: 'integer' }) },
          ),
        { debounce: options },
      );
      t.engine.register(def);
      return def;
    }
    beforeEach(() => (executed.length = 0));

    it('starts of one key within the period collapse into one run with the last inputs; another key has its own', async () => {
      const t = setup();
      const def = debounced(t);
      const handles: RunOutcome[] = [];
      for (let n = 1; n <= 5; n++) {
        handles.push(await t.engine.start(def, { account: 'a', n }));
        await advance(t, 100);
      }
      const other = await t.engine.start(def, { account: 'b', n: 9 });
      const runId = handles[0].runId;
      handles.forEach((h) =>
        expect(h).toMatchObject({ status: 'dispatched', runId, flow: { state: 'debounced', key: 'a' } }),
      );
      expect((handles[4] as { flow?: { startAt?: number } }).flow?.startAt).toBe(t.clock.now() - 100 + 1_000);
      expect(other.runId).not.toBe(runId);
      expect(other).toMatchObject({ flow: { state: 'debounced', key: 'b' } });
      expect(await t.engine.get(runId)).toMatchObject({ status: 'pending' });
      await advance(t, 899);
      expect(executed).toEqual([]);
      await advance(t, 1);
      expect(executed).toEqual([{ runId, account: 'a', n: 5, at: t.clock.now() }]);
      await advance(t, 100);
      expect(executed.map((e) => [e.runId, e.n])).toEqual([
        [runId, 5],
        [other.runId, 9],
      ]);
      expect(await t.engine.get(runId)).toMatchObject({
        status: 'completed',
        inputs: { account: 'a', n: 5 },
        value: 5,
      });
    });

    it('maxWaitMs bounds the delay under a steady stream of starts', async () => {
      const t = setup();
      const def = debounced(t);
      const t0 = t.clock.now();
      const handles: RunOutcome[] = [await t.engine.start(def, { account: 'c', n: 0 })];
      for (let n = 1; n <= 7; n++) {
        await advance(t, 500); // a start every 500 ms: each one alone would wait 1,000 ms more
        handles.push(await t.engine.start(def, { account: 'c', n }));
      }
      const runId = handles[0].runId;
      // The starts up to maxWaitMs after the first joined its run; it started then, with the last of them.
      expect(handles.slice(0, 6).every((h) => h.runId === runId)).toBe(true);
      expect(executed[0]).toEqual({ runId, account: 'c', n: 5, at: t0 + 3_000 });
      // The next starts opened another gather.
      expect(handles[6].runId).not.toBe(runId);
      expect(handles[7].runId).toBe(handles[6].runId);
      await advance(t, 1_000);
      expect(executed.map((e) => [e.runId, e.n])).toEqual([
        [runId, 5],
        [handles[6].runId, 7],
      ]);
    });

    it('a runId or idempotencyKey dedupes a debounced start: the same token again replays it and joins nothing', async () => {
      const t = setup();
      const def = debounced(t);
      const first = await t.engine.start(def, { account: 'a', n: 1 }, { idempotencyKey: 'evt-1' });
      const second = await t.engine.start(def, { account: 'a', n: 2 }, { idempotencyKey: 'evt-2' });
      const again = await t.engine.start(def, { account: 'a', n: 3 }, { idempotencyKey: 'evt-1' });
      expect(first).toMatchObject({ flow: { state: 'debounced', key: 'a' } });
      expect(first).not.toHaveProperty('replayed');
      expect(second).toMatchObject({ runId: first.runId, flow: { state: 'debounced' } });
      expect(second).not.toHaveProperty('replayed');
      expect(again).toMatchObject({ runId: first.runId, replayed: true });
      // A runId names the start, not the run (the gather's): given twice, the second is a replay.
      const tick = await t.engine.start(def, { account: 'e', n: 1 }, { runId: 'flow-debounce-tick-1' });
      const tickAgain = await t.engine.start(def, { account: 'e', n: 2 }, { runId: 'flow-debounce-tick-1' });
      expect(tick.runId).not.toBe('flow-debounce-tick-1');
      expect(tickAgain).toMatchObject({ runId: tick.runId, replayed: true });
      await advance(t, 1_000);
      expect(executed.map((e) => [e.runId, e.n])).toEqual([
        [first.runId, 2],
        [tick.runId, 1],
      ]);
      expect(await t.engine.start(def, { account: 'a', n: 4 }, { idempotencyKey: 'evt-1' })).toMatchObject({
        runId: first.runId,
        status: 'completed',
        replayed: true,
      });
    });

    it('an invalid start fails a run of its own (INPUT_VALIDATION); the gather keeps its inputs', async () => {
      const t = setup();
      const def = debounced(t);
      const valid = await t.engine.start(def, { account: 'd', n: 1 });
      const invalid = await t.engine.start(def, { account: 'd', n: 'two' as unknown as number });
      expect(invalid).toMatchObject({ status: 'failed', failure: { code: 'INPUT_VALIDATION' } });
      expect(invalid.runId).not.toBe(valid.runId);
      expect(await t.engine.get(invalid.runId)).toMatchObject({ status: 'failed' });
      await advance(t, 1_000);
      expect(executed).toEqual([expect.objectContaining({ runId: valid.runId, n: 1 })]);
      expect(await t.engine.get(valid.runId)).toMatchObject({ status: 'completed', inputs: { account: 'd', n: 1 } });
    });
  });

  it('batch: starts are collected into runs of { items } in start order, at once when full, else after maxWaitMs', async () => {
    const t = setup();
    const executed: Array<{ runId: string; items: unknown[]; at: number }> = [];
    const def = defineReactor(
      'flow-batch',
      (r: ReactorBuilder<{ items: unknown[] }>) =>
        r.step(
          'work',
          ({ items }: { items: unknown[] }, ctx: StepContext) => (
            executed.push({ runId: ctx.runId, items, at: t.clock.now() }),
            success(items.length)
          ),
          { items: r.input('items', { type: 'array' }) },
        ),
      { batch: { maxSize: 3, maxWaitMs: 5_000 } },
    );
    t.engine.register(def);
    const t0 = t.clock.now();
    const handles: RunOutcome[] = [];
    for (let n = 1; n <= 7; n++) handles.push(await t.engine.start(def as ReactorDefinition, n));
    handles.forEach((h) => expect(h).toMatchObject({ status: 'dispatched', flow: { state: 'batched', key: '' } }));
    const ids = handles.map((h) => h.runId);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(new Set(ids.slice(3, 6)).size).toBe(1);
    expect(new Set(ids).size).toBe(3);
    expect((handles[2] as { flow?: { startAt?: number } }).flow?.startAt).toBe(t0); // full: due now
    expect((handles[6] as { flow?: { startAt?: number } }).flow?.startAt).toBe(t0 + 5_000);
    await settle(t);
    expect(executed).toEqual([
      { runId: ids[0], items: [1, 2, 3], at: t0 },
      { runId: ids[3], items: [4, 5, 6], at: t0 },
    ]);
    await advance(t, 4_999);
    expect(executed).toHaveLength(2);
    await advance(t, 1);
    expect(executed[2]).toEqual({ runId: ids[6], items: [7], at: t0 + 5_000 });
    expect(await t.engine.get(ids[0])).toMatchObject({ status: 'completed', inputs: { items: [1, 2, 3] }, value: 3 });
    expect(await t.engine.get(ids[6])).toMatchObject({ status: 'completed', inputs: { items: [7] }, value: 1 });
  });

  it('get and wait work for a queued run: pending while queued, then completed', async () => {
    const t = setup();
    const gate = deferred();
    let calls = 0;
    const def = defineReactor(
      'flow-get',
      (r: ReactorBuilder<{ n: number }>) =>
        r.step('work', async ({ n }: { n: number }) => (calls++, n === 0 && (await gate.promise), success(n)), {
          n: r.input('n', { type: 'integer' }),
        }),
      { concurrency: { limit: 1 } },
    );
    t.engine.register(def);
    const first = await t.engine.start(def, { n: 0 });
    await until(() => calls === 1);
    const queued = await t.engine.start(def, { n: 1 });
    expect(queued).toMatchObject({ status: 'dispatched', flow: { state: 'queued' } });
    expect(await t.engine.get(queued.runId)).toMatchObject({
      status: 'pending',
      outcome: { status: 'dispatched', flow: { state: 'queued', key: '' } },
    });
    const waited = t.engine.wait(queued.runId, { timeoutMs: 60_000 });
    gate.resolve();
    expect(await waited).toMatchObject({ status: 'completed', value: 1 });
    expect(await t.engine.wait(first.runId)).toMatchObject({ status: 'completed', value: 0 });
  });

  it('definition errors name the reactor and the option', () => {
    const step = (r: ReactorBuilder<{ items: unknown[] }>) =>
      r.step('work', () => success(1), { items: r.input('items', { type: 'array' }) });
    const cases: Array<[string, ReactorOptions, RegExp]> = [
      ['flow-def-both', { debounce: { periodMs: 100 }, batch: { maxSize: 2, maxWaitMs: 100 } }, /debounce and batch/],
      ['flow-def-limit', { concurrency: { limit: 0 } }, /concurrency\.limit/],
      ['flow-def-limit-frac', { concurrency: { limit: 1.5 } }, /concurrency\.limit/],
      ['flow-def-queued', { concurrency: { limit: 1, maxQueued: 0 } }, /concurrency\.maxQueued/],
      ['flow-def-throttle', { throttle: { limit: 3, periodMs: 0 } }, /throttle\.periodMs/],
      ['flow-def-throttle-limit', { throttle: { limit: -1, periodMs: 10 } }, /throttle\.limit/],
      ['flow-def-debounce', { debounce: { periodMs: 100, maxWaitMs: 50 } }, /debounce\.maxWaitMs/],
      ['flow-def-batch', { batch: { maxSize: 0, maxWaitMs: 100 } }, /batch\.maxSize/],
      ['flow-def-key', { concurrency: { limit: 1, key: 'tenant' as never } }, /concurrency\.key/],
    ];
    // A batch's run takes `{ items }`: it declares an `items` input, and no other.
    const noItems = (r: ReactorBuilder<{ n: number }>) => r.step('work', () => success(1), { n: r.input('n') });
    const extra = (r: ReactorBuilder<{ items: unknown[]; n: number }>) =>
      r.step('work', () => success(1), { items: r.input('items', { type: 'array' }), n: r.input('n') });
    const batch = { batch: { maxSize: 2, maxWaitMs: 100 } };
    const definitions: Array<[string, () => unknown, RegExp]> = [
      ...cases.map(([name, options, option]): [string, () => unknown, RegExp] => [
        name,
        () => defineReactor(name, step, options),
        option,
      ]),
      ['flow-def-no-items', () => defineReactor('flow-def-no-items', noItems, batch), /batch.*r\.input\('items'\)/],
      [
        'flow-def-extra-input',
        () => defineReactor('flow-def-extra-input', extra, batch),
        /batch.*only input is 'items'/,
      ],
    ];
    for (const [name, define, option] of definitions) {
      let error: unknown;
      try {
        define();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(DefinitionError);
      expect(error).toMatchObject({ code: 'DEFINITION_INVALID', reactorName: name });
      expect((error as Error).message).toContain(`'${name}'`);
      expect((error as Error).message).toMatch(option);
    }
  });

  it('a key function that throws refuses the start (ConfigurationError naming reactor and option); nothing is stored', async () => {
    const t = setup();
    const throwing = () => {
      throw new Error('no tenant');
    };
    const input = (r: ReactorBuilder<{ n: number }>) => r.step('work', () => success(1), { n: r.input('n') });
    for (const option of ['concurrency', 'throttle', 'debounce'] as const) {
      const name = `flow-key-${option}`;
      const options: ReactorOptions =
        option === 'concurrency'
          ? { concurrency: { key: throwing, limit: 1 } }
          : option === 'throttle'
            ? { throttle: { key: throwing, limit: 1, periodMs: 1_000 } }
            : { debounce: { key: throwing, periodMs: 1_000 } };
      const def = defineReactor(name, input, options);
      t.engine.register(def);
      const error = await t.engine
        .start(def, { n: 1 }, option === 'debounce' ? {} : { runId: `${name}-run` })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toMatchObject({ option, message: expect.stringContaining(`'${name}'`) });
      expect((error as Error).message).toContain('no tenant');
      await expect(t.storage.load(`${name}-run`)).resolves.toBeUndefined();
      expect((await t.engine.list({ reactor: name })).runs).toEqual([]);
    }
  });

  it('the flow sweep gives back the slot of a run that never gave it back, and the run queued behind it starts', async () => {
    const t = setup();
    const executed: number[] = [];
    const def = defineReactor(
      'flow-sweep',
      (r: ReactorBuilder<{ n: number }>) =>
        r.step('work', ({ n }: { n: number }) => (executed.push(n), success(n)), {
          n: r.input('n', { type: 'integer' }),
        }),
      { concurrency: { key: () => 'k', limit: 1 } },
    );
    t.engine.register(def);
    // A slot held by a run that has no record (its process died before storing it).
    expect(await t.flow.enter('flow-sweep', 'k', 'ghost', 1, 100)).toEqual({ state: 'admitted' });
    const behindGhost = await t.engine.start(def, { n: 1 });
    expect(behindGhost).toMatchObject({ flow: { state: 'queued', key: 'k', position: 1 } });
    await settle(t);
    expect(executed).toEqual([]);
    expect(await t.engine.recoverStalled({ graceMs: 0 })).toBeGreaterThanOrEqual(1);
    await settle(t);
    expect(executed).toEqual([1]);
    expect((await t.engine.get(behindGhost.runId))?.status).toBe('completed');

    // A slot re-entered by a run that finished (terminal record, slot not given back).
    expect(await t.flow.enter('flow-sweep', 'k', behindGhost.runId, 1, 100)).toEqual({ state: 'admitted' });
    const behindFinished = await t.engine.start(def, { n: 2 });
    expect(behindFinished).toMatchObject({ flow: { state: 'queued', position: 1 } });
    await settle(t);
    expect(executed).toEqual([1]);
    expect(await t.engine.recoverStalled({ graceMs: 0 })).toBeGreaterThanOrEqual(1);
    await settle(t);
    expect(executed).toEqual([1, 2]);
    expect((await t.engine.get(behindFinished.runId))?.status).toBe('completed');
    expect((await t.flow.inspect('flow-sweep', 'k', 10)).live).toEqual([]);

    // A run admitted to the slot whose job was never enqueued (its admitter died in between): the
    // sweep enqueues it, and only once the slot is older than the grace.
    const holder = await t.engine.start(def, { n: 3 });
    const admittedNoJob = await t.engine.start(def, { n: 4 });
    expect(admittedNoJob).toMatchObject({ flow: { state: 'queued', position: 1 } });
    // The holder's slot is given back in the store alone: the queued run is admitted, no job sent.
    expect(await t.flow.leave('flow-sweep', 'k', holder.runId, 1)).toEqual([admittedNoJob.runId]);
    await settle(t);
    expect(executed).toEqual([1, 2, 3]);
    expect((await t.engine.get(admittedNoJob.runId))?.status).toBe('pending');
    expect(await t.engine.recoverStalled({ graceMs: 60_000 })).toBe(0);
    await settle(t);
    expect(executed).toEqual([1, 2, 3]);
    await advance(t, 60_000);
    expect(await t.engine.recoverStalled({ graceMs: 60_000 })).toBe(1);
    await settle(t);
    expect(executed).toEqual([1, 2, 3, 4]);
    expect((await t.engine.get(admittedNoJob.runId))?.status).toBe('completed');
    expect((await t.flow.inspect('flow-sweep', 'k', 10)).live).toEqual([]);
  });

  it('list shows held-back runs (queued, delayed) by their creation time, beside the others', async () => {
    const t = setup();
    const gate = deferred();
    const def = defineReactor(
      'flow-listed',
      (r: ReactorBuilder<{ n: number }>) =>
        r.step('work', async ({ n }: { n: number }) => (await gate.promise, success(n)), {
          n: r.input('n', { type: 'integer' }),
        }),
      { concurrency: { key: () => 'k', limit: 1 }, throttle: { limit: 2, periodMs: 60_000 } },
    );
    t.engine.register(def);
    const created = t.clock.now();
    const running = await t.engine.start(def, { n: 1 });
    const queued = await t.engine.start(def, { n: 2 });
    const delayed = await t.engine.start(def, { n: 3 });
    expect(queued).toMatchObject({ flow: { state: 'queued' } });
    expect(delayed).toMatchObject({ flow: { state: 'delayed' } });
    const listed = await t.engine.list({ reactor: 'flow-listed', limit: 10 });
    expect(listed.runs.map((r) => r.runId).sort()).toEqual([running.runId, queued.runId, delayed.runId].sort());
    for (const run of listed.runs) expect(run.createdAt).toBe(created);
    gate.resolve();
  });

  it('a deploy that removes concurrency: the flow sweep starts the runs still queued, and empties the keys', async () => {
    const before = setup();
    const gate = deferred();
    const executed: number[] = [];
    const build = (r: ReactorBuilder<{ n: number }>) =>
      r.step('work', async ({ n }: { n: number }) => (executed.push(n), n === 1 && (await gate.promise), success(n)), {
        n: r.input('n', { type: 'integer' }),
      });
    const limited = defineReactor('flow-dropped', build, { concurrency: { key: () => 'k', limit: 1 } });
    before.engine.register(limited);
    const first = await before.engine.start(limited, { n: 1 });
    const queued = [await before.engine.start(limited, { n: 2 }), await before.engine.start(limited, { n: 3 })];
    expect(queued.map((o) => (o.status === 'dispatched' ? o.flow?.state : undefined))).toEqual(['queued', 'queued']);
    await until(() => executed.length === 1);

    // The new version of the app: the same reactor, no concurrency, on the same stores.
    const after = createTestEngine({
      clock: before.clock,
      logger: quiet,
      storage: before.storage,
      locks: before.locks,
      maps: before.maps,
      interrupts: before.interrupts,
      coordination: before.coordination,
      flow: before.flow,
    });
    after.engine.register(defineReactor('flow-dropped', build, {}));
    // Listed in the reactor set by its first enter: the sweep finds its keys.
    expect(await before.flow.reactors()).toEqual(['flow-dropped']);
    expect(await after.engine.recoverStalled({ graceMs: 60_000 })).toBeGreaterThanOrEqual(2);
    await until(() => executed.length === 3);
    await settle(after);
    for (const o of queued) expect((await after.engine.get(o.runId))?.status).toBe('completed');
    expect((await before.flow.inspect('flow-dropped', 'k', 10)).queued).toBe(0);
    gate.resolve();
    await settle(before);
    expect((await before.engine.get(first.runId))?.status).toBe('completed');
  });

  it('the flow sweep reads the key index of no reactor that never had runs in a concurrency key: one read of the reactor set', async () => {
    const t = setup();
    const build = (r: ReactorBuilder<{ n: number }>) =>
      r.step('work', ({ n }: { n: number }) => success(n), { n: r.input('n', { type: 'integer' }) });
    const plain = defineReactor('flow-sweep-plain', build, {});
    const throttled = defineReactor('flow-sweep-throttled', build, { throttle: { limit: 5, periodMs: 60_000 } });
    const gathered = defineReactor('flow-sweep-debounced', build, { debounce: { periodMs: 1_000 } });
    const limited = defineReactor('flow-sweep-limited', build, { concurrency: { key: () => 'k', limit: 1 } });
    for (const def of [plain, throttled, gathered, limited]) {
      t.engine.register(def);
      await t.engine.start(def, { n: 1 });
    }
    await advance(t, 1_000);
    const keys = jest.spyOn(t.flow, 'keys');
    const reactors = jest.spyOn(t.flow, 'reactors');
    await t.engine.recoverStalled({ graceMs: 0 });
    await t.engine.recoverStalled({ graceMs: 0 });
    // The reactor with concurrency is swept; the three others are not read (none is listed).
    expect(keys.mock.calls.map(([reactor]) => reactor)).toEqual(['flow-sweep-limited', 'flow-sweep-limited']);
    expect(reactors).toHaveBeenCalledTimes(2);
    expect(await t.flow.reactors()).toEqual(['flow-sweep-limited']);

    // Only reactors with concurrency registered: the reactor set is not read either.
    const only = setup();
    only.engine.register(limited);
    const onlyReactors = jest.spyOn(only.flow, 'reactors');
    await only.engine.recoverStalled({ graceMs: 0 });
    expect(onlyReactors).not.toHaveBeenCalled();
  });

  it('a gathered run carries the tags of the start that stored it; list finds it by tag', async () => {
    const t = setup();
    const def = defineReactor(
      'flow-tagged',
      (r: ReactorBuilder<{ n: number }>) =>
        r.step('work', ({ n }: { n: number }) => success(n), { n: r.input('n', { type: 'integer' }) }),
      { debounce: { periodMs: 1_000 } },
    );
    t.engine.register(def);
    const first = await t.engine.start(def, { n: 1 }, { tags: { tenant: 'acme' } });
    const second = await t.engine.start(def, { n: 2 }, { tags: { tenant: 'globex' } });
    expect(second.runId).toBe(first.runId);
    expect((await t.engine.get(first.runId))?.tags).toEqual({ tenant: 'acme' });
    const listed = await t.engine.list({ reactor: 'flow-tagged', tag: 'tenant=acme', limit: 10 });
    expect(listed.runs.map((r) => r.runId)).toEqual([first.runId]);
    await expect(t.engine.start(def, { n: 3 }, { tags: { 'bad key!': 'x' } })).rejects.toMatchObject({
      code: 'CONFIGURATION_INVALID',
    });
    await advance(t, 1_000);
    expect(await t.engine.get(first.runId)).toMatchObject({ status: 'completed', value: 2, tags: { tenant: 'acme' } });
  });
});
