/** A held lease: the key and the random token that proves ownership. */
export interface Lease {
  readonly key: string;
  readonly token: string;
}

/**
 * Leases with a TTL and fencing tokens. A lease is acquired with a random token; only the holder of
 * that token may extend or release it, and storage writes fenced by a lease fail once it is lost.
 */
export interface LockManager {
  /**
   * Take `key` for `ttlMs`, or return `null` when someone else holds it. The token is random
   * unless given.
   */
  acquire(key: string, ttlMs: number, token?: string): Promise<Lease | null>;
  /** Push the expiry out to `ttlMs` from now. False when the lease was lost. */
  extend(lease: Lease, ttlMs: number): Promise<boolean>;
  /** Release the lease if still held by this token. False when it was already lost. */
  release(lease: Lease): Promise<boolean>;
  /** Whether anyone holds `key` now. */
  isHeld(key: string): Promise<boolean>;
}
