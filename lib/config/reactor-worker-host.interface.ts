import type { JobHandler } from '../core';

/**
 * What the Redis runtime needs of its BullMQ worker: start consuming, and stop (drain, then force).
 * Implemented by {@link RunProcessor}, which `@nestjs/bullmq` turns into a BullMQ `Worker`.
 */
export interface ReactorWorkerHost {
  /**
   * Start consuming jobs, delivering each to `handler`: the default queue's, and those of the named
   * `queues` (`@Reactor({ queue })`), each with its concurrency (else `workerConcurrency`). Called
   * once, at application bootstrap.
   */
  start(handler: JobHandler, queues?: ReadonlyArray<{ name: string; concurrency?: number }>): void;
  /**
   * Stop taking jobs, wait up to `graceMs` for the jobs in hand, then close anyway. Idempotent;
   * resolves when the worker is closed.
   */
  stop(graceMs: number): Promise<void>;
}
