/**
 * Retention per status on Redis, below the conformance suite: the record TTL travels in each run's
 * block of `checkpoint-n.lua`, so a group commit of runs of different statuses stamps each its own,
 * packed or unpacked; and each create trims its reactor's runs index by the longest retention.
 */
import type { Redis } from 'ioredis';
import { RedisKeys, RedisReactorStorage } from '../../lib/storage/redis';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { makeRunState } from '../conformance/run-state.factory';

const MINUTE = 60_000;
const RETENTION = { completed: 2 * MINUTE, failed: 10 * MINUTE, halted: MINUTE / 2, cancelled: 15 * MINUTE };

let redis: Redis;
const prefix = uniquePrefix('redis-retention').replace(/:$/, '');

beforeAll(() => {
  redis = createTestRedis();
});
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  await redis.quit();
});

function storageOf(name: string, shards = 4): { storage: RedisReactorStorage; keys: RedisKeys } {
  const keys = new RedisKeys({ prefix: `${prefix}:${name}`, shards });
  return { storage: new RedisReactorStorage(redis, { keys, contextTtlMs: MINUTE, retention: RETENTION }), keys };
}

async function expectTtl(keys: RedisKeys, runId: string, ms: number): Promise<void> {
  const ttl = await redis.pttl(keys.runKey(runId));
  expect(ttl).toBeLessThanOrEqual(ms);
  expect(ttl).toBeGreaterThan(ms - 5_000);
}

it('a group commit stamps each run with its own TTL, packed blocks and unpacked ones alike', async () => {
  const { storage, keys } = storageOf('group', 1);
  const now = Date.now();
  const runs = [
    makeRunState({ status: 'completed' }),
    makeRunState({ status: 'failed' }),
    makeRunState({ status: 'halted' }),
    makeRunState({ status: 'cancelled' }),
    makeRunState({ status: 'running', updatedAt: now }),
    makeRunState({ status: 'running', updatedAt: now, retryAt: { nap: now + 30 * MINUTE } }),
    // A run id holding a NUL is sent unpacked (its arguments one by one).
    makeRunState({ runId: `run-\u0000-${now}`, status: 'failed' }),
    makeRunState({
      runId: `run-\u0000-paused-${now}`,
      status: 'paused',
      updatedAt: now,
      interrupts: { a: { path: 'a', pausedAt: now, timeoutAt: now + 40 * MINUTE } },
    }),
  ];
  // One turn of the event loop: one checkpoint-n.lua call carries them all.
  expect(await Promise.all(runs.map((run) => storage.save(run, { createOnly: true })))).toEqual(runs.map(() => true));
  const expected = [
    RETENTION.completed,
    RETENTION.failed,
    RETENTION.halted,
    RETENTION.cancelled,
    MINUTE,
    31 * MINUTE,
    RETENTION.failed,
    41 * MINUTE,
  ];
  for (let i = 0; i < runs.length; i++) await expectTtl(keys, runs[i].runId, expected[i]);
  for (const run of runs) expect((await storage.load(run.runId))?.status).toBe(run.status);
});

it("each create trims its reactor's runs index by the longest retention, not contextTtlMs", async () => {
  const { storage, keys } = storageOf('trim', 1);
  const now = Date.now();
  const at = (ago: number) =>
    makeRunState({ reactorName: 'kept', status: 'failed', createdAt: now - ago, updatedAt: now - ago });
  const recent = at(3 * MINUTE);
  const old = at(16 * MINUTE);
  await storage.save(old, { createOnly: true });
  await storage.save(recent, { createOnly: true });
  await storage.save(at(0), { createOnly: true });
  const members = await redis.zrange(keys.reactorRunsKey(0, 'kept'), 0, -1);
  expect(members).toContain(recent.runId);
  expect(members).not.toContain(old.runId);
});

it('a retention option that is not a positive number is refused, naming it', () => {
  const keys = new RedisKeys({ prefix: `${prefix}:bad` });
  expect(() => new RedisReactorStorage(redis, { keys, retention: { failed: 0 } })).toThrow(/retention\.failed/);
});
