import {
  systemClock,
  type Clock,
  type ScheduleDefinition,
  type ScheduleTick,
  type ScheduleTicker,
  type ScheduleTiming,
} from '../core';
import { nextTickAfter } from '../queue/cron-next';
import type { TimerClock } from './in-process-job.dispatcher';

/** The longest delay one `setTimeout` waits (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

interface Armed {
  readonly definition: ScheduleDefinition;
  /** When it ticks next. */
  next: number;
  /** Clears its real timer (none on a clock that keeps timers: a stale timer fires into nothing). */
  clear?: () => void;
}

function keepsTimers(clock: Clock): clock is TimerClock {
  return typeof (clock as Partial<TimerClock>).timer === 'function';
}

/**
 * The embedded runtime's ticker: one timer per armed schedule, on the runtime's clock (with the
 * testing kit's `TestClock`, a tick fires when the test moves time: `kit.advance(ms)`). It ticks
 * as a BullMQ job scheduler does:
 *
 * - `everyMs`: the first tick at once, then every `everyMs` from it; `cron`: at each match of the
 *   pattern in its time zone (UTC by default), read by the `cron-parser` BullMQ uses;
 * - the next tick is set when one fires, from the later of its due time and now: ticks missed
 *   while the event loop was held are not made up (at most one late tick, then on time);
 * - ticks fired before {@link start} (before application bootstrap) wait for it, one per schedule.
 *
 * Not durable: the schedules and their timers live in this process.
 */
export class InProcessScheduleTicker implements ScheduleTicker {
  private readonly armed = new Map<string, Armed>();
  private handler?: (tick: ScheduleTick) => Promise<unknown>;
  /** Ticks fired before {@link start}, the latest per schedule. */
  private readonly early = new Map<string, ScheduleTick>();
  private stopped = false;

  /**
   * @param track counts a tick's handling as pending work until it settles (the dispatcher's
   *   `track`, so that `idle()` waits for the run a tick starts)
   */
  constructor(
    private readonly clock: Clock = systemClock,
    private readonly track: (work: Promise<unknown>) => void = () => undefined,
    private readonly onError: (error: unknown, tick: ScheduleTick) => void = (e) => console.error(e),
  ) {}

  async arm(definition: ScheduleDefinition): Promise<void> {
    if (this.stopped) return;
    const armed = this.armed.get(definition.id);
    this.clear(definition.id);
    const now = this.clock.now();
    // Re-armed on the same timing (an upsert of its input, a boot): its next tick stays (as BullMQ's).
    const first =
      armed && sameTiming(armed.definition, definition)
        ? armed.next
        : definition.everyMs !== undefined
          ? now
          : nextTickAfter(definition, now);
    const entry: Armed = { definition, next: first };
    this.armed.set(definition.id, entry);
    this.wait(entry);
  }

  async disarm(id: string): Promise<void> {
    this.clear(id);
    this.early.delete(id);
  }

  async nextTicks(): Promise<Map<string, number>> {
    return new Map([...this.armed].map(([id, entry]) => [id, entry.next]));
  }

  nextAfter(timing: ScheduleTiming, from: number): number {
    return nextTickAfter(timing, from);
  }

  start(handler: (tick: ScheduleTick) => Promise<unknown>): void {
    if (this.stopped) return;
    this.handler = handler;
    const early = [...this.early.values()];
    this.early.clear();
    for (const tick of early) this.deliver(tick);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const id of [...this.armed.keys()]) this.clear(id);
    this.early.clear();
    this.handler = undefined;
  }

  private clear(id: string): void {
    const entry = this.armed.get(id);
    if (!entry) return;
    entry.clear?.();
    this.armed.delete(id);
  }

  /** Wait for `entry`'s next tick, then fire it (if it is still armed and not rescheduled). */
  private wait(entry: Armed): void {
    const at = entry.next;
    const fire = () => {
      if (this.stopped || this.armed.get(entry.definition.id) !== entry || entry.next !== at) return;
      this.fire(entry, at);
    };
    const delay = Math.max(0, at - this.clock.now());
    if (keepsTimers(this.clock)) {
      void this.clock.timer(delay).then(fire);
      return;
    }
    // NOTE: a clock without timers of its own (the system clock; a FakeClock, whose sleep would
    // move its time at once and so tick without end) waits in real time.
    let timer: NodeJS.Timeout | undefined;
    const schedule = (remaining: number): void => {
      timer = setTimeout(
        () => (remaining > MAX_TIMER_MS ? schedule(remaining - MAX_TIMER_MS) : fire()),
        Math.min(remaining, MAX_TIMER_MS),
      );
      timer.unref();
    };
    schedule(delay);
    entry.clear = () => clearTimeout(timer);
  }

  private fire(entry: Armed, at: number): void {
    const { definition } = entry;
    const now = this.clock.now();
    // The next tick first (as BullMQ adds a scheduler's next job when it takes the current one).
    entry.next = nextTick(definition, at, now);
    this.wait(entry);
    this.deliver({ scheduleId: definition.id, at });
  }

  private deliver(tick: ScheduleTick): void {
    const handler = this.handler;
    if (!handler) {
      this.early.set(tick.scheduleId, tick);
      return;
    }
    const work = Promise.resolve()
      .then(() => handler(tick))
      .catch((error: unknown) => this.onError(error, tick));
    this.track(work);
  }
}

function sameTiming(a: ScheduleTiming, b: ScheduleTiming): boolean {
  return a.everyMs === b.everyMs && a.cron === b.cron && a.tz === b.tz;
}

/**
 * The tick after the one due at `at`, handled at `now`: for an interval, `at + everyMs`, or the
 * first slot after `now` on the same grid when that is past (BullMQ's `every`); for cron, the next
 * match after the later of `at` and `now`.
 */
function nextTick(definition: ScheduleDefinition, at: number, now: number): number {
  const every = definition.everyMs;
  if (every !== undefined) {
    const next = at + every;
    if (next > now) return next;
    return at + (Math.floor((now - at) / every) + 1) * every;
  }
  return nextTickAfter(definition, Math.max(at, now));
}
