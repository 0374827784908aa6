import { MemoryLockManager, MemoryMapStore } from '../../lib/storage/memory';
import { describeMapStoreConformance } from '../conformance/map-store.conformance';
import { testCipher } from '../conformance/test-cipher';

describeMapStoreConformance('memory', () => {
  const locks = new MemoryLockManager();
  const maps = new MemoryMapStore(locks, { inputCipher: testCipher });
  return { maps, locks, readRaw: async (mapId) => maps.readRaw(mapId), cleanup: async () => undefined };
});

it('gives each factory call its own map store and lease table', async () => {
  const a = new MemoryMapStore(new MemoryLockManager());
  const b = new MemoryMapStore(new MemoryLockManager());
  await a.create({
    mapId: 'r:m',
    ownerRunId: 'r',
    ownerReactor: 'x',
    parentRunId: 'r',
    step: 'm',
    elementReactor: 'e',
    total: 1,
    batchSize: 1,
    atomic: true,
    createdAt: 0,
  });
  expect(await a.meta('r:m')).toBeDefined();
  expect(await b.meta('r:m')).toBeUndefined();
});
