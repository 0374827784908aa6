import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Type } from '@nestjs/common';
import type { KeepJobs, RateLimiterOptions } from 'bullmq';
import type { ReactorMiddleware, Clock, InputCipher, RateLimits, TracingOption } from '../core';

/** Where the Redis runtime connects: a URL, or a connection the application owns. */
export type ReactorRedisOptions = (
  | /** A Redis URL; the module creates (and on shutdown closes) its own connections. */
    { url: string }
    /** An existing ioredis connection (or cluster); the module never closes it. */
  | { connection: unknown }
) & {
  /**
   * BullMQ and the run records need Redis's `maxmemory-policy noeviction`: under any other policy
   * a full Redis evicts keys (a job, a lease, a run) silently. The policy is read at bootstrap
   * (`INFO memory`); another one is a warning, or with `true` a boot failure (and the health
   * indicator reports it as down). Not checked when Redis refuses `INFO` (some managed services).
   * @default false
   */
  requireNoEviction?: boolean;
};

/**
 * Job options of the module's BullMQ jobs that an application may set (docs/redis-in-production.md).
 * The others (`jobId`, `delay`, `attempts`, `backoff`, `priority`, ...) carry the module's snoozes,
 * retries and de-duplication and are refused.
 */
export interface ReactorJobOptions {
  /**
   * Completed jobs kept in BullMQ (for Bull Board, metrics): `true` removes each at once, a number
   * or `{ count, age }` keeps the newest ones. Jobs hold run identity only. @default true
   */
  removeOnComplete?: boolean | number | KeepJobs;
  /** Failed jobs kept in BullMQ. @default { count: 1000 } */
  removeOnFail?: boolean | number | KeepJobs;
  /** Log lines kept per job (`job.log`). */
  keepLogs?: number;
  /** Stack trace lines kept per failed attempt. */
  stackTraceLimit?: number;
}

/** Options of the module's BullMQ workers (every queue's: the default one and `@Reactor({ queue })`'s). */
export interface ReactorWorkerOptions {
  /**
   * BullMQ rate limiter of each queue: at most `max` jobs per `duration` ms, over every worker of
   * that queue (all processes). A job is one async boundary of a run (a hand-off, a resume, a map
   * element), not a step. @default none
   */
  limiter?: RateLimiterOptions;
}

/** BullMQ settings of the Redis runtime (docs/redis-in-production.md). */
export interface ReactorBullMqOptions {
  /**
   * `@nestjs/bullmq` config key of a shared configuration the application registered with
   * `BullModule.forRoot(configKey, {...})` (or `forRootAsync`): its settings (`defaultJobOptions`
   * among the allowed job options, `telemetry`, `skipVersionCheck`, `streams`, ...) apply to the
   * module's queues. Its `connection` and `prefix` do not: the module uses `redis` and `prefix`.
   * @default none (the module's own configuration only)
   */
  configKey?: string;
  /** Options of every job the module adds; over those of `configKey`'s `defaultJobOptions`. */
  defaultJobOptions?: ReactorJobOptions;
  /** Options of the module's workers. */
  worker?: ReactorWorkerOptions;
}

/**
 * Options of the recovery sweepers (Redis runtime). The sweeper is a `@Cron` method driven by
 * `@nestjs/schedule`: import `ScheduleModule.forRoot()` once in your application module.
 */
export interface ReactorSweeperOptions {
  /**
   * Schedule the sweeper at bootstrap (Redis runtime, with `ScheduleModule.forRoot()` imported).
   * With `false`, call `ReactorClient.sweepOnce()` from your own scheduler. @default true
   */
  enabled?: boolean;
  /**
   * Milliseconds between sweeps. It becomes a cron schedule aligned to the clock, so it must be a
   * whole number of seconds dividing a minute (1, 2, 3, 4, 5, 6, 10, 12, 15, 20 or 30 s) or of
   * minutes dividing an hour (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60 min); other values fail
   * the boot. @default 30000
   */
  intervalMs?: number;
}

/**
 * Options of {@link ReactorModule.forRoot}, and what the factory of
 * {@link ReactorModule.forRootAsync} returns.
 */
export interface ReactorModuleOptions {
  /**
   * Run on Redis and BullMQ (durable). Without it the module runs embedded: in-memory storage and
   * locks and an in-process dispatcher, for development and tests (not durable).
   */
  redis?: ReactorRedisOptions;
  /** Prefix of every Redis key and queue name of the module. @default 'reactor' */
  prefix?: string;
  /** Observers of run lifecycle events, in order. @default [] */
  middleware?: ReactorMiddleware[];
  /**
   * Encrypts where the runs of reactors declaring `encryptInputs` store their inputs (see
   * `InputCipher`; `createAesGcmInputCipher` makes one from keys). Every process of a deployment
   * needs the same cipher (and every key still in use). Without it, such a reactor fails the boot.
   */
  inputCipher?: InputCipher;
  /** TTL of a run's lease; extended every third of it while the run executes. @default 60000 */
  leaseTtlMs?: number;
  /** Coalesce mid-run checkpoints closer than this many milliseconds. @default 0 (every step) */
  checkpointMinIntervalMs?: number;
  /** Base delay of a snooze when a delivered run is executing elsewhere. @default 5000 */
  snoozeDelayMs?: number;
  /** Time source; tests pass a `FakeClock`. @default the system clock */
  clock?: Clock;
  /**
   * Register the module globally, so `ReactorClient` can be injected everywhere. For
   * `forRootAsync` pass it beside the factory (it changes the module's shape). @default true
   */
  global?: boolean;
  /** Recovery sweepers. */
  sweeper?: ReactorSweeperOptions;
  /**
   * Redis runtime: consume jobs in this process. `false` makes a producer-only process (an API
   * that starts runs and waits for them while other processes execute them). @default true
   */
  workers?: boolean;
  /** Redis runtime: jobs one process executes at once. @default 10 */
  workerConcurrency?: number;
  /**
   * Redis runtime: BullMQ retries of a job whose handling threw an infrastructure error (Redis
   * unreachable mid-job, say), with exponential backoff from one second. When they run out the
   * run is marked `failed` with code `JOB_RETRIES_EXHAUSTED` (not rolled back). Step failures are
   * not infrastructure errors: they follow the step's own `retries`. @default 3
   */
  jobRetryCount?: number;
  /**
   * Redis runtime (and the embedded one with `retention`): how long a live run's record is kept
   * after its last write; a paused run with an interrupt deadline, or a sleeping run, is kept until
   * that deadline plus this. @default 86400000 (24 h)
   */
  contextTtlMs?: number;
  /**
   * How long a finished run's record is kept after its last write, per status it ended in (ms, from
   * 1000 to 10 years each): `{ completed: 3_600_000, failed: 30 * 86_400_000 }`. A run undone later
   * (`completed`, then `cancelled`) takes the retention of its new status. The embedded runtime,
   * which otherwise keeps runs until the application stops, expires records as Redis does once this
   * is given. @default contextTtlMs each
   */
  retention?: ReactorRetentionOptions;
  /**
   * Size limit of one stored run (UTF-8 bytes of all the fields of its record). A step whose
   * result would exceed it fails with `CONTEXT_TOO_LARGE`. @default 16777216 (16 MiB)
   */
  maxContextBytes?: number;
  /**
   * Redis runtime: number of shards runs are spread over (see `RedisKeys`). Fixed per deployment:
   * the count is recorded at the first boot under a prefix, and a module configured with another
   * one fails its boot (changing it under live data would strand existing runs). @default 128
   */
  shards?: number;
  /**
   * Redis runtime: on shutdown, how long workers may finish the jobs in hand before they are
   * closed anyway (the runs they held are recovered by the sweeper once their lease expires).
   * @default 10000
   */
  shutdownGraceMs?: number;
  /**
   * Redis runtime: how long the application's bootstrap waits for Redis to answer a `PING`. When
   * it does not, the bootstrap fails with a `ConfigurationError` that says so, instead of the first
   * run hanging on a connection that never comes. @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * A job for a reactor this process does not know (a rolling deploy: an older worker took it) goes
   * back to the queue this many times, `unknownReactorDelayMs` apart, for a worker that knows it;
   * then the run is parked (the sweeper offers it again later). Its record is never touched.
   * @default 30
   */
  unknownReactorRetries?: number;
  /** @default 20000 */
  unknownReactorDelayMs?: number;
  /**
   * How long a `run`/`start` `idempotencyKey` keeps pointing at the run it started; at most
   * `contextTtlMs` (a key must not outlive its run). @default contextTtlMs
   */
  idempotencyWindowMs?: number;
  /**
   * How long a resume that arrives before its run reaches the interrupt (`continue` of a run that
   * is still running, `continueByCorrelationId` of an id no run holds yet) is kept for it; at most
   * `contextTtlMs`. @default 3600000 (1 h)
   */
  earlyResumeTtlMs?: number;
  /**
   * How long `run` blocks for the async units (`asyncStep`, `asyncReactor`) its run waits on before
   * the run goes on in a worker (`dispatched`). @default 30000
   */
  asyncWaitTimeoutMs?: number;
  /**
   * How long a worker waits for an async unit, from its dispatch, before the step reading it fails
   * with `ASYNC_WAIT_TIMEOUT` (the run rolls back). @default 3600000 (1 h)
   */
  asyncParkTimeoutMs?: number;
  /**
   * Named rate limits, shared by every reactor that names them (`@Reactor(name, { rateLimit:
   * 'stripe' })`): `{ stripe: { second: 25 }, mailer: [{ windowMs: 10_000, limit: 50 }] }`. A reactor
   * naming one that is not here fails the boot. @default {}
   */
  rateLimits?: Record<string, RateLimits>;
  /**
   * How many times a job waits for its run's lock, semaphore or rate limit (snoozed, its retries
   * not spent) before the run fails with the contention's code. @default 20
   */
  lockSnoozeMaxAttempts?: number;
  /**
   * OpenTelemetry spans of runs and steps, and the trace context carried in jobs, through the
   * global `@opentelemetry/api`: a no-op until the application registers an OpenTelemetry SDK.
   * `false` makes no spans and carries no context (docs/observability.md); `{ rollbackSpans: true }`
   * adds a span per compensate and undo callback. @default true
   */
  tracing?: TracingOption;
  /**
   * Write every run's lifecycle events (step started, completed, failed, retrying, paused, resumed,
   * finished) to a per-run log that `client.watch(runId)` and the dashboard replay and follow: one
   * more Redis command per event. Without it, `watch` yields only `run.paused` and `run.finished`
   * (read from storage when a run settles), and `wait` still wakes at once. @default false
   */
  liveEvents?: boolean;
  /** Redis runtime: BullMQ job and worker options, and the application's shared BullMQ configuration. */
  bullmq?: ReactorBullMqOptions;
}

/** How long a finished run's record is kept, per status it ended in (ms). See `ReactorModuleOptions.retention`. */
export interface ReactorRetentionOptions {
  completed?: number;
  failed?: number;
  /** Stopped by `halt` (completed work kept, nothing rolled back). */
  halted?: number;
  /** Cancelled, or undone after it finished. */
  cancelled?: number;
}

/** {@link ReactorModuleOptions} after validation, with every default applied. */
export interface ResolvedReactorModuleOptions {
  readonly redis?: Readonly<ReactorRedisOptions>;
  readonly prefix: string;
  readonly middleware: readonly ReactorMiddleware[];
  readonly inputCipher?: InputCipher;
  readonly leaseTtlMs: number;
  readonly checkpointMinIntervalMs: number;
  readonly snoozeDelayMs: number;
  readonly clock: Clock;
  readonly global: boolean;
  readonly sweeper: Readonly<Required<ReactorSweeperOptions>>;
  readonly workers: boolean;
  readonly workerConcurrency: number;
  readonly jobRetryCount: number;
  readonly contextTtlMs: number;
  /** The retention of the statuses given (the others: `contextTtlMs`). */
  readonly retention: Readonly<ReactorRetentionOptions>;
  readonly maxContextBytes: number;
  readonly shards: number;
  readonly shutdownGraceMs: number;
  readonly connectTimeoutMs: number;
  readonly unknownReactorRetries: number;
  readonly unknownReactorDelayMs: number;
  readonly idempotencyWindowMs: number;
  readonly earlyResumeTtlMs: number;
  readonly asyncWaitTimeoutMs: number;
  readonly asyncParkTimeoutMs: number;
  readonly rateLimits: Readonly<Record<string, RateLimits>>;
  readonly lockSnoozeMaxAttempts: number;
  readonly tracing: TracingOption;
  /** @default false */
  readonly liveEvents?: boolean;
  readonly bullmq: {
    readonly configKey?: string;
    readonly defaultJobOptions: Readonly<ReactorJobOptions>;
    readonly worker: Readonly<ReactorWorkerOptions>;
  };
}

/**
 * Which runtime a module runs: `embedded` (in memory, not durable) or `redis` (Redis and BullMQ).
 * It decides which providers the module has, so `forRootAsync` takes it beside the factory.
 */
export type ReactorRuntimeKind = 'embedded' | 'redis';

/** What an async configuration returns: every module option but `global` (given beside it). */
export type ReactorAsyncModuleOptions = Omit<ReactorModuleOptions, 'global'>;

/**
 * A provider that builds the module options, for `forRootAsync({ useClass })` or
 * `forRootAsync({ useExisting })` (Nest's `ConfigurableModuleBuilder` convention; the method is
 * `createReactorOptions`).
 *
 * ```ts
 * @Injectable()
 * export class ReactorConfig implements ReactorOptionsFactory {
 *   constructor(private readonly config: ConfigService) {}
 *   createReactorOptions() {
 *     return { redis: { url: this.config.getOrThrow('REDIS_URL') } };
 *   }
 * }
 * ```
 */
export interface ReactorOptionsFactory {
  createReactorOptions(): ReactorAsyncModuleOptions | Promise<ReactorAsyncModuleOptions>;
}

/**
 * Options of {@link ReactorModule.forRootAsync}: module options from a factory that may inject
 * providers (e.g. a `ConfigService`), with Nest's `ConfigurableModuleBuilder` conventions: exactly
 * one of `useFactory` (with `inject`), `useClass` or `useExisting` (a {@link ReactorOptionsFactory}),
 * and `imports` for the modules they need.
 *
 * ```ts
 * ReactorModule.forRootAsync({
 *   runtime: 'redis',
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ redis: { url: config.getOrThrow('REDIS_URL') } }),
 * })
 * ```
 */
export interface ReactorModuleAsyncOptions {
  /** Modules that export the providers listed in {@link inject} (or those `useClass` needs). */
  imports?: ModuleMetadata['imports'];
  /** Providers passed to {@link useFactory}, in order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  /** Returns the module options (all but `global`). */
  useFactory?: (...deps: never[]) => ReactorAsyncModuleOptions | Promise<ReactorAsyncModuleOptions>;
  /** A class the module instantiates (with DI) and asks for the options. */
  useClass?: Type<ReactorOptionsFactory>;
  /** An existing provider (from {@link imports} or a global module) asked for the options. */
  useExisting?: InjectionToken<ReactorOptionsFactory>;
  /** Register the module globally. @default true */
  global?: boolean;
  /**
   * The runtime the options configure: `'redis'` when they hold a `redis` option, else
   * `'embedded'`. It is given here because it decides the module's providers (BullMQ queue and
   * worker, sweeper) before the factory runs; options that disagree fail the boot with an error
   * that says to pass `runtime: 'redis'` here.
   * @default 'embedded'
   */
  runtime?: ReactorRuntimeKind;
}
