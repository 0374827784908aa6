import { systemClock, type Clock, type InputCipher } from '../../core';
import { MemoryLockManager } from './memory-lock.manager';
import { MemoryReactorStorage } from './memory-reactor.storage';
import { MemoryMapStore } from './memory-map.store';

/** The embedded runtime's storage and lock manager, sharing one lease table. */
export interface MemoryAdapters {
  storage: MemoryReactorStorage;
  locks: MemoryLockManager;
  maps: MemoryMapStore;
}

/**
 * Build a {@link MemoryReactorStorage} fenced by a {@link MemoryLockManager}, both on `clock`.
 * @param clock @default systemClock
 */
export function createMemoryAdapters(
  clock: Clock = systemClock,
  options: { maxContextBytes?: number; inputCipher?: InputCipher } = {},
): MemoryAdapters {
  const locks = new MemoryLockManager(clock);
  const { maxContextBytes, inputCipher } = options;
  const storage = new MemoryReactorStorage({ locks, clock, maxContextBytes, inputCipher });
  return { storage, locks, maps: new MemoryMapStore(locks, { inputCipher }) };
}
