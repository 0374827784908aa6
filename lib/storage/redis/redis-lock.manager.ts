import { type Lease, type LockManager } from '../../core';
import { randomUUID } from 'node:crypto';
import { normalizeTtlMs } from '../lease-ttl';
import { isErrorCode, storageError } from '../storage-error-codes';
import type { RedisKeys } from './redis.keys';
import { defineScripts, runIntegerScript, type RedisConnection } from './redis-scripts';

/** Options of {@link RedisLockManager}. */
export interface RedisLockManagerOptions {
  /** Key builder; the same instance as the storage's, so run leases land in the run's slot. */
  keys: RedisKeys;
}

/**
 * {@link LockManager} on Redis: `SET key token NX PX ttl` with a random token; extend and release
 * run token-checked scripts (`extendLease-1.lua`, `releaseLease-1.lua`); `isHeld` is `EXISTS`.
 * Every method is one command.
 *
 * Logical keys map to physical keys through {@link RedisKeys.physicalLeaseKey}: the run lease
 * `run:<runId>` becomes the run's lease key (so `checkpoint-n.lua` can fence on it in the run's
 * slot), any other name becomes `<prefix>:{lock:<name>}`. The {@link Lease} returned carries the
 * logical key.
 */
export class RedisLockManager implements LockManager {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisConnection,
    options: RedisLockManagerOptions,
  ) {
    this.keys = options.keys;
    defineScripts(redis);
  }

  async acquire(key: string, ttlMs: number, token: string = randomUUID()): Promise<Lease | null> {
    const ttl = normalizeTtlMs(ttlMs);
    const reply = await this.redis.set(this.keys.physicalLeaseKey(key), token, 'PX', ttl, 'NX');
    return reply === 'OK' ? { key, token } : null;
  }

  async extend(lease: Lease, ttlMs: number): Promise<boolean> {
    const ttl = normalizeTtlMs(ttlMs);
    const result = await runIntegerScript(
      this.redis,
      'extendLease',
      [this.keys.physicalLeaseKey(lease.key)],
      [lease.token, ttl],
    );
    if (isErrorCode(result)) throw storageError(result, { runId: lease.key, operation: 'extend (extendLease-1.lua)' });
    return result === 1;
  }

  async release(lease: Lease): Promise<boolean> {
    const result = await runIntegerScript(
      this.redis,
      'releaseLease',
      [this.keys.physicalLeaseKey(lease.key)],
      [lease.token],
    );
    return result === 1;
  }

  async isHeld(key: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.physicalLeaseKey(key))) === 1;
  }
}
