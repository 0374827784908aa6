import { RedisKeys, RedisLockManager, RedisReactorStorage } from '../../lib/storage/redis';
import { cleanupPrefix } from '../setup/redis';
import { redisSpecFile, storedKeys } from '../support/redis-spec-file';
import type { AdapterFactory } from '../conformance/adapter-harness';
import { describeLockManagerConformance } from '../conformance/lock-manager.conformance';
import { describeStorageConformance } from '../conformance/storage.conformance';

const { redis, filePrefix, nextPrefix } = redisSpecFile('redis-conformance');

/** Redis adapters under a fresh prefix per test; real time, 100 ms leases for expiry tests. */
const redisFactory: AdapterFactory = (options = {}) => {
  const prefix = nextPrefix();
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
  expect(await storedKeys(redis, filePrefix)).toEqual([]);
});
