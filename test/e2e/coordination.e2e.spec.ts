/**
 * Coordination on Redis and BullMQ through the module: a contended lock refused to a caller with
 * nothing stored, a named rate limit, a period halting a second run, and an ordered lock applying
 * background runs in start order (the runs themselves in the module's worker).
 */
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { cleanupPrefix, createTestRedis, scanKeys, uniquePrefix } from '../setup/redis';
import { createRedisApp, pollUntil, quitAndWait } from './e2e.fixtures';

type Input = { id: string; seq?: number };
const gates = new Map<string, Promise<void>>();
const applied: number[] = [];

@Reactor('e2e-coord-lock', { lock: { key: (i) => `account:${String(i.id)}`, ttlMs: 5_000 } })
class LockedReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return r.step('work', async ({ id }: Input) => (await gates.get(id), success(id)), {
      id: r.input('id', { type: 'string' }),
    });
  }
}

@Reactor('e2e-coord-rate', { rateLimit: 'e2e-api' })
class RateReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return r.step('work', ({ id }: Input) => success(id), { id: r.input('id', { type: 'string' }) });
  }
}

@Reactor('e2e-coord-period', { period: { key: (i) => `report:${String(i.id)}`, every: 'day' } })
class PeriodReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return r.step('work', ({ id }: Input) => success(id), { id: r.input('id', { type: 'string' }) });
  }
}

@Reactor('e2e-coord-ordered', { orderedLock: { key: () => 'ledger' }, background: { all: true } })
class OrderedReactor implements ReactorBlueprint<{ id: string; seq: number }> {
  build(r: ReactorBuilder<{ id: string; seq: number }>) {
    return r.step(
      'apply',
      async ({ seq }: { seq: number }) => {
        if (seq === 1) await gates.get('ordered-first');
        applied.push(seq);
        return success(seq);
      },
      { seq: r.input('seq', { type: 'number' }) },
    );
  }
}

describe('coordination on Redis and BullMQ (e2e)', () => {
  const prefix = uniquePrefix('e2e-coord');
  let redis: Redis;
  let app: TestingModule;
  let client: ReactorClient;

  beforeAll(async () => {
    redis = createTestRedis();
    ({ app, client } = await createRedisApp(
      prefix,
      {
        sweeper: { enabled: false },
        snoozeDelayMs: 20,
        lockSnoozeMaxAttempts: 3,
        workerConcurrency: 8,
        rateLimits: { 'e2e-api': { minute: 2 } },
      },
      { providers: [LockedReactor, RateReactor, PeriodReactor, OrderedReactor] },
    ));
  });

  afterAll(async () => {
    await app?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('a contended lock is refused to the caller (LOCK_CONTENDED, retryAfterMs), nothing stored; free once the holder ends', async () => {
    let open!: () => void;
    gates.set('a', new Promise<void>((resolve) => (open = resolve)));
    const holder = client.run(LockedReactor, { id: 'a' });
    await pollUntil(async () => (await scanKeys(redis, `${prefix}*lock*account*`)).length > 0, 5_000);
    const refused = await client.run(LockedReactor, { id: 'a' }, { runId: 'e2e-coord-refused' }).catch((e) => e);
    expect(refused).toMatchObject({ code: 'LOCK_CONTENDED', key: 'account:a' });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(5_000);
    expect(await client.get('e2e-coord-refused')).toBeUndefined();
    open();
    expect(await holder).toMatchObject({ status: 'completed' });
    expect(await client.run(LockedReactor, { id: 'a' })).toMatchObject({ status: 'completed' });
  });

  it('a background run waiting for a held lock fails LOCK_CONTENDED after lockSnoozeMaxAttempts snoozes (its BullMQ job keeps the count)', async () => {
    let open!: () => void;
    gates.set('cap', new Promise<void>((resolve) => (open = resolve)));
    const holder = client.run(LockedReactor, { id: 'cap' });
    try {
      await pollUntil(async () => (await scanKeys(redis, `${prefix}*lock*account*cap*`)).length > 0, 5_000);
      const started = await client.start(LockedReactor, { id: 'cap' });
      const outcome = await client.wait(started.runId, { timeoutMs: 10_000 });
      expect(outcome).toMatchObject({ status: 'failed', failure: { code: 'LOCK_CONTENDED' } });
    } finally {
      open();
    }
    expect(await holder).toMatchObject({ status: 'completed' });
  });

  it('a named rate limit counts runs across calls: the third in the window is refused with its wait', async () => {
    expect((await client.run(RateReactor, { id: '1' })).status).toBe('completed');
    expect((await client.run(RateReactor, { id: '2' })).status).toBe('completed');
    const refused = await client.run(RateReactor, { id: '3' }).catch((e) => e);
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', key: 'named:e2e-api' });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('a period: the second run in the day halts with reason period', async () => {
    expect((await client.run(PeriodReactor, { id: 'r1' })).status).toBe('completed');
    expect(await client.run(PeriodReactor, { id: 'r1' })).toMatchObject({ status: 'halted', reason: 'period' });
    expect((await client.run(PeriodReactor, { id: 'r2' })).status).toBe('completed');
  });

  it('an ordered lock applies background runs in start order, whatever the worker picks first', async () => {
    let open!: () => void;
    gates.set('ordered-first', new Promise<void>((resolve) => (open = resolve)));
    const runs: string[] = [];
    for (let seq = 1; seq <= 6; seq++) runs.push((await client.start(OrderedReactor, { id: 'o', seq })).runId);
    // Run 1 holds its turn; the others wait for theirs in the worker (snoozed, uncapped).
    await pollUntil(async () => (await client.get(runs[0]))?.status === 'running', 5_000);
    expect(applied).toEqual([]);
    open();
    await pollUntil(async () => {
      const views = await Promise.all(runs.map((id) => client.get(id)));
      return views.every((v) => v?.status === 'completed');
    }, 20_000);
    expect(applied).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
