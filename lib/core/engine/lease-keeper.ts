import { randomUUID } from 'node:crypto';
import type { Lease, LockManager } from '../ports/lock-manager.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import type { EngineLogger } from './engine-options';

/** What the keeper tells the execution of a run about its lease, as each extension finds it. */
export interface LeaseWatch {
  /**
   * The run whose lease this is: its extension also reads the run's cancel request (one round
   * trip). Without it (a map element's lease), the extension only extends.
   */
  runId?: string;
  /** The lease was found lost (expired, or taken by another process). Called once. */
  onLost(): void;
  /** The run holds a cancel request (asked in any process). Called on every extension that finds it. */
  onCancel?(reason: string): void;
}

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
    /** With `extendRunLease`, a watched run's extension reads its cancel request in the same round trip. */
    private readonly storage?: Pick<ReactorStorage, 'extendRunLease'>,
  ) {}

  /** A new lease on `key` with a random token (not yet taken). */
  newLease(key: string): Lease {
    return { key, token: randomUUID() };
  }

  /**
   * Extend `lease` every third of its TTL until stopped. With `watch`, tell the run's execution
   * when an extension finds the lease lost, or a cancel request stored with the run (read by the
   * same round trip when the storage can, else cancels are seen at checkpoints only).
   */
  keep(lease: Lease, watch?: LeaseWatch): HeldLease {
    const held: HeldLease = {
      lease,
      lost: false,
      stop: () => clearInterval(timer),
    };
    const storage = this.storage;
    const extend: () => Promise<{ held: boolean; cancel?: string }> =
      watch?.runId !== undefined && storage?.extendRunLease
        ? () => storage.extendRunLease!(watch.runId!, lease, this.ttlMs)
        : () => this.locks.extend(lease, this.ttlMs).then((ok) => ({ held: ok }));
    const timer = setInterval(
      () => {
        extend().then(
          (answer) => {
            if (!answer.held) {
              if (held.lost) return;
              held.lost = true;
              clearInterval(timer); // a lost lease is never held again
              watch?.onLost();
            } else if (answer.cancel !== undefined) {
              watch?.onCancel?.(answer.cancel);
            }
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
