import { getQueueToken } from '@nestjs/bullmq';
/**
 * Name of the BullMQ queue every nest-reactor job goes through. With the Redis runtime the module
 * registers it with `@nestjs/bullmq`, so `@InjectQueue(REACTOR_QUEUE_NAME)` (or
 * {@link reactorQueueToken}) gives the `Queue` (for Bull Board, queue metrics, ...). Its keys use
 * the prefix `<prefix>:{<prefix>:queue}` (see `bullMqPrefix`).
 */
export const REACTOR_QUEUE_NAME = 'nest-reactor';

/**
 * The `@nestjs/bullmq` config key nest-reactor registers its BullMQ settings under, so the app's
 * own `BullModule.forRoot()` (the default key) is never replaced or read.
 */
export const REACTOR_BULL_CONFIG_KEY = 'nest-reactor';

/** First delay of the exponential backoff between infrastructure retries of a job. */
export const JOB_BACKOFF_BASE_MS = 1_000;

/** Failed jobs BullMQ keeps for inspection (the newest ones). */
export const FAILED_JOBS_KEPT = 1_000;

/**
 * What BullMQ keeps of the module's jobs unless `bullmq.defaultJobOptions` says otherwise:
 * completed jobs are removed at once (they hold run identity only; the run's record is the
 * history), the newest {@link FAILED_JOBS_KEPT} failed ones are kept.
 */
export const DEFAULT_JOB_OPTIONS = Object.freeze({
  removeOnComplete: true,
  removeOnFail: Object.freeze({ count: FAILED_JOBS_KEPT }),
});

/**
 * The BullMQ `prefix` for a module `prefix`: `<prefix>:{<prefix>:queue}`, and for a reactor's own
 * queue `queue`, `<prefix>:{<prefix>:queue:<queue>}` (each queue in a slot of its own, so on a
 * Redis Cluster the queues spread over the masters). Every BullMQ key starts
 * with it, so the queue's keys live under the application's prefix, and the hash tag puts all of
 * them in one Redis Cluster slot (BullMQ's scripts touch several keys of a queue at once, so on a
 * cluster its prefix must carry a hash tag).
 */
export function bullMqPrefix(prefix: string, queue?: string): string {
  return queue === undefined ? `${prefix}:{${prefix}:queue}` : `${prefix}:{${prefix}:queue:${queue}}`;
}

/** The injection token of the module's BullMQ `Queue` (Redis runtime): `getQueueToken(REACTOR_QUEUE_NAME)`. */
export function reactorQueueToken(): string {
  return getQueueToken(REACTOR_QUEUE_NAME);
}
