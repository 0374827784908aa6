import type { MiddlewareRunner } from '../middleware/middleware-runner';
import type { ReactorMiddleware } from '../middleware/events';
import type { Clock } from '../ports/clock.port';
import type { RateLimits } from '../definition/coordination-spec';
import type { CoordinationStore } from '../ports/coordination-store.port';
import type { FlowStore } from '../ports/flow-store.port';
import type { InterruptStore } from '../ports/interrupt-store.port';
import type { JobDispatcher } from '../ports/job-dispatcher.port';
import type { LockManager } from '../ports/lock-manager.port';
import type { MapStore } from '../ports/map-store.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import type { StepResolver } from '../ports/step-resolver.port';
import type { Tracing, TracingOption } from '../tracing/tracing';

/** Where the engine reports what it does not throw. */
export interface EngineLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** The engine's defaults, each defined once. */
export const ENGINE_DEFAULTS = {
  /** TTL of a run's (or element's) lease, extended every third of it while held. */
  leaseTtlMs: 60_000,
  /** Base delay of a snooze when a delivered run is executing elsewhere. */
  snoozeDelayMs: 5_000,
  /** How long `wait` waits for a run, and how often it polls storage. */
  waitTimeoutMs: 30_000,
  waitPollMs: 100,
  /** Most runs (or maps) one recovery sweep looks at. */
  sweepLimit: 1_000,
  /** How many times an element rollback waits for a still-running duplicate of the element. */
  elementRollbackSnoozes: 20,
  /** Element rollback batch of a map whose metadata is gone. */
  mapRollbackBatch: 50,
  /** A job for a reactor this process does not know goes back to the queue this many times... */
  unknownReactorDeferrals: 30,
  /** ...this long apart (30 x 20 s: ten minutes for a deploy to bring a worker that knows it). */
  unknownReactorDelayMs: 20_000,
  /** How long an idempotency key keeps pointing at its run (the default record retention). */
  idempotencyWindowMs: 24 * 60 * 60 * 1000,
  /** How long resume claims and correlation ids are kept (the default record retention). */
  interruptRetentionMs: 24 * 60 * 60 * 1000,
  /** How long a resume that arrives before its run reaches the interrupt is kept. */
  earlyResumeTtlMs: 60 * 60 * 1000,
  /** How long a caller blocks for the async units its run waits on before the run goes to a worker. */
  asyncWaitTimeoutMs: 30_000,
  /** How long a worker waits for an async unit (from its dispatch) before the reading step fails. */
  asyncParkTimeoutMs: 60 * 60 * 1000,
  /** How many times a job waits for its run's lock, semaphore or rate limit before the run fails. */
  lockSnoozeMaxAttempts: 20,
} as const;

/** Options of {@link ReactorEngine}. */
export interface ReactorEngineOptions {
  storage: ReactorStorage;
  locks: LockManager;
  /** Needed for background runs and retries in workers. */
  dispatcher?: JobDispatcher;
  /** Storage of fan-out maps; without it (or a dispatcher) maps run inline. */
  maps?: MapStore;
  /** Resume claims and correlation ids; without it, a reactor with an interrupt is refused. */
  interrupts?: InterruptStore;
  /** How long resume claims and correlation ids are kept: the record retention. @default 24 h */
  interruptRetentionMs?: number;
  /** How long a resume that arrives before its run reaches the interrupt is kept. @default 1 h */
  earlyResumeTtlMs?: number;
  /** How long a caller blocks for async units before its run goes on in a worker. @default 30000 */
  asyncWaitTimeoutMs?: number;
  /** How long a worker waits for an async unit (from its dispatch) before the reading step fails. @default 1 h */
  asyncParkTimeoutMs?: number;
  /** Locks, semaphores, rate limits and periods; without it, a reactor declaring one is refused. */
  coordination?: CoordinationStore;
  /**
   * Flow control of starts (a reactor's `concurrency` per key, `throttle`, `debounce`, `batch`);
   * without it, a reactor declaring one is refused.
   */
  flow?: FlowStore;
  /** Named rate limits (`@Reactor(name, { rateLimit: 'stripe' })`): one bucket per name. */
  rateLimits?: Readonly<Record<string, RateLimits>>;
  /** How many times a job waits for its run's lock, semaphore or rate limit before the run fails. @default 20 */
  lockSnoozeMaxAttempts?: number;
  /** @default systemClock */
  clock?: Clock;
  /** @default constructs each step class once */
  resolver?: StepResolver;
  middleware?: ReactorMiddleware[];
  /** TTL of a run's lease, extended every third of it while the run executes. @default 60000 */
  leaseTtlMs?: number;
  /** Coalesce mid-run checkpoints closer than this. @default 0 (every step) */
  checkpointMinIntervalMs?: number;
  /**
   * A job for a reactor this process does not know (a rolling deploy) goes back to the queue this
   * many times, `unknownReactorDelayMs` apart, before the run is parked. @default 30
   */
  unknownReactorRetries?: number;
  /** @default 20000 */
  unknownReactorDelayMs?: number;
  /**
   * The storage's size limit of a run record (its `maxContextBytes`). With it, a step whose
   * arguments would not fit in its undo entry fails before it runs. @default no check
   */
  maxContextBytes?: number;
  /** Base delay of a snooze when a delivered run is executing elsewhere. @default 5000 */
  snoozeDelayMs?: number;
  /** Random extra delay of a snooze, up to this. @default snoozeDelayMs */
  snoozeJitterMs?: number;
  logger?: EngineLogger;
  /** Run id factory. @default crypto.randomUUID */
  newRunId?: () => string;
  /**
   * How long a `run`/`start` idempotency key keeps pointing at the run it started. Keep it within
   * the storage's record retention (`contextTtlMs`), or a key may outlive its run. @default 24 h
   */
  idempotencyWindowMs?: number;
  /**
   * OpenTelemetry spans of runs and steps, and trace context carried in jobs, through the global
   * `@opentelemetry/api` (a no-op until the application registers an SDK). `false` makes none and
   * carries none; `{ rollbackSpans: true }` adds a span per compensate and undo. @default true
   */
  tracing?: TracingOption;
}

/** Options of one run. */
export interface RunOptions {
  /**
   * Use this run id instead of a new UUID. When a run with this id exists (of the same reactor),
   * it is returned (`replayed: true`) instead of starting another.
   */
  runId?: string;
  /**
   * Start at most one run per key and reactor within the engine's `idempotencyWindowMs`: a later
   * call with the key returns the first run (`replayed: true`; `run` waits for it to finish)
   * instead of starting a second saga. Concurrent callers with one key start one run.
   */
  idempotencyKey?: string;
  /**
   * Tags of the run (issue 25): at most 16 keys (1 to 64 letters, digits, `_`, `.`, `-`) with
   * string values of at most 256 characters, stored on the run and indexed per reactor for
   * `list({ tag })`. Steps add more with `ctx.tag`.
   */
  tags?: Record<string, string>;
}

/** The parts every engine collaborator may be given: the ports and the resolved settings. */
export interface EngineParts {
  readonly storage: ReactorStorage;
  readonly locks: LockManager;
  readonly maps?: MapStore;
  readonly interrupts?: InterruptStore;
  readonly interruptRetentionMs: number;
  readonly earlyResumeTtlMs: number;
  readonly asyncWaitTimeoutMs: number;
  readonly asyncParkTimeoutMs: number;
  readonly coordination?: CoordinationStore;
  readonly flow?: FlowStore;
  readonly lockSnoozeMaxAttempts: number;
  readonly clock: Clock;
  readonly resolver: StepResolver;
  readonly middleware: MiddlewareRunner;
  readonly logger: EngineLogger;
  readonly leaseTtlMs: number;
  readonly checkpointMinIntervalMs?: number;
  readonly maxContextBytes?: number;
  readonly idempotencyWindowMs: number;
  readonly tracing: Tracing;
}
