import { Queue, Worker, type Job, type QueueOptions } from 'bullmq';
import type { ScheduleDefinition, ScheduleTick, ScheduleTicker, ScheduleTiming } from '../core';
import { nextTickAfter } from './cron-next';

/** The BullMQ queue of schedule ticks (beside the module's run queues, under the module's prefix). */
export const SCHEDULE_QUEUE_NAME = 'nest-reactor.schedules';

/** The name of a tick job. */
export const SCHEDULE_TICK_JOB = 'schedule-tick';

/** A tick job's payload: identity only (the schedule's definition is read from storage). */
export interface ScheduleTickJob {
  scheduleId: string;
}

/** Options of {@link BullMqScheduleTicker}. */
export interface BullMqScheduleTickerOptions {
  /** Connection, prefix and shared settings of the tick queue (the module's, with the queue's prefix). */
  queueOptions: () => QueueOptions;
  /**
   * How long a worker holds a tick job before another may take it over (BullMQ `lockDuration` and
   * `stalledInterval`): a worker that died holding a tick delays that tick by about this long.
   */
  lockDurationMs: number;
  /** Ticks handled at once per process. @default 10 */
  concurrency?: number;
  /** An `error` event of the queue or the worker (connection errors). */
  onError: (error: unknown) => void;
}

/**
 * The Redis runtime's ticker: one BullMQ job scheduler per active schedule on queue
 * `nest-reactor.schedules` (`upsertJobScheduler(id, { pattern, tz } | { every }, { name, data })`),
 * not a timer loop of its own. BullMQ keeps one delayed job per scheduler, with id
 * `repeat:<schedule id>:<due ms>`, and adds the next one when a worker takes it; so each due time is
 * one job, taken by one of any number of workers. A worker that dies holding it gives it back
 * when its lock expires (`lockDurationMs`) and another worker handles it; the handler derives the
 * run id from the schedule and the due time, so that second delivery starts nothing twice.
 *
 * After downtime (no worker running): the one job that was due waits in the queue and is handled
 * when a worker comes back (one late tick), and BullMQ sets the next one from then on, skipping
 * the due times that passed (`every`: the next slot of the same grid after now; cron: the next
 * match after now). So at most one catch-up run.
 *
 * Pausing a schedule removes its job scheduler (`removeJobScheduler`, which also removes its
 * pending job); the definition stays in storage, and resuming upserts it again.
 */
export class BullMqScheduleTicker implements ScheduleTicker {
  private queueInstance?: Queue<ScheduleTickJob>;
  private worker?: Worker<ScheduleTickJob>;
  private stopping?: Promise<void>;

  constructor(private readonly options: BullMqScheduleTickerOptions) {}

  /** The tick queue, created on first use (a process that never touches schedules opens nothing). */
  get queue(): Queue<ScheduleTickJob> {
    if (!this.queueInstance) {
      this.queueInstance = new Queue<ScheduleTickJob>(SCHEDULE_QUEUE_NAME, this.options.queueOptions());
      this.queueInstance.on('error', (error: Error) => this.options.onError(error));
    }
    return this.queueInstance;
  }

  async arm(definition: ScheduleDefinition): Promise<void> {
    const repeat =
      definition.everyMs !== undefined
        ? { every: definition.everyMs }
        : { pattern: definition.cron!, tz: definition.tz ?? 'UTC' };
    await this.queue.upsertJobScheduler(definition.id, repeat, {
      name: SCHEDULE_TICK_JOB,
      data: { scheduleId: definition.id },
      opts: {
        // A tick that threw (storage unreachable, a reactor this worker does not know yet) is tried again.
        attempts: 5,
        backoff: { type: 'exponential', delay: 1_000 },
        removeOnComplete: true,
        removeOnFail: { count: 100 },
      },
    });
  }

  async disarm(id: string): Promise<void> {
    await this.queue.removeJobScheduler(id);
  }

  async nextTicks(): Promise<Map<string, number>> {
    const schedulers = await this.queue.getJobSchedulers(0, -1, true);
    const next = new Map<string, number>();
    for (const scheduler of schedulers) {
      if (scheduler && typeof scheduler.next === 'number') next.set(scheduler.key, scheduler.next);
    }
    return next;
  }

  nextAfter(timing: ScheduleTiming, from: number): number {
    return nextTickAfter(timing, from);
  }

  /** Start the worker of the tick queue (in a process with `workers: true`). */
  start(handler: (tick: ScheduleTick) => Promise<unknown>): void {
    if (this.worker || this.stopping) return;
    const lock = this.options.lockDurationMs;
    this.worker = new Worker<ScheduleTickJob>(
      SCHEDULE_QUEUE_NAME,
      async (job) => {
        await handler({ scheduleId: job.data.scheduleId, at: dueTime(job) });
      },
      {
        ...this.options.queueOptions(),
        concurrency: this.options.concurrency ?? 10,
        lockDuration: lock,
        stalledInterval: lock,
      },
    );
    this.worker.on('error', (error: Error) => this.options.onError(error));
  }

  /** Close the worker (ticks in hand finish) and the queue. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const worker = this.worker;
      if (worker) {
        // Closing connections mid-handshake (an app closed right after boot) leaves ioredis errors
        // and timers behind: let the handshake finish first (briefly), as the run workers do.
        await settles(worker.waitUntilReady());
        await worker.close().catch((error: unknown) => this.options.onError(error));
        await stopStrayStalledCheck(worker);
      }
      const queue = this.queueInstance;
      if (queue) {
        await settles(queue.waitUntilReady());
        await queue.close().catch((error: unknown) => this.options.onError(error));
      }
    })();
    return this.stopping;
  }
}

/** Wait for `promise` (its rejection ignored), at most 1 s. */
async function settles(promise: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.catch(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, 1_000))),
  ]);
  clearTimeout(timer);
}

/**
 * NOTE: the BullMQ 5 race `RunProcessor` works around too: a worker closed while its stalled-jobs
 * check is in flight arms the check's next timer after `close()`, which keeps the process alive.
 * Stop it again until the checker has exited (two private fields; nothing when they are gone).
 */
async function stopStrayStalledCheck(worker: Worker): Promise<void> {
  const internals = worker as unknown as { stalledCheckerRunning?: boolean; stalledCheckStopper?: () => void };
  const deadline = Date.now() + 2_000;
  while (internals.stalledCheckerRunning === true && Date.now() < deadline) {
    internals.stalledCheckStopper?.();
    await new Promise<void>((resolve) => setTimeout(resolve, 5).unref());
  }
}

/** When a tick job was due: the `<due ms>` of its id (`repeat:<scheduler id>:<due ms>`). */
export function dueTime(job: Job<ScheduleTickJob>): number {
  const match = /:(\d+)$/.exec(job.id ?? '');
  if (match) return Number(match[1]);
  const prev = (job.opts as { prevMillis?: number }).prevMillis;
  return typeof prev === 'number' ? prev : job.timestamp;
}
