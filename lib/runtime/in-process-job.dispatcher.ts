import {
  systemClock,
  type Clock,
  type DispatchOptions,
  type JobDispatcher,
  type JobHandler,
  type JobMessaging,
  type ReactorJob,
  withDelivery,
} from '../core';

/**
 * How the embedded runtime's jobs appear in traces: `messaging.system` `in-process`, one queue
 * named `nest-reactor` (the name of the Redis runtime's default queue).
 */
export const IN_PROCESS_MESSAGING: JobMessaging = Object.freeze({
  system: 'in-process',
  destination: () => 'nest-reactor',
});

/** The longest delay one `setTimeout` waits (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A clock that keeps timers of its own (the testing kit's `TestClock`): a delayed job waits on
 * {@link timer} and runs when the clock's time reaches it, not when something else sleeps.
 */
export interface TimerClock extends Clock {
  /** Resolves once this clock's time has moved `ms` past now. */
  timer(ms: number): Promise<void>;
}

/** A job of this dispatcher is delivered once: no queue retries it. */
const IN_PROCESS_DELIVERY = { system: IN_PROCESS_MESSAGING.system, destination: 'nest-reactor', attempt: 1 };

function keepsTimers(clock: Clock): clock is TimerClock {
  return typeof (clock as Partial<TimerClock>).timer === 'function';
}

/**
 * The embedded runtime's dispatcher: jobs run in this process, after their delay, on the same
 * event loop. Not durable: a job pending when the process exits is lost (the embedded runtime says
 * so at boot). {@link idle} resolves when no job is pending, which tests use instead of sleeping.
 */
export class InProcessJobDispatcher implements JobDispatcher {
  /** Job spans: system `in-process`, queue `nest-reactor`. */
  readonly messaging: JobMessaging = IN_PROCESS_MESSAGING;
  private handler?: JobHandler;
  /** The id of the last job dispatched (ids are `1`, `2`, ... in this dispatcher). */
  private sequence = 0;
  private pending = 0;
  /** Dedupe ids of pending jobs. */
  private readonly deduped = new Set<string>();
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Jobs delivered before a handler was set (before application bootstrap); run once it is. */
  private waiting: ReactorJob[] = [];

  constructor(
    private readonly clock: Clock = systemClock,
    private readonly onError: (error: unknown, job: ReactorJob) => void = (e) => console.error(e),
  ) {}

  /** Set the function that handles delivered jobs (the engine's `handleJob`). */
  setHandler(handler: JobHandler): void {
    this.handler = handler;
    const waiting = this.waiting;
    this.waiting = [];
    for (const job of waiting) void this.deliver(job);
  }

  /** Resolves to the job's id in this dispatcher, or `false` when it was not added (closed, or deduplicated). */
  async dispatch(job: ReactorJob, options: DispatchOptions = {}): Promise<string | false | undefined> {
    if (this.closed) return false;
    const { dedupeId } = options;
    if (dedupeId !== undefined) {
      if (this.deduped.has(dedupeId)) return false;
      this.deduped.add(dedupeId);
    }
    const id = String(++this.sequence);
    // Delivered as a copy (as a queue would), with how it was delivered (for the CONSUMER span).
    const payload: ReactorJob = JSON.parse(JSON.stringify(job)) as ReactorJob;
    withDelivery(payload, Object.assign({}, IN_PROCESS_DELIVERY, { messageId: id }));
    const delayMs = options.delayMs ?? 0;
    const run = () => {
      void this.deliver(payload).finally(() => dedupeId !== undefined && this.deduped.delete(dedupeId));
    };
    if (delayMs > 0 && keepsTimers(this.clock)) {
      // NOTE: not pending while its timer waits: `idle()` means nothing can run until the clock moves.
      void this.clock.timer(delayMs).then(() => {
        if (this.closed) return;
        this.pending++;
        setImmediate(run);
      });
      return id;
    }
    this.pending++;
    if (delayMs > 0 && this.clock !== systemClock) {
      void this.clock.sleep(delayMs).then(() => setImmediate(run));
    } else {
      // A delay beyond what one timer can wait (an interrupt's day-long timeout may be longer) is
      // waited in steps: Node fires a longer timer at once.
      const schedule = (remaining: number): void => {
        const timer = setTimeout(
          () => {
            this.timers.delete(timer);
            if (remaining > MAX_TIMER_MS) schedule(remaining - MAX_TIMER_MS);
            else run();
          },
          Math.min(remaining, MAX_TIMER_MS),
        );
        this.timers.add(timer);
      };
      schedule(delayMs);
    }
    return id;
  }

  /** Resolves when no job is pending or running (a job waiting on a {@link TimerClock}'s timer is neither). */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Count `work` as pending until it settles, so that {@link idle} waits for it (the embedded
   * scheduler's ticks, which start runs).
   */
  track(work: Promise<unknown>): void {
    if (this.closed) return;
    this.pending++;
    void work.finally(() => {
      if (this.closed) return;
      this.pending--;
      if (this.pending === 0) this.flushIdle();
    });
  }

  /** Drop pending jobs and accept no more. */
  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.waiting = [];
    this.pending = 0;
    this.flushIdle();
  }

  private async deliver(job: ReactorJob): Promise<void> {
    if (!this.closed && !this.handler) {
      this.waiting.push(job);
      return;
    }
    try {
      if (!this.closed && this.handler) await this.handler(job);
    } catch (error) {
      this.onError(error, job);
    } finally {
      if (!this.closed) {
        this.pending--;
        if (this.pending === 0) this.flushIdle();
      }
    }
  }

  private flushIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
