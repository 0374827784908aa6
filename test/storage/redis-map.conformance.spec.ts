import type { Redis } from 'ioredis';
import { RedisKeys, RedisLockManager, RedisMapStore } from '../../lib/storage/redis';
import { describeMapStoreConformance } from '../conformance/map-store.conformance';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { testCipher } from '../conformance/test-cipher';

let redis: Redis;
const filePrefix = uniquePrefix('redis-map-conformance').replace(/:$/, '');
let counter = 0;

beforeAll(() => {
  redis = createTestRedis();
});
afterAll(async () => {
  await cleanupPrefix(redis, filePrefix);
  await redis.quit();
});

/** A Redis map store and lock manager under a fresh prefix per test. */
describeMapStoreConformance('redis', () => {
  const prefix = `${filePrefix}:${++counter}`;
  const keys = new RedisKeys({ prefix });
  return {
    maps: new RedisMapStore(redis, { keys, inputCipher: testCipher }),
    locks: new RedisLockManager(redis, { keys }),
    readRaw: async (mapId) => ({
      inputs: Object.values(await redis.hgetall(keys.mapKey(mapId, 'inputs'))),
      states: Object.values(await redis.hgetall(keys.mapKey(mapId, 'states'))),
    }),
    cleanup: async () => {
      await cleanupPrefix(redis, `${prefix}:`);
    },
  };
});

// Runs after the suite above (declaration order): every test cleaned up after itself.
it('leaves no keys of its tests behind in Redis', async () => {
  const [, found] = await redis.scan('0', 'MATCH', `${filePrefix}:*`, 'COUNT', 10_000);
  expect(found).toEqual([]);
});
