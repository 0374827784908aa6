import type { TimerClock } from '../runtime/in-process-job.dispatcher';
import { FakeClock } from './fake-clock';

interface PendingTimer {
  at: number;
  seq: number;
  fire: () => void;
}

/**
 * The clock of `ReactorTestingModule`: a {@link FakeClock} that also keeps timers.
 *
 * - `sleep(ms)` (a step's retry backoff inside a run, a `wait` poll) moves time forward at once,
 *   as with `FakeClock`, so `client.run` never waits for real time.
 * - A delayed job of the in-process dispatcher (a background retry, a snooze, an interrupt's
 *   timeout) is a timer: it runs when this clock's time reaches it, never by itself. Move time with
 *   `ReactorTestingKit.advance(ms)` (or {@link advance} and then `kit.idle()`); a paused approval
 *   with a 24 h timeout stays paused until the test says a day went by.
 *
 * Time moved by a sleep fires the timers it passes, like time moved by {@link advance}: one
 * timeline.
 */
export class TestClock extends FakeClock implements TimerClock {
  private timers: PendingTimer[] = [];
  private seq = 0;

  /** Resolves once time has moved `ms` past now (at once for `ms <= 0`). */
  timer(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.timers.push({ at: this.now() + ms, seq: this.seq++, fire: resolve });
    });
  }

  /** Move time forward by `ms` and fire the timers due by then (their jobs run on the event loop next). */
  override advance(ms: number): void {
    super.advance(ms);
    const now = this.now();
    const due = this.timers.filter((t) => t.at <= now).sort((a, b) => a.at - b.at || a.seq - b.seq);
    if (due.length === 0) return;
    this.timers = this.timers.filter((t) => t.at > now);
    for (const t of due) t.fire();
  }

  /** How many timers wait for time to reach them. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the earliest waiting timer is due, or undefined when none waits. */
  nextTimerAt(): number | undefined {
    return this.timers.reduce<number | undefined>(
      (min, t) => (min === undefined || t.at < min ? t.at : min),
      undefined,
    );
  }
}
