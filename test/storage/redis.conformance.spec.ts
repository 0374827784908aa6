import type { Redis } from 'ioredis';
import { RedisKeys, RedisLockManager, RedisReactorStorage } from '../../lib/storage/redis';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import type { AdapterFactory } from '../conformance/adapter-harness';
import { describeLockManagerConformance } from '../conformance/lock-manager.conformance';
import { describeStorageConformance } from '../conformance/storage.conformance';

let redis: Redis;
const filePrefix = uniquePrefix('redis-conformance').replace(/:$/, '');
let counter = 0;

beforeAll(() => {
  redis = createTestRedis();
});
afterAll(async () => {
  await cleanupPrefix(redis, filePrefix);
  await redis.quit();
});

/** Redis adapters under a fresh prefix per test; real time, 100 ms leases for expiry tests. */
const redisFactory: AdapterFactory = (options = {}) => {
  const prefix = `${filePrefix}:${++counter}`;
  const keys = new RedisKeys({ prefix });
  const storage = new RedisReactorStorage(redis, {
    keys,
    maxContextBytes: options.maxContextBytes,
    inputCipher: options.inputCipher,
    contextTtlMs: options.contextTtlMs,
    retention: options.retention,
  });
  const locks = new RedisLockManager(redis, { keys });
  return {
    storage,
    locks,
    shortTtlMs: 100,
    writeRaw: async (runId, raw) => {
      await redis
        .multi()
        .hset(keys.runKey(runId), 'state', raw, 'status', 'running', 'terminal', '0')
        .zadd(keys.activeIndexKeyOf(runId), Date.now(), runId)
        .exec();
    },
    readRaw: async (runId) => redis.hgetall(keys.runKey(runId)),
    ttlOf: async (runId) => redis.pttl(keys.runKey(runId)),
    cleanup: async () => {
      await cleanupPrefix(redis, `${prefix}:`);
    },
  };
};

describeStorageConformance('redis', redisFactory);
describeLockManagerConformance('redis', redisFactory);

// Runs after the suites above (declaration order): every test cleaned up after itself.
it('leaves no keys of its tests behind in Redis', async () => {
  const [, found] = await redis.scan('0', 'MATCH', `${filePrefix}:*`, 'COUNT', 10_000);
  expect(found).toEqual([]);
});
