import { RedisKeys, RedisLockManager, RedisMapStore } from '../../lib/storage/redis';
import { describeMapStoreConformance } from '../conformance/map-store.conformance';
import { cleanupPrefix } from '../setup/redis';
import { redisSpecFile, storedKeys } from '../support/redis-spec-file';
import { testCipher } from '../conformance/test-cipher';

const { redis, filePrefix, nextPrefix } = redisSpecFile('redis-map-conformance');

/** A Redis map store and lock manager under a fresh prefix per test. */
describeMapStoreConformance('redis', () => {
  const prefix = nextPrefix();
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
  expect(await storedKeys(redis, filePrefix)).toEqual([]);
});
