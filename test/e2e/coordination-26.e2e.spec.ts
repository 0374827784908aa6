/**
 * Issue 26, coordination and maps, through `ReactorClient` on both runtimes (embedded, and Redis +
 * BullMQ):
 * - a rate limit is charged once per run that starts: never for a caller refused on the lock,
 *   never once per snooze of a background run waiting for the lock, never for a replay by
 *   idempotency key or run id (counted from the store's answers, and on Redis from the rate
 *   limit's counters);
 * - a rate-limited run gives back the lock and the semaphore slot it just took, at once (in the
 *   caller and in a worker): another run of the same key takes them straight away;
 * - a run that will not take its turn on an ordered lock gives it up at once: a replay by
 *   idempotency key or run id, a run halted by its period (in a worker and in the caller) and a run
 *   failed for its lock contended past `lockSnoozeMaxAttempts` leave no nonce behind, so the next
 *   run goes on now, not after the poison pill (an hour here, far past the test's timeout);
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

/** Lock, semaphore (one slot) and a rate limit of one run an hour, all on the account. */
@Reactor('c26-tight', {
  lock: { key: (i) => `c26-tight:${String(i.account)}`, ttlMs: 30_000 },
  semaphore: { key: (i) => `c26-tight-slot:${String(i.account)}`, limit: 1, leaseMs: 30_000 },
  rateLimit: { key: (i) => `c26-tight:${String(i.account)}`, limits: { hour: 1 } },
})
class TightReactor implements ReactorBlueprint<LockedInput> {
  build(r: ReactorBuilder<LockedInput>) {
    return r.step('work', ({ account }: LockedInput) => success(account), {
      account: r.input('account', { type: 'string' }),
    });
  }
}

/** The same lock and semaphore, no rate limit: refused at once (`waitMs` 0) while either is held. */
@Reactor('c26-tight-plain', {
  lock: { key: (i) => `c26-tight:${String(i.account)}`, ttlMs: 30_000 },
  semaphore: { key: (i) => `c26-tight-slot:${String(i.account)}`, limit: 1, leaseMs: 30_000 },
})
class TightPlainReactor implements ReactorBlueprint<LockedInput> {
  build(r: ReactorBuilder<LockedInput>) {
    return r.step('work', ({ account }: LockedInput) => success(account), {
      account: r.input('account', { type: 'string' }),
    });
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

/** An ordered lock (lenient) and a lock shared with `c26-locked-rate`, every run in a worker. */
@Reactor('c26-ordered-locked', {
  orderedLock: { key: () => 'c26-ledger-locked', poisonPillMs: POISON_PILL_MS, strict: false },
  lock: { key: (i) => `c26:${String(i.id)}`, ttlMs: 30_000 },
  background: { all: true },
})
class OrderedLockedReactor implements ReactorBlueprint<OrderedInput> {
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

const PROVIDERS = [
  LockedRateReactor,
  TightReactor,
  TightPlainReactor,
  OrderedReactor,
  OrderedCallerReactor,
  OrderedLockedReactor,
  MapElementReactor,
  MapOwnerReactor,
];
const OPTIONS = {
  rateLimits: { 'c26-rate': { hour: 10_000 } },
  snoozeDelayMs: 5,
  lockSnoozeMaxAttempts: 100_000,
};
const { prefix, redis } = useRedisPrefixes();
let redisPrefix: string | undefined;

/** Makes an app of the runtime; `overrides` replace options of OPTIONS (another Redis prefix each). */
type MakeApp = (overrides?: Partial<typeof OPTIONS>) => Promise<TestingModule>;

describe.each<[string, MakeApp]>([
  ['embedded', (overrides) => createEmbeddedApp(PROVIDERS, { ...OPTIONS, ...overrides })],
  [
    'redis + bullmq',
    async (overrides) => {
      const appPrefix = prefix('c26');
      redisPrefix ??= appPrefix;
      return (
        await createRedisApp(
          appPrefix,
          { ...OPTIONS, ...overrides, workerConcurrency: 16, sweeper: { enabled: false } },
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
  /** Rate-limit uses the store refused, by key. */
  const limited = new Map<string, number>();
  /** Owners whose lock, and whose semaphore slot, the store released. */
  const released = { lock: new Set<string>(), slot: new Set<string>() };

  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
    // Count what the store answers, in the very store the engine uses.
    const store = app.get<{ coordination: CoordinationStore }>(REACTOR_RUNTIME).coordination;
    const consumeRate = store.consumeRate.bind(store);
    store.consumeRate = async (key, windows): Promise<RateReply> => {
      const reply = await consumeRate(key, windows);
      if (reply.allowed) charged.set(key, (charged.get(key) ?? 0) + 1);
      else limited.set(key, (limited.get(key) ?? 0) + 1);
      return reply;
    };
    const releaseLock = store.releaseLock.bind(store);
    store.releaseLock = async (key, owner, fence) => {
      const reply = await releaseLock(key, owner, fence);
      released.lock.add(owner);
      return reply;
    };
    const releaseSemaphore = store.releaseSemaphore.bind(store);
    store.releaseSemaphore = async (key, owner) => {
      const reply = await releaseSemaphore(key, owner);
      released.slot.add(owner);
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

  /** The two ways a call names a run that may exist: an idempotency key, or the run id itself. */
  const REPLAYS: Array<[string, (name: string) => { idempotencyKey: string } | { runId: string }]> = [
    ['idempotency key', (name) => ({ idempotencyKey: `key-${name}-${runtime}` })],
    ['run id', (name) => ({ runId: `id-${name}-${runtime}` })],
  ];

  it('a rate-limited run gives back the lock and slot it just took, at once (in the caller)', async () => {
    const account = `tight-${runtime}`;
    expect(await client.run(TightReactor, { account })).toMatchObject({ status: 'completed' });
    await expect(client.run(TightReactor, { account })).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    // Another run of the account takes the lock and the slot straight away (refused at once if held).
    expect(await client.run(TightPlainReactor, { account })).toMatchObject({ status: 'completed' });
  });

  it('a rate-limited run gives back the lock and slot it just took, at once (in a worker)', async () => {
    const account = `tight-worker-${runtime}`;
    const limitedFor = () => [...limited].filter(([key]) => key.includes(account)).reduce((n, [, v]) => n + v, 0);
    expect(await client.run(TightReactor, { account })).toMatchObject({ status: 'completed' });
    expect(limitedFor()).toBe(0);
    // In a worker it is refused on the rate limit, and snoozes until the hour's window turns...
    const waiting = await client.start(TightReactor, { account });
    // (the refusal, and then the lock and slot it had taken given back: awaited, they follow the reply)
    await pollUntil(
      () => limitedFor() > 0 && released.lock.has(waiting.runId) && released.slot.has(waiting.runId),
      WAIT.timeoutMs,
    );
    // ...holding neither the lock nor the slot meanwhile.
    expect(await client.run(TightPlainReactor, { account })).toMatchObject({ status: 'completed' });
    expect(['pending', 'running']).toContain((await client.get(waiting.runId))?.status);
    await client.cancel(waiting.runId, 'done');
  });

  it.each(REPLAYS)("a replay by %s is not charged, and is not refused on its own run's lock", async (how, name) => {
    const account = `replay-${how.replace(' ', '-')}-${runtime}`;
    const options = name('locked');
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

  it.each(REPLAYS)(
    'a replay by %s gives its ordered-lock turn up at once: the next run does not wait the poison pill',
    async (how, name) => {
      const id = `r1-${how.replace(' ', '-')}-${runtime}`;
      const first = await client.start(OrderedReactor, { id, hold: true }, name('ordered'));
      const replay = await client.start(OrderedReactor, { id, hold: true }, name('ordered'));
      expect(replay).toMatchObject({ runId: first.runId, replayed: true });
      const next = await client.start(OrderedReactor, { id: `r2-${how.replace(' ', '-')}-${runtime}` });
      open(`ordered:${id}`);
      expect(await client.wait(first.runId, WAIT)).toMatchObject({ status: 'completed' });
      expect(await client.wait(next.runId, WAIT)).toMatchObject({ status: 'completed' });
      expect(events.filter((e) => e === `applied:${first.runId}`)).toHaveLength(1);
    },
  );

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

  it('a run failed for its lock contended past lockSnoozeMaxAttempts gives its ordered-lock turn up at once', async () => {
    // An app of its own that fails a run at its first refusal on the lock (lockSnoozeMaxAttempts 0).
    const strict = await createApp({ lockSnoozeMaxAttempts: 0 });
    try {
      const strictClient = strict.get(ReactorClient);
      const account = `contended-${runtime}`;
      const holder = strictClient.run(LockedRateReactor, { account, hold: true });
      await pollUntil(() => count(`locked:${account}:`) === 1, WAIT.timeoutMs);
      const first = await strictClient.start(OrderedLockedReactor, { id: account });
      expect(await strictClient.wait(first.runId, WAIT)).toMatchObject({
        status: 'failed',
        failure: { code: 'LOCK_CONTENDED' },
      });
      open(`locked:${account}`);
      expect(await holder).toMatchObject({ status: 'completed' });
      // The failed run's nonce was advanced: the next run goes on now, not after the hour's poison pill.
      const next = await strictClient.start(OrderedLockedReactor, { id: account });
      expect(await strictClient.wait(next.runId, WAIT)).toMatchObject({ status: 'completed' });
      expect(events).toContain(`applied:${next.runId}`);
      expect(events).not.toContain(`applied:${first.runId}`);
    } finally {
      await strict.close();
    }
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
