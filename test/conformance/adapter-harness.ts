import { randomUUID } from 'node:crypto';
import type { Clock, InputCipher, LockManager, ReactorStorage } from '../../lib/core/ports';

/** Options a conformance suite asks of an adapter factory. */
export interface HarnessOptions {
  /** Size limit to configure on the storage. Absent: the adapter's default (16 MiB). */
  maxContextBytes?: number;
  /** Input cipher to configure on the storage. */
  inputCipher?: InputCipher;
  /** Retention of a live run's record to configure on the storage. */
  contextTtlMs?: number;
  /** Retention of a finished run's record per status to configure on the storage. */
  retention?: Partial<Record<'completed' | 'failed' | 'halted' | 'cancelled', number>>;
}

/**
 * A storage and a lock manager sharing one backend (leases taken from `locks` fence `storage`),
 * plus the means to let time pass.
 */
export interface AdapterHarness {
  storage: ReactorStorage;
  locks: LockManager;
  /** The clock the adapters use, when controllable. */
  clock?: Clock;
  /**
   * Move the adapters' time forward. Present for fake clocks; absent for real time, where the
   * suites use real short TTLs ({@link shortTtlMs}) and poll with a deadline.
   */
  advance?(ms: number): void | Promise<void>;
  /** TTL of leases the suites let expire. Keep it short with real time. @default 100 */
  shortTtlMs?: number;
  /** Store `raw` verbatim as the record of a non-terminal run (to simulate corruption). */
  writeRaw?(runId: string, raw: string): Promise<void>;
  /** How long the record of a run is still kept, in ms, like `PTTL`: -2 when there is none, -1 when it does not expire. */
  ttlOf?(runId: string): Promise<number>;
  /** The stored fields of a run, verbatim (as `HGETALL` returns them). */
  readRaw(runId: string): Promise<Record<string, string>>;
  /** Remove everything this harness created. */
  cleanup(): Promise<void>;
}

/** Builds a fresh, isolated harness (called once per test). */
export type AdapterFactory = (options?: HarnessOptions) => AdapterHarness | Promise<AdapterHarness>;

/** Poll `condition` every few ms until it holds; fail after `timeoutMs`. Never a fixed sleep. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Make sure more than `ms` milliseconds pass for the adapters. With a fake clock, advance it.
 * With real time, take a probe lease of TTL `ms` now and wait until it is gone: every lease taken
 * before the probe with a TTL ≤ `ms` (and not extended) has expired too.
 */
export async function letTimePass(h: AdapterHarness, ms: number): Promise<void> {
  if (h.advance) {
    await h.advance(ms + 1);
    return;
  }
  const probe = `probe:${randomUUID()}`;
  const lease = await h.locks.acquire(probe, ms);
  if (!lease) throw new Error(`probe lease ${probe} could not be taken`);
  await waitFor(async () => !(await h.locks.isHeld(probe)), `probe lease of ${ms} ms to expire`, ms + 5000);
}
