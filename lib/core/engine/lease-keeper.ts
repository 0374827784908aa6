import { randomUUID } from 'node:crypto';
import type { Lease, LockManager } from '../ports/lock-manager.port';
import type { EngineLogger } from './engine-options';

/** A lease being extended on a timer; `lost` turns true when an extension finds it gone. */
export interface HeldLease {
  readonly lease: Lease;
  lost: boolean;
  /** Stop extending it. */
  stop(): void;
}

/** Leases of runs and elements: new tokens, extension while held, quiet release. */
export class LeaseKeeper {
  constructor(
    private readonly locks: LockManager,
    private readonly ttlMs: number,
    private readonly logger: EngineLogger,
  ) {}

  /** A new lease on `key` with a random token (not yet taken). */
  newLease(key: string): Lease {
    return { key, token: randomUUID() };
  }

  /** Extend `lease` every third of its TTL until stopped. */
  keep(lease: Lease): HeldLease {
    const held: HeldLease = {
      lease,
      lost: false,
      stop: () => clearInterval(timer),
    };
    const timer = setInterval(
      () => {
        this.locks.extend(lease, this.ttlMs).then(
          (ok) => {
            if (!ok) held.lost = true;
          },
          (error: unknown) => this.logger.warn(`Could not extend lease ${lease.key}: ${(error as Error)?.message}`),
        );
      },
      Math.max(10, Math.floor(this.ttlMs / 3)),
    );
    timer.unref();
    return held;
  }

  /** Release `lease`, ignoring failures (an expired lease is already free). */
  async releaseQuietly(lease: Lease): Promise<void> {
    await this.locks.release(lease).catch(() => undefined);
  }
}
