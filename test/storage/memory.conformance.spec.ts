import { createMemoryAdapters } from '../../lib/storage/memory';
import type { AdapterFactory } from '../conformance/adapter-harness';
import { describeLockManagerConformance } from '../conformance/lock-manager.conformance';
import { ManualClock } from '../conformance/manual-clock';
import { describeStorageConformance } from '../conformance/storage.conformance';

/** Memory adapters on a manual clock: lease expiry is exact and instant. */
const memoryFactory: AdapterFactory = (options = {}) => {
  const clock = new ManualClock();
  const { storage, locks } = createMemoryAdapters(clock, options);
  return {
    storage,
    locks,
    clock,
    advance: (ms) => clock.advance(ms),
    shortTtlMs: 1000,
    writeRaw: async (runId, raw) => storage.writeRaw(runId, raw),
    cleanup: async () => storage.clear(),
  };
};

describeStorageConformance('memory', memoryFactory);
describeLockManagerConformance('memory', memoryFactory);
