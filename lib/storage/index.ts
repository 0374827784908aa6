export {
  MemoryLockManager,
  MemoryReactorStorage,
  MemoryMapStore,
  MemoryInterruptStore,
  MemoryCoordinationStore,
  createMemoryAdapters,
} from './memory';
export type { MemoryReactorStorageOptions, MemoryAdapters } from './memory';
export {
  RedisKeys,
  RedisReactorStorage,
  RedisLockManager,
  RedisMapStore,
  RedisInterruptStore,
  RedisCoordinationStore,
  DEFAULT_CONTEXT_TTL_MS,
  defineScripts,
  resolveScriptsDir,
  SCRIPT_FILES,
} from './redis';
export type {
  RedisKeysOptions,
  RedisReactorStorageOptions,
  RedisLockManagerOptions,
  RedisMapStoreOptions,
  RedisInterruptStoreOptions,
  RedisCoordinationStoreOptions,
  MapKeyPart,
  RedisConnection,
  ScriptName,
} from './redis';
export { DEFAULT_MAX_CONTEXT_BYTES, encodeRunState, decodeRunState, brokenRunState } from './run-state.codec';
export { StorageErrorCode, CheckpointResult, storageError } from './storage-error-codes';
export { normalizeTtlMs } from './lease-ttl';
export { createAesGcmInputCipher } from './aes-gcm-input.cipher';
export type { AesGcmInputCipherOptions } from './aes-gcm-input.cipher';
