/**
 * Issue 26, coordination and maps, through `ReactorClient` on both runtimes (embedded, and Redis +
 * BullMQ):
 * - a rate limit is charged once per run that starts: never for a caller refused on the lock,
 *   never once per snooze of a background run waiting for the lock, never for a replay by
 *   idempotency key (counted from the store's answers, and on Redis from the rate limit's
 *   counters);
 * - a run that will not take its turn on an ordered lock gives it up at once: an idempotent replay
 *   and a run halted by its period (in a worker and in the caller) leave no nonce behind, so the
 *   next run goes on now, not after the poison pill (an hour here, far past the test's timeout);
 * - once a cancel of a run is stored, no element of its fan-out map that has not started starts;
 *   the elements in flight finish and are undone, and the run ends cancelled.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import { REACTOR_RUNTIME } from '../../lib/config';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import type { CoordinationStore, RateReply } from '../../lib/core/ports/coordination-store.port';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { scanKeys } from '../setup/redis';
import { createEmbeddedApp, createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 20_000 };
/** Far past every wait of this file: a run that waited for it would fail the test. */
const POISON_PILL_MS = 3_600_000;

/** Gates by name: a step waits at its gate until the test opens it. */
const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
function gate(name: string): Promise<void> {
  let entry = gates.get(name);
  if (!entry) {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    gates.set(name, (entry = { promise, open }));
  }
  return entry.promise;
}
function open(name: string): void {
  void gate(name);
  gates.get(name)!.open();
}

/** What steps did, by name: `<what>:<key>` entries. */
const events: string[] = [];
const count = (prefix: string) => events.filter((e) => e.startsWith(prefix)).length;

type LockedInput = { account: string; hold?: boolean };

@Reactor('c26-locked-rate', {
  lock: { key: (i) => `c26:${String(i.account)}`, ttlMs: 30_000 },
  rateLimit: 'c26-rate',
})
class LockedRateReactor implements ReactorBlueprint<LockedInput> {
  build(r: ReactorBuilder<LockedInput>) {
    return r.step(
      'work',
      async ({ account, hold }: LockedInput, ctx: StepContext) => {
        events.push(`locked:${account}:${ctx.runId}`);
        if (hold) await gate(`locked:${account}`);
        return success(account);
      },
      {
        account: r.input('account', { type: 'string' }),
        hold: r.input('hold', { type: 'boolean', optional: true }),
      },
    );
  }
}

type OrderedInput = { id: string; hold?: boolean };

function orderedBuild(r: ReactorBuilder<OrderedInput>) {
  return r.step(
    'apply',
    async ({ id, hold }: OrderedInput, ctx: StepContext) => {
      if (hold) await gate(`ordered:${id}`);
      events.push(`applied:${ctx.runId}`);
      return success(id);
    },
    { id: r.input('id', { type: 'string' }), hold: r.input('hold', { type: 'boolean', optional: true }) },
  );
}

/** An ordered lock with a period per `id`, every run in a worker. */
@Reactor('c26-ordered', {
  orderedLock: { key: () => 'c26-ledger', poisonPillMs: POISON_PILL_MS },
  period: { key: (i) => `c26-ordered:${String(i.id)}`, every: 'day' },
  background: { all: true },
})
class OrderedReactor implements ReactorBlueprint<OrderedInput> {
  build(r: ReactorBuilder<OrderedInput>) {
    return orderedBuild(r);
  }
}

/** The same, run by the caller (a run whose turn has not come is handed to a worker). */
@Reactor('c26-ordered-caller', {
  orderedLock: { key: () => 'c26-ledger-caller', poisonPillMs: POISON_PILL_MS },
  period: { key: (i) => `c26-ordered-caller:${String(i.id)}`, every: 'day' },
})
class OrderedCallerReactor implements ReactorBlueprint<OrderedInput> {
  build(r: ReactorBuilder<OrderedInput>) {
    return orderedBuild(r);
  }
}

type ElementInput = { index: number; tag: string };

@Reactor('c26-map-element')
class MapElementReactor implements ReactorBlueprint<ElementInput> {
  build(r: ReactorBuilder<ElementInput>) {
    return r.step(
      'work',
      {
        run: async ({ index, tag }: ElementInput) => {
          events.push(`element:${tag}:${index}`);
          await gate(`map:${tag}`);
          return success(index);
        },
        undo: (_value: number, { index, tag }: ElementInput) => void events.push(`undo:${tag}:${index}`),
      },
      { index: r.input('index', { type: 'integer' }), tag: r.input('tag', { type: 'string' }) },
    );
  }
}

const BATCH = 4;
const ELEMENTS = 20;

@Reactor('c26-map-owner', { background: { all: true } })
class MapOwnerReactor implements ReactorBlueprint<{ tag: string; items: number[] }> {
  build(r: ReactorBuilder<{ tag: string; items: number[] }>) {
    const tag = r.input('tag', { type: 'string' });
    return r.map('each', {
      source: r.input('items', { type: 'array' }),
      element: MapElementReactor,
      inputs: (item) => ({ index: item, tag }),
      fanOut: { batchSize: BATCH },
    });
  }
}

const PROVIDERS = [LockedRateReactor, OrderedReactor, OrderedCallerReactor, MapElementReactor, MapOwnerReactor];
const OPTIONS = {
  rateLimits: { 'c26-rate': { hour: 10_000 } },
  snoozeDelayMs: 5,
  lockSnoozeMaxAttempts: 100_000,
};
const { prefix, redis } = useRedisPrefixes();
let redisPrefix: string | undefined;

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS, OPTIONS)],
  [
    'redis + bullmq',
    async () => {
      redisPrefix = prefix('c26');
      return (
        await createRedisApp(
          redisPrefix,
          { ...OPTIONS, workerConcurrency: 16, sweeper: { enabled: false } },
          { providers: PROVIDERS },
        )
      ).app;
    },
  ],
])('issue 26 coordination and maps on the %s runtime', (runtime, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  /** Rate-limit uses the store granted, by key. */
  const charged = new Map<string, number>();
  /** Lock takes the store refused, by owner. */
  const refused = new Map<string, number>();

  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
    // Count what the store answers, in the very store the engine uses.
    const store = app.get<{ coordination: CoordinationStore }>(REACTOR_RUNTIME).coordination;
    const consumeRate = store.consumeRate.bind(store);
    store.consumeRate = async (key, windows): Promise<RateReply> => {
      const reply = await consumeRate(key, windows);
      if (reply.allowed) charged.set(key, (charged.get(key) ?? 0) + 1);
      return reply;
    };
    const acquireLock = store.acquireLock.bind(store);
    store.acquireLock = async (key, owner, ttlMs) => {
      const reply = await acquireLock(key, owner, ttlMs);
      if (!reply.acquired) refused.set(owner, (refused.get(owner) ?? 0) + 1);
      return reply;
    };
  });
  afterAll(async () => {
    for (const entry of gates.values()) entry.open();
    await app?.close();
  });

  /** On Redis: the uses counted in the rate limit's counters (every window key of it). */
  async function countedOnRedis(name: string): Promise<number> {
    const keys = await scanKeys(redis(), `${redisPrefix}:{rate:${encodeURIComponent(`named:${name}`)}}:*`);
    const values = await Promise.all(keys.map((key) => redis().get(key)));
    return values.reduce((sum, value) => sum + Number(value ?? 0), 0);
  }

  it('a rate limit is charged once per run that starts: not for a caller refused on the lock, not per snooze', async () => {
    const account = `acct-${runtime}`;
    const holder = client.run(LockedRateReactor, { account, hold: true });
    await pollUntil(() => count(`locked:${account}:`) === 1, WAIT.timeoutMs);
    expect(charged.get('named:c26-rate')).toBe(1);

    // A caller refused on the lock: nothing stored, nothing charged.
    await expect(client.run(LockedRateReactor, { account }, { runId: `refused-${runtime}` })).rejects.toMatchObject({
      code: 'LOCK_CONTENDED',
    });
    const afterRefusedCaller = charged.get('named:c26-rate');

    // Ten background runs wait for the lock, each snoozing several times.
    const waiting: string[] = [];
    for (let i = 0; i < 10; i++) {
      waiting.push((await client.start(LockedRateReactor, { account }, { runId: `waiting-${runtime}-${i}` })).runId);
    }
    await pollUntil(() => waiting.every((runId) => (refused.get(runId) ?? 0) >= 3), WAIT.timeoutMs);
    const afterSnoozes = charged.get('named:c26-rate');

    open(`locked:${account}`);
    expect(await holder).toMatchObject({ status: 'completed' });
    for (const runId of waiting) expect(await client.wait(runId, WAIT)).toMatchObject({ status: 'completed' });
    // The holder and the ten: eleven runs started, eleven charges.
    expect({ afterRefusedCaller, afterSnoozes, atTheEnd: charged.get('named:c26-rate') }).toEqual({
      afterRefusedCaller: 1,
      afterSnoozes: 1,
      atTheEnd: 11,
    });
    if (redisPrefix && runtime !== 'embedded') expect(await countedOnRedis('c26-rate')).toBe(11);
  });

  it("a replay by idempotency key is not charged, and is not refused on its own run's lock", async () => {
    const account = `replay-${runtime}`;
    const options = { idempotencyKey: `key-${runtime}` };
    const first = client.run(LockedRateReactor, { account, hold: true }, options);
    await pollUntil(() => count(`locked:${account}:`) === 1, WAIT.timeoutMs);
    const before = charged.get('named:c26-rate');
    const replay = client.run(LockedRateReactor, { account, hold: true }, options);
    const replayStarted = client.start(LockedRateReactor, { account, hold: true }, options);
    expect(await replayStarted).toMatchObject({ replayed: true });
    open(`locked:${account}`);
    const outcome = await first;
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(await replay).toMatchObject({ status: 'completed', runId: outcome.runId, replayed: true });
    expect(charged.get('named:c26-rate')).toBe(before);
    expect(count(`locked:${account}:`)).toBe(1);
  });

  it('an idempotent replay gives its ordered-lock turn up at once: the next run does not wait the poison pill', async () => {
    const first = await client.start(OrderedReactor, { id: `r1-${runtime}`, hold: true }, { idempotencyKey: 'k1' });
    const replay = await client.start(OrderedReactor, { id: `r1-${runtime}`, hold: true }, { idempotencyKey: 'k1' });
    expect(replay).toMatchObject({ runId: first.runId, replayed: true });
    const next = await client.start(OrderedReactor, { id: `r2-${runtime}` });
    open(`ordered:r1-${runtime}`);
    expect(await client.wait(first.runId, WAIT)).toMatchObject({ status: 'completed' });
    expect(await client.wait(next.runId, WAIT)).toMatchObject({ status: 'completed' });
    expect(events.filter((e) => e === `applied:${first.runId}`)).toHaveLength(1);
  });

  it('a run halted by its period gives its ordered-lock turn up at once (in a worker)', async () => {
    const id = `p-${runtime}`;
    const first = await client.start(OrderedReactor, { id });
    expect(await client.wait(first.runId, WAIT)).toMatchObject({ status: 'completed' });
    const halted = await client.start(OrderedReactor, { id });
    const next = await client.start(OrderedReactor, { id: `q-${runtime}` });
    expect(await client.wait(halted.runId, WAIT)).toMatchObject({ status: 'halted', reason: 'period' });
    expect(await client.wait(next.runId, WAIT)).toMatchObject({ status: 'completed' });
  });

  it('a run halted by its period gives its ordered-lock turn up at once (in the caller)', async () => {
    const id = `pc-${runtime}`;
    expect(await client.run(OrderedCallerReactor, { id })).toMatchObject({ status: 'completed' });
    // Held by a run whose turn comes after the halted one.
    expect(await client.run(OrderedCallerReactor, { id })).toMatchObject({ status: 'halted', reason: 'period' });
    const next = await client.run(OrderedCallerReactor, { id: `qc-${runtime}` });
    expect(next.status === 'completed' ? next : await client.wait(next.runId, WAIT)).toMatchObject({
      status: 'completed',
    });
  });

  it('cancel of a fan-out map: no element that has not started starts; those in flight are undone', async () => {
    const tag = `m-${runtime}`;
    const items = Array.from({ length: ELEMENTS }, (_, i) => i);
    const started = await client.start(MapOwnerReactor, { tag, items });
    // The first window is in flight, held at the gate.
    await pollUntil(() => count(`element:${tag}:`) === BATCH, WAIT.timeoutMs);
    await client.cancel(started.runId, 'stop');
    open(`map:${tag}`);
    expect(await client.wait(started.runId, WAIT)).toMatchObject({ status: 'cancelled' });
    const ran = events.filter((e) => e.startsWith(`element:${tag}:`));
    expect(ran.sort()).toEqual([0, 1, 2, 3].map((i) => `element:${tag}:${i}`));
    const undone = events.filter((e) => e.startsWith(`undo:${tag}:`));
    expect(undone.sort()).toEqual([0, 1, 2, 3].map((i) => `undo:${tag}:${i}`));
  });
});
