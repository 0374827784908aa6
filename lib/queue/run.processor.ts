import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger } from '@nestjs/common';
import { Worker, type Job } from 'bullmq';
import { ConfigurationError, ReactorEngine, type JobHandler, type ReactorJob } from '../core';
import {
  type ResolvedReactorModuleOptions,
  type ReactorRuntime,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  messages,
  type ReactorWorkerHost,
} from '../config';
import { deliveredJob } from './job-delivery';
import { REACTOR_BULL_CONFIG_KEY, REACTOR_QUEUE_NAME } from './queue.constants';
import { bullMqQueueOptions } from './reactor-queue.imports';

/** Code of the failure of a run whose job kept throwing until BullMQ's attempts ran out. */
export const JOB_RETRIES_EXHAUSTED = 'JOB_RETRIES_EXHAUSTED';

/** States of the worker, in order. */
export type RunWorkerState = 'idle' | 'running' | 'draining' | 'stopped';

/**
 * The BullMQ processor of the module's queue. `@nestjs/bullmq` builds its `Worker` during module
 * init with `autorun: false`; the worker starts consuming only when the runtime starts it at
 * application bootstrap (every reactor is registered by then), with `workerConcurrency`.
 *
 * - `process(job)` hands the identity-only job to the engine (`handleJob`): the engine reads the
 *   run from Redis, takes its lease and executes it. A throw is an infrastructure error: BullMQ
 *   retries the job with backoff, up to `jobRetryCount` times.
 * - When a job has failed its last attempt, the run is marked `failed` with code
 *   `JOB_RETRIES_EXHAUSTED` (`engine.failRun`: not rolled back, so `undo` can still roll it back).
 * - Named queues (`@Reactor(name, { queue, concurrency })`, known only after discovery): `start`
 *   builds one BullMQ `Worker` for each, with the module's connection and prefix and the queue's
 *   concurrency (else `workerConcurrency`), processing its jobs exactly like the default queue's
 *   (`process`, `onFailed`), so a slow reactor saturating its own queue leaves the others' workers free.
 * - `stop(graceMs)` (shutdown): the worker stops fetching and waits for the jobs in hand; after
 *   `graceMs` it lets go of them (their BullMQ jobs complete, their runs keep executing as long as
 *   the process lives) so the worker can close. At the same moment the engine's drain aborts their
 *   steps' signals: a run that stops gives its lease back and is handed off (a new resume job on the
 *   queue, for another worker); a run whose step ignores its signal keeps its lease until it
 *   expires, and the sweeper re-enqueues it then (docs/recovery.md).
 */
@Processor({ name: REACTOR_QUEUE_NAME, configKey: REACTOR_BULL_CONFIG_KEY }, { autorun: false })
export class RunProcessor extends WorkerHost implements ReactorWorkerHost {
  private readonly logger = new Logger(REACTOR_LOGGER_CONTEXT);
  private handler?: JobHandler;
  private current: RunWorkerState = 'idle';
  private active = 0;
  private lettingGo = false;
  /**
   * What lets go of each job in hand (its `process` resolves at once): called when the shutdown's
   * grace has passed. One entry per job, removed when the job settles (nothing accumulates).
   */
  private readonly inHand = new Set<() => void>();
  private stopping?: Promise<void>;
  /** The workers of the named queues, built at start. */
  private readonly namedWorkers: Worker[] = [];

  constructor(
    private readonly engine: ReactorEngine,
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    @Inject(REACTOR_OPTIONS) private readonly options: ResolvedReactorModuleOptions,
  ) {
    super();
    // NOTE: through the runtime interface, not `instanceof RedisReactorRuntime`: the queue adapters
    // sit below the runtimes and do not import them.
    runtime.attachWorkerHost?.(this);
  }

  /** Where the worker is in its life. */
  get state(): RunWorkerState {
    return this.current;
  }

  /** Jobs being processed now. */
  get activeJobs(): number {
    return this.active;
  }

  /** The BullMQ workers of the named queues (started at bootstrap), for inspection. */
  get queueWorkers(): readonly Worker[] {
    return this.namedWorkers;
  }

  start(handler: JobHandler, queues: ReadonlyArray<{ name: string; concurrency?: number }> = []): void {
    if (this.current !== 'idle') return;
    const worker = this.requireWorker();
    this.handler = handler;
    worker.concurrency = this.options.workerConcurrency;
    // @nestjs/bullmq built the worker with the decorator's options; the module's worker options
    // (read by BullMQ when it fetches a job) are added here, before it runs.
    Object.assign(worker.opts, this.options.bullmq.worker);
    this.current = 'running';
    const named = queues.map(({ name, concurrency }) => ({
      name,
      concurrency: concurrency ?? this.options.workerConcurrency,
    }));
    for (const { name, concurrency } of named) this.namedWorkers.push(this.namedWorker(name, concurrency));
    if (named.length > 0) this.logger.log(messages.namedWorkersStarted(named));
    // NOTE: run() resolves only when the worker closes; it is not awaited.
    for (const w of [worker, ...this.namedWorkers]) {
      w.run().catch((error: unknown) => this.logger.error(messages.queueError('worker', error)));
    }
  }

  /** A worker of named queue `name`: the same processing and events as the default queue's. */
  private namedWorker(name: string, concurrency: number): Worker {
    const worker = new Worker<ReactorJob>(name, (job) => this.process(job), {
      ...bullMqQueueOptions(this.options, name),
      telemetry: this.worker.opts.telemetry,
      ...this.options.bullmq.worker,
      concurrency,
      autorun: false,
    });
    worker.on('failed', (job, error) => {
      this.onFailed(job, error).catch((e: unknown) => this.logger.error(messages.queueError('worker', e)));
    });
    worker.on('error', (error) => this.onError(error));
    return worker;
  }

  stop(graceMs: number): Promise<void> {
    this.stopping ??= this.drainThenClose(graceMs);
    return this.stopping;
  }

  async process(job: Job<ReactorJob>): Promise<void> {
    const handler = this.handler;
    if (!handler) throw new ConfigurationError(messages.workerNotRegistered());
    // Fetched after the shutdown let go of running jobs: leave it to another worker.
    // NOTE: a plain Error: it only tells BullMQ to retry the job elsewhere; the application never sees it.
    if (this.lettingGo) throw new Error(messages.workerShuttingDown());
    this.active++;
    const work = this.handle(handler, job);
    // Settles with the job, or at once when the shutdown lets go of the jobs in hand.
    await new Promise<void>((resolve, reject) => {
      this.inHand.add(resolve);
      work.then(
        () => {
          this.inHand.delete(resolve);
          resolve();
        },
        (error: unknown) => {
          this.inHand.delete(resolve);
          // After a forced shutdown nobody awaits the job any more: say what happened to the run.
          if (this.lettingGo) this.logger.warn(messages.abandonedJobFailed(job.data.runId, error));
          reject(error);
        },
      );
    });
  }

  /** Hand the job to the engine; counted in {@link activeJobs} until it settles. */
  private async handle(handler: JobHandler, job: Job<ReactorJob>): Promise<void> {
    try {
      await handler(deliveredJob(job));
    } finally {
      this.active--;
    }
  }

  /** A job failed an attempt; after its last one, the run is marked failed. */
  @OnWorkerEvent('failed')
  async onFailed(job: Job<ReactorJob> | undefined, error: Error): Promise<void> {
    if (!job?.data?.runId) return;
    const attempts = job.opts.attempts ?? 1;
    if (job.attemptsMade < attempts) return;
    await this.engine.failRun(job.data.runId, {
      code: JOB_RETRIES_EXHAUSTED,
      message: messages.jobRetriesExhausted(job.attemptsMade, error),
      exceptionClass: error?.name ?? 'Error',
    });
  }

  /** BullMQ reports connection and script errors here (without a listener they would throw). */
  @OnWorkerEvent('error')
  onError(error: Error): void {
    if (this.runtime.reportWorkerError) this.runtime.reportWorkerError(error);
    else this.logger.error(messages.queueError('worker', error));
  }

  /** Drain and close every worker (the default queue's and the named queues'), under one grace period. */
  private async drainThenClose(graceMs: number): Promise<void> {
    const workers: Worker[] = [...this.namedWorkers];
    try {
      workers.unshift(this.worker);
    } catch {
      // No default worker (@nestjs/bullmq did not build it): close the others.
    }
    if (workers.length === 0) {
      this.current = 'stopped';
      return;
    }
    this.current = 'draining';
    // Closing a worker whose connections are mid-handshake leaves ioredis timers behind; a worker
    // closed right after boot first waits (briefly) for them.
    await Promise.all(workers.map((worker) => settlesWithin(worker.waitUntilReady(), 1_000).catch(() => false)));
    const closing = Promise.all(
      workers.map((worker) =>
        worker.close().catch((error: unknown) => {
          this.logger.warn(messages.cleanupFailed(`close the BullMQ worker of queue '${worker.name}'`, error));
        }),
      ),
    );
    if (!(await settlesWithin(closing, graceMs))) {
      this.logger.warn(messages.shutdownGraceExpired(this.active, graceMs));
      this.lettingGo = true;
      for (const letGo of this.inHand) letGo();
      this.inHand.clear();
      if (!(await settlesWithin(closing, graceMs))) {
        this.logger.warn(messages.cleanupFailed('close the BullMQ worker in time', 'it is still closing'));
      }
    }
    for (const worker of workers) await stopStrayStalledCheck(worker);
    this.current = 'stopped';
  }

  private requireWorker(): Worker {
    try {
      return this.worker;
    } catch {
      throw new ConfigurationError(messages.workerNotRegistered());
    }
  }
}

/**
 * NOTE: works around a BullMQ 5 race. A worker closed while its stalled-jobs check is in flight
 * (typically right after it started) arms that check's next `stalledInterval` timer (30 s) after
 * `close()` already stopped it, which keeps the process alive. Stop it again until the checker
 * has exited. Uses two private fields; does nothing if they are gone.
 */
async function stopStrayStalledCheck(worker: Worker): Promise<void> {
  const internals = worker as unknown as { stalledCheckerRunning?: boolean; stalledCheckStopper?: () => void };
  const deadline = Date.now() + 2_000;
  while (internals.stalledCheckerRunning === true && Date.now() < deadline) {
    internals.stalledCheckStopper?.();
    await new Promise<void>((resolve) => setTimeout(resolve, 5).unref());
  }
}

/** Whether `promise` settles within `ms` (the timer is cleared either way). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
