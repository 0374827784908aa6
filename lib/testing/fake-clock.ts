import type { Clock } from '../core';

/**
 * A clock for tests. Time stands still until something sleeps: `sleep(ms)` moves time forward by
 * `ms` and resolves at once, and records the delay in {@link sleeps}. So retry backoff can be
 * asserted exactly and no test waits for real time.
 */
export class FakeClock implements Clock {
  /** Every delay passed to `sleep`, in order. */
  readonly sleeps: number[] = [];

  constructor(private current = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.advance(ms);
  }

  /** Move time forward without sleeping. */
  advance(ms: number): void {
    this.current += ms;
  }
}
