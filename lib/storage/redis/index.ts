export { RedisKeys, type RedisKeysOptions, type MapKeyPart } from './redis.keys';
export { RedisMapStore, type RedisMapStoreOptions } from './redis-map.store';
export { RedisInterruptStore, type RedisInterruptStoreOptions } from './redis-interrupt.store';
export { RedisCoordinationStore, type RedisCoordinationStoreOptions } from './redis-coordination.store';
export { RedisFlowStore, type RedisFlowStoreOptions } from './redis-flow.store';
export { RedisReactorStorage, DEFAULT_CONTEXT_TTL_MS, type RedisReactorStorageOptions } from './redis-reactor.storage';
export { RedisLockManager, type RedisLockManagerOptions } from './redis-lock.manager';
export { defineScripts, resolveScriptsDir, SCRIPT_FILES, type RedisConnection, type ScriptName } from './redis-scripts';
