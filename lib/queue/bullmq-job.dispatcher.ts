import { randomUUID } from 'node:crypto';
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { DispatchOptions, JobDispatcher, JobMessaging, ReactorJob } from '../core';
import type { ReactorJobOptions } from '../config';
import { bullMqMessaging } from './job-delivery';
import { DEFAULT_JOB_OPTIONS, JOB_BACKOFF_BASE_MS, REACTOR_QUEUE_NAME } from './queue.constants';
import { ReactorQueues } from './reactor-queues';

/** Options of {@link BullMqJobDispatcher}. */
export interface BullMqJobDispatcherOptions {
  /**
   * BullMQ retries of a job whose handler threw (an infrastructure error); a job runs at most
   * `jobRetryCount + 1` times. @default 3
   */
  jobRetryCount?: number;
  /** First delay of the exponential backoff between those retries. @default 1000 */
  backoffMs?: number;
  /**
   * What BullMQ keeps of the jobs (and their logs, stack traces), set on each job.
   * @default { removeOnComplete: true, removeOnFail: { count: 1000 } }
   */
  jobOptions?: ReactorJobOptions;
}

/**
 * Options of a {@link BullMqJobDispatcher} that creates (and on {@link BullMqJobDispatcher.close}
 * closes) its own queue, for use without Nest.
 */
export interface StandaloneBullMqJobDispatcherOptions extends BullMqJobDispatcherOptions {
  /** BullMQ connection: options (BullMQ creates and closes the connection) or an ioredis client. */
  connection: ConnectionOptions;
  /** BullMQ key prefix, as given to your `Worker`. @default 'bull' */
  prefix?: string;
  /** Queue name, as given to your `Worker`. @default 'nest-reactor' */
  queueName?: string;
}

/**
 * The Redis runtime's {@link JobDispatcher}: one BullMQ job per dispatch on the module's queue.
 * The job's name is its kind and its data the identity-only {@link ReactorJob}; the run's state is
 * already in Redis when this is called.
 *
 * In the Nest module it is built over the queue `@nestjs/bullmq` registers. Without Nest, give it
 * connection settings and it creates its own queue (consume it with a BullMQ `Worker` of the same
 * name and prefix whose processor calls `engine.handleJob(job.data)`):
 *
 * ```ts
 * const dispatcher = new BullMqJobDispatcher({ connection: { url }, prefix: 'orders' });
 * const engine = new ReactorEngine({ storage, locks, dispatcher });
 * new Worker('nest-reactor', (job) => engine.handleJob(job.data), { connection: { url }, prefix: 'orders' });
 * ```
 *
 * Given the module's {@link ReactorQueues}, each job goes to its reactor's queue (`@Reactor(name,
 * { queue, priority })`) with its priority; a reactor without one uses the default queue.
 *
 * Every dispatch adds a new job (no fixed job id): a snooze or a delayed retry re-enqueues the run
 * while the job that re-enqueues it is still active, and a fixed id would swallow it. Duplicates
 * are harmless: a delivery of a run that is executing elsewhere finds its lease held and snoozes.
 */
export class BullMqJobDispatcher implements JobDispatcher {
  /** The default queue (jobs of reactors without a queue of their own). */
  readonly queue: Queue;
  private readonly ownsQueue: boolean;
  private readonly routed?: ReactorQueues;
  /**
   * The options of a job without delay or priority, built once: BullMQ copies a job's options
   * (`{ ...queue defaults, ...opts }`) and never writes to them or to their nested objects.
   */
  private readonly baseOptions: JobsOptions;
  /** Job spans: system `bullmq`, the queue each job goes to (its reactor's route). */
  readonly messaging: JobMessaging = bullMqMessaging((job) => this.routeOf(job.reactorName).queue);

  /** Dispatch to `queue` (never closed here). */
  constructor(queue: Queue, options?: BullMqJobDispatcherOptions);
  /** Dispatch each job to its reactor's queue among `queues` (never closed here). */
  constructor(queues: ReactorQueues, options?: BullMqJobDispatcherOptions);
  /** Create a queue from connection settings (closed by {@link close}). */
  constructor(options: StandaloneBullMqJobDispatcherOptions);
  constructor(
    queueOrOptions: Queue | ReactorQueues | StandaloneBullMqJobDispatcherOptions,
    options: BullMqJobDispatcherOptions = {},
  ) {
    if (queueOrOptions instanceof ReactorQueues) {
      const queue = queueOrOptions.get();
      if (!queue) throw new TypeError('BullMqJobDispatcher: the ReactorQueues have no default queue.');
      this.queue = queue;
      this.routed = queueOrOptions;
      this.ownsQueue = false;
    } else if (isQueue(queueOrOptions)) {
      this.queue = queueOrOptions;
      this.ownsQueue = false;
    } else {
      options = queueOrOptions;
      const { connection, prefix, queueName } = queueOrOptions;
      this.queue = new Queue(queueName ?? REACTOR_QUEUE_NAME, { connection, prefix });
      this.ownsQueue = true;
    }
    const attempts = (options.jobRetryCount ?? 3) + 1;
    const backoffMs = options.backoffMs ?? JOB_BACKOFF_BASE_MS;
    this.baseOptions = Object.assign({}, DEFAULT_JOB_OPTIONS, options.jobOptions, {
      attempts,
      backoff: { type: 'exponential' as const, delay: backoffMs },
    });
  }

  /**
   * Add the job. Resolves to the BullMQ job id, or `false` when BullMQ did not add it: a
   * `dedupeId` is BullMQ's deduplication id (held while the job waits, is delayed or runs, dropped
   * when it completes, fails or is removed) and the job gets an id of its own (`<dedupeId>-<uuid>`),
   * so an add BullMQ deduplicated, which answers the pending job's id, is told from one it made.
   */
  async dispatch(job: ReactorJob, options: DispatchOptions = {}): Promise<string | undefined | false> {
    const { queue, priority } = this.routeOf(job.reactorName);
    const opts = this.jobOptions(options.delayMs, priority);
    if (options.dedupeId === undefined) return (await queue.add(job.kind, identityOf(job), opts)).id;
    const jobId = `${options.dedupeId}-${randomUUID()}`;
    const added = await queue.add(
      job.kind,
      identityOf(job),
      Object.assign({}, opts, { jobId, deduplication: { id: options.dedupeId } }),
    );
    return added.id === jobId ? jobId : false;
  }

  /** Enqueue many jobs in one round trip (`addBulk`), e.g. the elements of a map window. */
  async dispatchMany(jobs: ReactorJob[], options: { delayMs?: number } = {}): Promise<void> {
    if (jobs.length === 0) return;
    // One job (a map window sliding by one) is a plain add: addBulk builds a pipeline.
    if (jobs.length === 1) {
      await this.dispatch(jobs[0], options);
      return;
    }
    // The jobs of one call belong to one run (a map window), so to one queue; group them anyway.
    const byQueue = new Map<Queue, Array<{ name: string; data: ReactorJob; opts: JobsOptions }>>();
    for (const job of jobs) {
      const { queue, priority } = this.routeOf(job.reactorName);
      const bulk = byQueue.get(queue) ?? [];
      bulk.push({ name: job.kind, data: identityOf(job), opts: this.jobOptions(options.delayMs, priority) });
      byQueue.set(queue, bulk);
    }
    for (const [queue, bulk] of byQueue) await queue.addBulk(bulk);
  }

  /** The queue and priority of a reactor's jobs: its own queue when routed, else the default one. */
  private routeOf(reactorName: string): { queue: Queue; priority?: number } {
    if (!this.routed) return { queue: this.queue };
    const { queue, priority } = this.routed.routeOf(reactorName);
    return { queue: queue ?? this.queue, priority };
  }

  private jobOptions(delayMs = 0, priority?: number): JobsOptions {
    const delay = Math.max(0, Math.ceil(delayMs));
    if (delay <= 0 && priority === undefined) return this.baseOptions;
    const options: JobsOptions = { ...this.baseOptions };
    if (delay > 0) options.delay = delay;
    if (priority !== undefined) options.priority = priority;
    return options;
  }

  /** Jobs not finished yet, in every queue: waiting, delayed, prioritized or active. */
  async pending(): Promise<number> {
    const queues = this.routed?.all() ?? [this.queue];
    const counts = await Promise.all(
      queues.map((queue) =>
        queue.getJobCountByTypes('waiting', 'paused', 'delayed', 'prioritized', 'active', 'waiting-children'),
      ),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /** Close the queue if this dispatcher created it (a queue given to it is left open). Idempotent. */
  async close(): Promise<void> {
    if (this.ownsQueue) await this.queue.close();
  }
}

function isQueue(value: Queue | StandaloneBullMqJobDispatcherOptions): value is Queue {
  // NOTE: not `instanceof`: a BullMQ Pro queue, or one from another copy of bullmq, is a queue too.
  return typeof (value as Queue).add === 'function';
}

/**
 * The job's identity fields only, without `undefined` values (and without a count of one), and the
 * trace context it carries (the worker's `engine.handleJob` continues that trace).
 */
function identityOf(job: ReactorJob): ReactorJob {
  const { kind, runId, reactorName, snoozes, contentions, deferrals } = job;
  const data: ReactorJob =
    kind === 'resume'
      ? { kind, runId, reactorName, ...(job.unit === true ? { unit: true as const } : {}) }
      : {
          kind,
          runId,
          reactorName,
          mapId: job.mapId,
          index: job.index,
          ...(job.count !== undefined && job.count !== 1 ? { count: job.count } : {}),
        };
  if (snoozes !== undefined) data.snoozes = snoozes;
  if (contentions !== undefined) data.contentions = contentions;
  if (deferrals !== undefined) data.deferrals = deferrals;
  if (job.traceContext !== undefined) data.traceContext = job.traceContext;
  return data;
}
