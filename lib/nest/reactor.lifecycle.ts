import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { ReactorEngine } from '../core';
import { SweeperScheduler } from '../sweepers/sweeper.scheduler';
import { ReactorSchedules } from './reactor-schedules';
import { CLIENT_ONLY_PROCESS } from './reactor-module.options';
import {
  type ReactorRuntime,
  type ResolvedReactorModuleOptions,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  messages,
} from '../config';

/**
 * The module's start and stop, in one place (collection happens earlier, in the explorer's
 * `onModuleInit`):
 *
 * - `onApplicationBootstrap`: workers start consuming jobs (every reactor is registered by then),
 *   then the sweeper is scheduled (Redis runtime);
 * - `beforeApplicationShutdown`: the sweeper stops (a sweep in progress finishes), then the
 *   workers stop taking jobs and drain for up to `shutdownGraceMs` before they are closed anyway;
 *   alongside, the engine waits for every run executing in this process (jobs, inline `run`
 *   calls) for the same grace, then aborts the `ctx.signal` of their steps still running (cause
 *   `shutdown`) and waits up to `shutdownGraceMs` more for them to stop: a stopped run writes
 *   nothing more and releases its lease, and on the Redis runtime is handed off at once (a resume
 *   job, or a map element's job, enqueued as the lease is given back: the queue is still open, it
 *   closes in `onApplicationShutdown`), so another worker carries it on without waiting for the
 *   sweeper; the embedded runtime is one process, whose runs end with it;
 * - `onApplicationShutdown`: the runtime closes its queue, then the Redis connections it created
 *   (never a connection the application passed in).
 *
 * Leases: a run that finishes releases its own lease in its final save, and a run stopped by the
 * shutdown's abort releases it (and is handed off) as it stops. A run whose step ignores its signal
 * past the second grace keeps its lease until it expires (`leaseTtlMs`); the sweeper then
 * re-enqueues it (see docs/recovery.md).
 *
 * Every step runs in its own try/catch, so one failing cleanup never skips the next. The hooks
 * live in the module's inner (non-global) module, so Nest runs them after every global module's
 * bootstrap (`@nestjs/schedule` mounts its cron jobs then) and before their shutdown
 * (`@nestjs/bullmq` closes its workers and queues then; closing twice is harmless).
 *
 * `app.close()` runs the shutdown hooks; `app.enableShutdownHooks()` also runs them on SIGTERM.
 */
@Injectable()
export class ReactorLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(REACTOR_LOGGER_CONTEXT);

  constructor(
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    private readonly engine: ReactorEngine,
    @Inject(REACTOR_OPTIONS) private readonly options: ResolvedReactorModuleOptions,
    @Optional() private readonly scheduler?: SweeperScheduler,
    @Optional() private readonly schedules?: ReactorSchedules,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.runtime.ready?.();
    try {
      // Declared schedules match the code, before any worker runs; ticks are handled where jobs are
      // (embedded: always).
      // A client-only process (the CLI, booting an app to call its client) keeps its hands off the
      // schedules: the build it loads may not be the one deployed.
      const clientOnly = (globalThis as Record<symbol, unknown>)[CLIENT_ONLY_PROCESS] === true;
      if (!clientOnly) await this.schedules?.start(this.runtime.kind === 'embedded' || this.options.workers);
    } catch (error) {
      // The bootstrap fails: let go of what the runtime opened (no shutdown hook runs after it).
      await this.runtime.close().catch(() => undefined);
      throw error;
    }
    await this.runtime.startWorkers((job) => this.engine.handleJob(job));
    this.scheduler?.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    try {
      await this.schedules?.stop();
    } catch (error) {
      this.logger.warn(messages.cleanupFailed('stop the schedules', error));
    }
    try {
      await this.scheduler?.stop();
    } catch (error) {
      this.logger.warn(messages.cleanupFailed('stop the sweeper', error));
    }
    // The grace starts for the engine's executions as it does for the workers' jobs, so that the
    // steps' signals are aborted when the workers let go of their jobs.
    // On the Redis runtime a run stopped here is handed off (its job enqueued again as it gives its
    // lease back): the queue outlives this process. The embedded runtime's queue ends with it.
    const handOff = this.runtime.kind === 'redis';
    const draining = this.engine.drain(this.options.shutdownGraceMs, { handOff }).then(
      ({ aborted, left }) => {
        if (aborted > 0) this.logger.warn(messages.shutdownAbortedSteps(aborted, left, this.options.shutdownGraceMs));
      },
      (error: unknown) => this.logger.warn(messages.cleanupFailed('stop the runs executing here', error)),
    );
    try {
      await this.runtime.stopWorkers();
    } catch (error) {
      this.logger.warn(messages.cleanupFailed('stop the workers', error));
    }
    await draining;
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.runtime.close();
    } catch (error) {
      this.logger.warn(messages.cleanupFailed('close the runtime', error));
    }
  }
}
