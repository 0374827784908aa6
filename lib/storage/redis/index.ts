export { RedisKeys, type RedisKeysOptions } from './redis.keys';
export { RedisReactorStorage, DEFAULT_CONTEXT_TTL_MS, type RedisReactorStorageOptions } from './redis-reactor.storage';
export { RedisLockManager, type RedisLockManagerOptions } from './redis-lock.manager';
export { defineScripts, resolveScriptsDir, SCRIPT_FILES, type RedisConnection, type ScriptName } from './redis-scripts';
