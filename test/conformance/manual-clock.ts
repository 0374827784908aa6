import type { Clock } from '../../lib/core/ports';
import { T0 } from './run-state.factory';

/** A {@link Clock} that only moves when told to; `sleep` resolves once time is advanced past it. */
export class ManualClock implements Clock {
  private current: number;
  private sleepers: Array<{ until: number; resolve: () => void }> = [];

  constructor(start = T0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.sleepers.push({ until: this.current + ms, resolve });
      this.wake();
    });
  }

  advance(ms: number): void {
    this.current += ms;
    this.wake();
  }

  private wake(): void {
    const due = this.sleepers.filter((s) => s.until <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.until > this.current);
    for (const s of due) s.resolve();
  }
}
