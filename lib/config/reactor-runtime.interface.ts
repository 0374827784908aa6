import type {
  CoordinationStore,
  FlowStore,
  InterruptStore,
  JobDispatcher,
  JobHandler,
  JobRouting,
  LockManager,
  MapStore,
  ReactorStorage,
  RunEventBus,
  ScheduleBackend,
} from '../core';
import type { ReactorWorkerHost } from './reactor-worker-host.interface';

/**
 * A runtime: the adapters the engine runs on, and how its workers start and stop. The embedded
 * runtime keeps everything in memory; the Redis runtime uses ioredis and BullMQ. The module's
 * lifecycle service drives either through this interface.
 */
export interface ReactorRuntime {
  /** Which runtime this is. */
  readonly kind: 'embedded' | 'redis';
  readonly storage: ReactorStorage;
  readonly locks: LockManager;
  /** Storage of fan-out maps. */
  readonly maps: MapStore;
  /** Resume claims and correlation ids of interrupts, on the same runs as {@link storage}. */
  readonly interrupts: InterruptStore;
  /**
   * Locks, semaphores, rate limits, periods and ordered locks shared by every process on the same
   * backend, with time read from the store.
   */
  readonly coordination: CoordinationStore;
  /** Flow control of starts (concurrency queues per key, throttles, debounce and batch gathers), on the same backend. */
  readonly flow: FlowStore;
  readonly dispatcher: JobDispatcher;
  /**
   * Live run events (`client.watch`) and the wake-ups of `wait`, on the same backend: a Stream per
   * run and pub/sub on Redis, in memory on the embedded runtime.
   */
  readonly runEvents?: RunEventBus;
  /** Where schedules are kept and what fires their ticks (`client.schedules`). */
  readonly schedules?: ScheduleBackend;
  /**
   * Start delivering jobs to `handler`. Called once, at application bootstrap; jobs dispatched
   * earlier wait until then.
   */
  startWorkers(handler: JobHandler): void | Promise<void>;
  /**
   * Resolve once the runtime's storage answers, or throw a coded error that says why it does not
   * (bounded by `connectTimeoutMs`). Called at application bootstrap, before workers start.
   */
  ready?(): Promise<void>;
  /**
   * Take the worker that consumes this runtime's jobs, when that worker is built by Nest rather
   * than by the runtime: the Redis runtime's worker is the `RunProcessor` (`@nestjs/bullmq` builds
   * its BullMQ `Worker`), which calls this when Nest constructs it. The embedded runtime delivers
   * its jobs itself and has no such method.
   */
  attachWorkerHost?(host: ReactorWorkerHost): void;
  /**
   * An `error` event of a worker of the runtime's worker host. The Redis runtime logs connection
   * errors once per outage, whichever connection reports them (storage, queues, workers).
   */
  reportWorkerError?(error: unknown): void;
  /**
   * Take the routing of jobs by reactor (`@Reactor({ queue, concurrency, priority })`), resolved and
   * validated after discovery, before workers start. The Redis runtime creates the named queues
   * and, at start, their workers; the embedded runtime has no queues and no such method.
   */
  routeJobs?(routing: JobRouting): void;
  /** Stop taking jobs. Idempotent; called before application shutdown. */
  stopWorkers(): Promise<void>;
  /** Release what the runtime created (never a connection the application passed in). Idempotent. */
  close(): Promise<void>;
}
