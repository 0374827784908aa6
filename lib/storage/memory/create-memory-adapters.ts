import { systemClock, type Clock, type InputCipher } from '../../core';
import { MemoryLockManager } from './memory-lock.manager';
import { MemoryReactorStorage } from './memory-reactor.storage';
import { MemoryMapStore } from './memory-map.store';
import { MemoryInterruptStore } from './memory-interrupt.store';

/**
 * The embedded runtime's adapters: storage and lock manager sharing one lease table, the map store,
 * and the interrupt store on the same runs.
 */
export interface MemoryAdapters {
  storage: MemoryReactorStorage;
  locks: MemoryLockManager;
  maps: MemoryMapStore;
  interrupts: MemoryInterruptStore;
}

/**
 * Build a {@link MemoryReactorStorage} fenced by a {@link MemoryLockManager}, both on `clock`, with
 * a {@link MemoryMapStore} and a {@link MemoryInterruptStore} (on the same storage and clock).
 * @param clock @default systemClock
 */
export function createMemoryAdapters(
  clock: Clock = systemClock,
  options: { maxContextBytes?: number; inputCipher?: InputCipher } = {},
): MemoryAdapters {
  const locks = new MemoryLockManager(clock);
  const { maxContextBytes, inputCipher } = options;
  const storage = new MemoryReactorStorage({ locks, clock, maxContextBytes, inputCipher });
  return {
    storage,
    locks,
    maps: new MemoryMapStore(locks, { inputCipher }),
    interrupts: new MemoryInterruptStore(storage, clock),
  };
}
