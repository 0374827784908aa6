import { systemClock, type Clock, type InputCipher } from '../../core';
import type { RetentionOptions } from '../run-state.codec';
import { MemoryLockManager } from './memory-lock.manager';
import { MemoryReactorStorage } from './memory-reactor.storage';
import { MemoryMapStore } from './memory-map.store';
import { MemoryInterruptStore } from './memory-interrupt.store';
import { MemoryCoordinationStore } from './memory-coordination.store';
import { MemoryFlowStore } from './memory-flow.store';

/**
 * The embedded runtime's adapters: storage and lock manager sharing one lease table, the map store,
 * the interrupt store on the same runs, the coordination store (locks, semaphores, rate limits,
 * periods, ordered locks) and the flow store (concurrency queues, throttles, gathers).
 */
export interface MemoryAdapters {
  storage: MemoryReactorStorage;
  locks: MemoryLockManager;
  maps: MemoryMapStore;
  interrupts: MemoryInterruptStore;
  coordination: MemoryCoordinationStore;
  flow: MemoryFlowStore;
}

/**
 * Build a {@link MemoryReactorStorage} fenced by a {@link MemoryLockManager}, both on `clock`, with
 * a {@link MemoryMapStore}, a {@link MemoryInterruptStore} (on the same storage and clock), a
 * {@link MemoryCoordinationStore} and a {@link MemoryFlowStore} (on the same clock).
 * @param clock @default systemClock
 */
export function createMemoryAdapters(
  clock: Clock = systemClock,
  options: {
    maxContextBytes?: number;
    inputCipher?: InputCipher;
    contextTtlMs?: number;
    retention?: RetentionOptions;
  } = {},
): MemoryAdapters {
  const locks = new MemoryLockManager(clock);
  const { maxContextBytes, inputCipher, contextTtlMs, retention } = options;
  const storage = new MemoryReactorStorage({ locks, clock, maxContextBytes, inputCipher, contextTtlMs, retention });
  return {
    storage,
    locks,
    maps: new MemoryMapStore(locks, { inputCipher, cancelRequested: (runId) => storage.hasCancelRequest(runId) }),
    interrupts: new MemoryInterruptStore(storage, clock),
    coordination: new MemoryCoordinationStore(clock),
    flow: new MemoryFlowStore(clock),
  };
}
