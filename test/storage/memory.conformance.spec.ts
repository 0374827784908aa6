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
    readRaw: async (runId) => storage.readRaw(runId),
    ttlOf: async (runId) => storage.ttlOf(runId),
    cleanup: async () => storage.clear(),
  };
};

describeStorageConformance('memory', memoryFactory);
describeLockManagerConformance('memory', memoryFactory);

it('gives each factory call its own adapters, so conformance tests cannot leak into each other', async () => {
  const a = await memoryFactory();
  const b = await memoryFactory();
  await a.writeRaw!('shared-id', '{}');
  await expect(b.storage.load('shared-id')).resolves.toBeUndefined();
  expect(await b.locks.acquire('k', 1000)).not.toBeNull();
  expect(await a.locks.acquire('k', 1000)).not.toBeNull();
});
