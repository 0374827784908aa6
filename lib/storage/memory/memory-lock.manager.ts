import { systemClock, type Clock, type Lease, type LockManager } from '../../core';
import { randomUUID } from 'node:crypto';
import { normalizeTtlMs } from '../lease-ttl';

interface HeldLease {
  token: string;
  expiresAt: number;
}

/**
 * In-process {@link LockManager} for the embedded runtime and tests. Leases expire by the injected
 * {@link Clock} (a fake clock makes expiry deterministic); tokens are random UUIDs. Not shared
 * between processes.
 *
 * @example
 * const locks = new MemoryLockManager(fakeClock);
 * const lease = await locks.acquire('run:42', 30_000);
 */
export class MemoryLockManager implements LockManager {
  private readonly leases = new Map<string, HeldLease>();

  /** @param clock source of time for expiry. @default systemClock */
  constructor(readonly clock: Clock = systemClock) {}

  async acquire(key: string, ttlMs: number, token: string = randomUUID()): Promise<Lease | null> {
    return this.take(key, ttlMs, token);
  }

  /** Synchronous {@link acquire}, for {@link MemoryReactorStorage.acquireAndLoad}. */
  take(key: string, ttlMs: number, token: string): Lease | null {
    const ttl = normalizeTtlMs(ttlMs);
    if (this.current(key)) return null;
    this.leases.set(key, { token, expiresAt: this.clock.now() + ttl });
    return { key, token };
  }

  async extend(lease: Lease, ttlMs: number): Promise<boolean> {
    return this.refresh(lease, ttlMs);
  }

  async release(lease: Lease): Promise<boolean> {
    if (!this.holds(lease)) return false;
    this.leases.delete(lease.key);
    return true;
  }

  async isHeld(key: string): Promise<boolean> {
    return this.current(key) !== undefined;
  }

  /**
   * Synchronous check that `lease` is held by its token now. Used by {@link MemoryReactorStorage}
   * to fence writes the way `checkpoint-n.lua` does.
   */
  holds(lease: Lease): boolean {
    return this.current(lease.key)?.token === lease.token;
  }

  /** Synchronously push the expiry of a held lease to `ttlMs` from now; false when not held. */
  refresh(lease: Lease, ttlMs: number): boolean {
    const ttl = normalizeTtlMs(ttlMs);
    const now = this.clock.now();
    const held = this.current(lease.key, now);
    if (held?.token !== lease.token) return false;
    held.expiresAt = now + ttl;
    return true;
  }

  private current(key: string, now = this.clock.now()): HeldLease | undefined {
    const held = this.leases.get(key);
    if (!held) return undefined;
    // Same boundary as Redis: a key is expired once now is past its expiry time.
    if (held.expiresAt < now) {
      this.leases.delete(key);
      return undefined;
    }
    return held;
  }
}
