import type { Job, Queue } from 'bullmq';

/** The job states `reactor_queue_jobs` reports. */
export const QUEUE_JOB_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
export type QueueJobState = (typeof QUEUE_JOB_STATES)[number];

/** One queue as a scrape sees it. @internal */
export interface QueueSnapshot {
  readonly queue: string;
  readonly jobs: Readonly<Record<QueueJobState, number>>;
  /** Seconds the oldest job ready for a worker has waited, 0 when none waits. */
  readonly oldestWaitingAgeSeconds: number;
}

/**
 * Read one queue: its job counts (waiting is BullMQ's `waiting`, `paused` and `prioritized` together:
 * the jobs ready for a worker and not taken yet) and the age of its oldest ready job.
 *
 * The age is counted from when the job became ready: added, or due after its delay (a snooze, a
 * retry's backoff). Of a queue's ready jobs, the oldest of the `waiting` and `paused` lists (FIFO) is
 * read, and the next `prioritized` one (a priority queue gives no cheap oldest; the next one is
 * what a worker takes first). Four round trips per queue, whatever its length.
 * @internal
 */
export async function snapshotQueue(queue: Queue, now: number): Promise<QueueSnapshot> {
  const [counts, waiting, paused, prioritized] = await Promise.all([
    queue.getJobCounts('waiting', 'paused', 'prioritized', 'active', 'delayed', 'failed'),
    queue.getJobs(['waiting'], 0, 0, true),
    queue.getJobs(['paused'], 0, 0, true),
    queue.getJobs(['prioritized'], 0, 0, true),
  ]);
  const readySince = [...waiting, ...paused, ...prioritized]
    .filter((job): job is Job => job !== undefined && job !== null)
    .map(readyAt);
  const oldest = readySince.length > 0 ? Math.min(...readySince) : now;
  return {
    queue: queue.name,
    jobs: {
      waiting: (counts.waiting ?? 0) + (counts.paused ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
      failed: counts.failed ?? 0,
    },
    oldestWaitingAgeSeconds: Math.max(0, now - oldest) / 1000,
  };
}

/**
 * When a job became ready: its add time plus its delay. BullMQ zeroes a promoted job's `delay`,
 * so the delay it was added with (`opts.delay`) is used too.
 */
function readyAt(job: Job): number {
  const delay = Math.max(job.delay ?? 0, job.opts?.delay ?? 0);
  return job.timestamp + delay;
}
