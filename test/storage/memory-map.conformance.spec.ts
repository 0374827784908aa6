import { MemoryLockManager, MemoryMapStore } from '../../lib/storage/memory';
import { describeMapStoreConformance } from '../conformance/map-store.conformance';

describeMapStoreConformance('memory', () => {
  const locks = new MemoryLockManager();
  return { maps: new MemoryMapStore(locks), locks, cleanup: async () => undefined };
});
