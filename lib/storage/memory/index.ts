export { MemoryLockManager } from './memory-lock.manager';
export { MemoryReactorStorage, type MemoryReactorStorageOptions } from './memory-reactor.storage';
export { createMemoryAdapters, type MemoryAdapters } from './create-memory-adapters';
export { MemoryMapStore } from './memory-map.store';
export { MemoryInterruptStore } from './memory-interrupt.store';
export { MemoryCoordinationStore } from './memory-coordination.store';
export { MemoryFlowStore } from './memory-flow.store';
export { MemoryRunEventBus, type MemoryRunEventBusOptions } from './memory-run-events';
