/**
 * Flow control of a reactor's starts (issue 24) on Redis and BullMQ, through the module with real
 * workers: fairness of concurrency queues per key under a 1,000-run backlog, queue bounds, slots
 * given back by every ending, throttle windows counted in Redis (by Redis `TIME`), debounce and
 * batch gathers, and a key function that throws.
 */
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { ConfigurationError, FlowQueueFullError } from '../../lib/core/errors';
import type { FlowHandle, RunOutcome } from '../../lib/core/results/run-outcome';
import { failure, halt, success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { cleanupPrefix, createTestRedis, scanKeys, uniquePrefix } from '../setup/redis';
import { createRedisApp, pollUntil, quitAndWait } from './e2e.fixtures';

const prefix = uniquePrefix('e2e-flow');
let redis: Redis;

/** A promise with its resolve function, to hold a step until the test opens it. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** The Redis server's time in ms (`TIME`), not this process's clock. */
async function redisNow(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
}

const flowOf = (outcome: RunOutcome): FlowHandle | undefined => (outcome as { flow?: FlowHandle }).flow;

// --- fairness ---------------------------------------------------------------------------------

const FAIR_LIMIT = 2;
const fair = {
  live: new Map<string, number>(),
  maxLive: new Map<string, number>(),
  done: new Map<string, number>(),
  aDoneAtFirstB: undefined as number | undefined,
  aStarted: gate(),
};
type Tenant = { tenant: string; n: number };

@Reactor('e2e-flow-fair', { concurrency: { key: (i) => String(i.tenant), limit: FAIR_LIMIT } })
class FairReactor implements ReactorBlueprint<Tenant> {
  build(r: ReactorBuilder<Tenant>) {
    return r.step(
      'work',
      async ({ tenant, n }: Tenant) => {
        const now = (fair.live.get(tenant) ?? 0) + 1;
        fair.live.set(tenant, now);
        fair.maxLive.set(tenant, Math.max(fair.maxLive.get(tenant) ?? 0, now));
        if (tenant === 'B' && fair.aDoneAtFirstB === undefined) fair.aDoneAtFirstB = fair.done.get('A') ?? 0;
        try {
          if (tenant === 'A') await fair.aStarted.promise;
          await new Promise((resolve) => setTimeout(resolve, 20)); // a few ms of work
        } finally {
          fair.live.set(tenant, fair.live.get(tenant)! - 1);
        }
        fair.done.set(tenant, (fair.done.get(tenant) ?? 0) + 1);
        return success(`${tenant}${n}`);
      },
      { tenant: r.input('tenant', { type: 'string' }), n: r.input('n', { type: 'integer' }) },
    );
  }
}

// --- queue bounds, get and wait ---------------------------------------------------------------

const bounded = { calls: [] as string[], first: gate() };

@Reactor('e2e-flow-bounded', { concurrency: { key: (i) => String(i.tenant), limit: 1, maxQueued: 2 } })
class BoundedReactor implements ReactorBlueprint<Tenant> {
  build(r: ReactorBuilder<Tenant>) {
    return r.step(
      'work',
      async ({ tenant, n }: Tenant, ctx: StepContext) => {
        bounded.calls.push(ctx.runId);
        if (tenant === 'A' && n === 0) await bounded.first.promise;
        return success(n);
      },
      { tenant: r.input('tenant', { type: 'string' }), n: r.input('n', { type: 'integer' }) },
      { retries: { maxAttempts: 3, baseDelayMs: 10 } },
    );
  }
}

// --- slots given back -------------------------------------------------------------------------

type Mode = { id: string; mode: 'ok' | 'gate' | 'fail' | 'halt' };
const release = { executed: [] as string[], undone: [] as string[], gates: new Map<string, ReturnType<typeof gate>>() };

@Reactor('e2e-flow-release', { concurrency: { limit: 1 } })
class ReleaseReactor implements ReactorBlueprint<Mode> {
  build(r: ReactorBuilder<Mode>) {
    const id = r.input('id', { type: 'string' });
    const mode = r.input('mode', { type: 'string' });
    const prep = r.step(
      'prep',
      {
        run: async ({ id, mode }: Mode) => {
          release.executed.push(id);
          if (mode === 'gate') await release.gates.get(id)!.promise;
          return success(id);
        },
        undo: (_result: unknown, { id }: Mode) => void release.undone.push(id),
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
  }
}

// --- throttle ---------------------------------------------------------------------------------

const THROTTLE_PERIOD = 1_000;
const windowKey = (window: number | string) => `${prefix}test:window:${window}`;

@Reactor('e2e-flow-throttle', { throttle: { limit: 3, periodMs: THROTTLE_PERIOD } })
class ThrottleReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step(
      'work',
      async ({ n }: { n: number }) => {
        await redis.incr(windowKey(Math.floor((await redisNow()) / THROTTLE_PERIOD)));
        return success(n);
      },
      { n: r.input('n', { type: 'integer' }) },
    );
  }
}

// --- debounce and batch -----------------------------------------------------------------------

type Event = { account: string; n: number };
const debounced: Array<{ runId: string; account: string; n: number }> = [];

@Reactor('e2e-flow-debounce', { debounce: { key: (i) => String(i.account), periodMs: 300, maxWaitMs: 3_000 } })
class DebounceReactor implements ReactorBlueprint<Event> {
  build(r: ReactorBuilder<Event>) {
    return r.step(
      'work',
      ({ account, n }: Event, ctx: StepContext) => (debounced.push({ runId: ctx.runId, account, n }), success(n)),
      { account: r.input('account', { type: 'string' }), n: r.input('n', { type: 'integer' }) },
    );
  }
}

const BATCH_WAIT = 2_000;
const batched: Array<{ runId: string; items: unknown[]; at: number }> = [];

@Reactor('e2e-flow-batch', { batch: { maxSize: 3, maxWaitMs: BATCH_WAIT } })
class BatchReactor implements ReactorBlueprint<{ items: unknown[] }> {
  build(r: ReactorBuilder<{ items: unknown[] }>) {
    return r.step(
      'work',
      async ({ items }: { items: unknown[] }, ctx: StepContext) => {
        batched.push({ runId: ctx.runId, items, at: await redisNow() });
        return success(items.length);
      },
      { items: r.input('items', { type: 'array' }) },
    );
  }
}

// --- a key function that throws ----------------------------------------------------------------

@Reactor('e2e-flow-bad-key', {
  concurrency: {
    key: () => {
      throw new Error('no tenant');
    },
    limit: 1,
  },
})
class BadKeyReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step('work', ({ n }: { n: number }) => success(n), { n: r.input('n', { type: 'integer' }) });
  }
}

describe('flow control on Redis and BullMQ (e2e)', () => {
  let app: TestingModule;
  let client: ReactorClient;

  beforeAll(async () => {
    redis = createTestRedis();
    ({ app, client } = await createRedisApp(
      prefix,
      { sweeper: { enabled: false }, workerConcurrency: 10 },
      {
        providers: [
          FairReactor,
          BoundedReactor,
          ReleaseReactor,
          ThrottleReactor,
          DebounceReactor,
          BatchReactor,
          BadKeyReactor,
        ],
      },
    ));
  });

  afterAll(async () => {
    fair.aStarted.open();
    bounded.first.open();
    for (const g of release.gates.values()) g.open();
    await app?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('fairness: tenant A starts 1,000 runs, then B starts 10: B starts within `limit` of A completions; never more than `limit` live per key; all complete', async () => {
    const L = FAIR_LIMIT;
    const aStarts: RunOutcome[] = [];
    for (let n = 0; n < 1_000; n++) aStarts.push(await client.start(FairReactor, { tenant: 'A', n }));
    for (const [i, outcome] of aStarts.entries()) {
      expect(outcome.status).toBe('dispatched');
      if (i < L) expect(flowOf(outcome)).toBeUndefined();
      else expect(flowOf(outcome)).toEqual({ state: 'queued', key: 'A', position: i - L + 1 });
    }
    // Only A's L admitted runs are in the worker queue: its backlog waits in its key's queue.
    await pollUntil(() => fair.live.get('A') === L, 10_000);

    fair.aStarted.open();
    await pollUntil(() => (fair.done.get('A') ?? 0) >= 10, 10_000);
    const aDoneAtBStart = fair.done.get('A')!;
    const bStarts: RunOutcome[] = [];
    for (let n = 0; n < 10; n++) bStarts.push(await client.start(FairReactor, { tenant: 'B', n }));
    expect(flowOf(bStarts[0])).toBeUndefined();
    expect(flowOf(bStarts[L])).toEqual({ state: 'queued', key: 'B', position: 1 });

    await pollUntil(() => fair.done.get('A') === 1_000 && fair.done.get('B') === 10, 60_000);
    expect(fair.aDoneAtFirstB).toBeDefined();
    expect(fair.aDoneAtFirstB! - aDoneAtBStart).toBeLessThanOrEqual(L);
    expect(fair.maxLive.get('A')).toBe(L);
    expect(fair.maxLive.get('B')).toBeLessThanOrEqual(L);
    const runIds = [...aStarts, ...bStarts].map((o) => o.runId);
    const outcomes: RunOutcome[] = [];
    for (let i = 0; i < runIds.length; i += 100) {
      outcomes.push(
        ...(await Promise.all(runIds.slice(i, i + 100).map((id) => client.wait(id, { timeoutMs: 10_000 })))),
      );
    }
    expect(outcomes.filter((o) => o.status === 'completed')).toHaveLength(1_010);
    const queues = await client.flowQueues(FairReactor);
    for (const key of queues?.keys ?? []) expect(key).toMatchObject({ live: [], queued: 0 });
  }, 90_000);

  it('a queued run is not refused and spends no retry; past maxQueued FLOW_QUEUE_FULL stores nothing; get and wait follow a queued run', async () => {
    const first = await client.start(BoundedReactor, { tenant: 'A', n: 0 });
    await pollUntil(() => bounded.calls.length === 1, 10_000);
    const second = await client.run(BoundedReactor, { tenant: 'A', n: 1 });
    const third = await client.start(BoundedReactor, { tenant: 'A', n: 2 });
    expect(second).toMatchObject({ status: 'dispatched', flow: { state: 'queued', key: 'A', position: 1 } });
    expect(third).toMatchObject({ status: 'dispatched', flow: { state: 'queued', key: 'A', position: 2 } });

    const refused = await client
      .start(BoundedReactor, { tenant: 'A', n: 3 }, { runId: 'e2e-flow-refused' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FlowQueueFullError);
    expect(refused).toMatchObject({ code: 'FLOW_QUEUE_FULL', reactorName: 'e2e-flow-bounded', key: 'A', queued: 2 });
    expect((refused as Error).message).toContain("'e2e-flow-bounded'");
    expect(await client.get('e2e-flow-refused')).toBeUndefined();
    expect((await client.flowQueues(BoundedReactor, { peek: 10 }))?.keys.find((k) => k.key === 'A')).toMatchObject({
      live: [{ runId: first.runId }],
      queued: 2,
      next: [second.runId, third.runId],
    });

    // `list` shows the running and the queued runs by their creation time (a queued run sits at
    // the end of time in the index of live runs, never in the list).
    const listed = await client.list({ reactor: 'e2e-flow-bounded', limit: 10 });
    expect(listed.runs.map((r) => r.runId).sort()).toEqual([first.runId, second.runId, third.runId].sort());
    for (const run of listed.runs) {
      expect(run.createdAt).toBe((await client.get(run.runId))!.createdAt);
    }

    // A queued run: pending, with its handle; `wait` resolves once it has run.
    expect(await client.get(second.runId)).toMatchObject({
      status: 'pending',
      outcome: { status: 'dispatched', flow: { state: 'queued', key: 'A' } },
    });
    const waited = client.wait(second.runId, { timeoutMs: 10_000 });
    bounded.first.open();
    expect(await waited).toMatchObject({ status: 'completed', value: 1 });
    for (const id of [first.runId, second.runId, third.runId]) {
      expect(await client.wait(id, { timeoutMs: 10_000 })).toMatchObject({
        status: 'completed',
        attempts: { work: 1 },
      });
      expect((await client.get(id))?.retryCount).toBeUndefined();
      expect(bounded.calls.filter((c) => c === id)).toHaveLength(1);
    }
  });

  it('a failed (rolled back), halted or cancelled run gives its slot back; a cancelled queued run never executes', async () => {
    const start = (id: string, mode: Mode['mode']) =>
      client.start(ReleaseReactor, { id, mode }, { runId: `e2e-flow-release-${id}` });
    release.gates.set('r1', gate());
    await start('r1', 'gate');
    await pollUntil(() => release.executed.includes('r1'), 10_000);
    const queued = [
      await start('r2', 'fail'),
      await start('r3', 'halt'),
      await start('r4', 'ok'),
      await start('r5', 'ok'),
    ];
    queued.forEach((o, i) => expect(flowOf(o)).toEqual({ state: 'queued', key: '', position: i + 1 }));
    expect(await client.cancel('e2e-flow-release-r4', 'not needed')).toMatchObject({ status: 'cancelled' });

    release.gates.get('r1')!.open();
    const ids = ['r1', 'r2', 'r3', 'r4', 'r5'].map((id) => `e2e-flow-release-${id}`);
    const outcomes = await Promise.all(ids.map((id) => client.wait(id, { timeoutMs: 10_000 })));
    expect(outcomes.map((o) => o.status)).toEqual(['completed', 'failed', 'halted', 'cancelled', 'completed']);
    expect(release.executed).toEqual(['r1', 'r2', 'r3', 'r5']);
    expect(release.undone).toContain('r2');

    // A running run cancelled gives its slot back when it ends.
    release.gates.set('r6', gate());
    await start('r6', 'gate');
    await pollUntil(() => release.executed.includes('r6'), 10_000);
    expect(flowOf(await start('r7', 'ok'))).toMatchObject({ state: 'queued', position: 1 });
    await client.cancel('e2e-flow-release-r6', 'stop');
    release.gates.get('r6')!.open();
    expect(await client.wait('e2e-flow-release-r6', { timeoutMs: 10_000 })).toMatchObject({ status: 'cancelled' });
    expect(await client.wait('e2e-flow-release-r7', { timeoutMs: 10_000 })).toMatchObject({ status: 'completed' });
    expect((await client.flowQueues(ReleaseReactor))?.keys.find((k) => k.key === '')).toMatchObject({
      live: [],
      queued: 0,
    });
  });

  it('throttle: 10 starts at once run at most 3 per window, counted in Redis by Redis TIME', async () => {
    // Start early in a window (Redis time), so the three that go now also run in it.
    await pollUntil(async () => (await redisNow()) % THROTTLE_PERIOD < 300, 5_000);
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, n) => client.start(ThrottleReactor, { n })));
    const handles = outcomes.map(flowOf);
    expect(handles.filter((h) => h === undefined)).toHaveLength(3);
    const delayed = handles.filter((h): h is FlowHandle => h !== undefined);
    for (const h of delayed) expect(h).toMatchObject({ state: 'delayed', key: '' });
    const startAts = delayed.map((h) => h.startAt!).sort((a, b) => a - b);
    const first = startAts[0];
    expect(first % THROTTLE_PERIOD).toBe(0);
    expect(startAts).toEqual([0, 0, 0, 1, 1, 1, 2].map((k) => first + k * THROTTLE_PERIOD));

    for (const o of outcomes)
      expect(await client.wait(o.runId, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed' });
    const keys = await scanKeys(redis, `${prefix}test:window:*`);
    const counts = await Promise.all(keys.map(async (k) => Number(await redis.get(k))));
    expect(Math.max(...counts)).toBeLessThanOrEqual(3);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(10);
    expect(keys.length).toBeGreaterThanOrEqual(4);
  });

  it('debounce: starts of one key collapse into one run with the last inputs; another key has its own; invalid inputs fail a run of their own', async () => {
    const handles: RunOutcome[] = [];
    for (let n = 1; n <= 5; n++) handles.push(await client.start(DebounceReactor, { account: 'a', n }));
    const other = await client.start(DebounceReactor, { account: 'b', n: 9 });
    const invalid = await client.start(DebounceReactor, { account: 'a', n: 'six' as unknown as number });
    const runId = handles[0].runId;
    for (const h of handles)
      expect(h).toMatchObject({ status: 'dispatched', runId, flow: { state: 'debounced', key: 'a' } });
    expect(other.runId).not.toBe(runId);
    expect(invalid).toMatchObject({ status: 'failed', failure: { code: 'INPUT_VALIDATION' } });
    expect(invalid.runId).not.toBe(runId);
    expect(await client.get(runId)).toMatchObject({ status: 'pending' });

    expect(await client.wait(runId, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', value: 5 });
    expect(await client.wait(other.runId, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', value: 9 });
    expect(debounced.filter((d) => d.runId === runId)).toEqual([{ runId, account: 'a', n: 5 }]);
    expect(await client.get(runId)).toMatchObject({ inputs: { account: 'a', n: 5 } });
  });

  it('batch: starts are collected into runs of { items } in start order, at once when full, else after maxWaitMs', async () => {
    const t0 = await redisNow();
    const handles: RunOutcome[] = [];
    for (let n = 1; n <= 7; n++) handles.push(await client.start('e2e-flow-batch', n));
    for (const h of handles) expect(h).toMatchObject({ status: 'dispatched', flow: { state: 'batched', key: '' } });
    const ids = handles.map((h) => h.runId);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(new Set(ids.slice(3, 6)).size).toBe(1);
    expect(new Set(ids).size).toBe(3);

    // The full batches start at once; the last one waits for maxWaitMs.
    expect(await client.wait(ids[0], { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', value: 3 });
    expect(await client.wait(ids[3], { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', value: 3 });
    expect(await client.get(ids[6])).toMatchObject({ status: 'pending', outcome: { flow: { state: 'batched' } } });
    expect(await client.wait(ids[6], { timeoutMs: 10_000 })).toMatchObject({ status: 'completed', value: 1 });
    const at = (id: string) => batched.find((b) => b.runId === id)!;
    expect(at(ids[0]).items).toEqual([1, 2, 3]);
    expect(at(ids[3]).items).toEqual([4, 5, 6]);
    expect(at(ids[6]).items).toEqual([7]);
    expect(at(ids[0]).at).toBeLessThan(t0 + BATCH_WAIT);
    expect(at(ids[3]).at).toBeLessThan(t0 + BATCH_WAIT);
    expect(at(ids[6]).at).toBeGreaterThanOrEqual(flowOf(handles[6])!.startAt!);
    expect(await client.get(ids[0])).toMatchObject({ inputs: { items: [1, 2, 3] } });
  });

  it('a key function that throws refuses the start (ConfigurationError naming reactor and option); nothing is stored', async () => {
    const error = await client
      .start(BadKeyReactor, { n: 1 }, { runId: 'e2e-flow-bad-key-run' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error).toMatchObject({ option: 'concurrency', message: expect.stringContaining("'e2e-flow-bad-key'") });
    expect(await client.get('e2e-flow-bad-key-run')).toBeUndefined();
    expect((await client.list({ reactor: 'e2e-flow-bad-key' })).runs).toEqual([]);
  });
});
