import type { Job } from 'bullmq';
import { withDelivery, type JobMessaging, type ReactorJob } from '../core';

/** `messaging.system` of the jobs on BullMQ queues (OpenTelemetry messaging attributes). */
export const BULLMQ_MESSAGING_SYSTEM = 'bullmq';

/**
 * The job's data as the engine handles it, with how BullMQ delivered it (its id, its queue, which
 * delivery this is), for the CONSUMER span of `engine.handleJob`. Attached out of the payload
 * ({@link withDelivery}): never enqueued again, so the payload stays identity only.
 */
export function deliveredJob(job: Job<ReactorJob>): ReactorJob {
  return withDelivery(job.data, {
    system: BULLMQ_MESSAGING_SYSTEM,
    destination: job.queueName,
    messageId: job.id,
    // Counts every time a worker took the job (stalled and retried deliveries too), from 1.
    attempt: Math.max(job.attemptsStarted ?? 0, job.attemptsMade + 1),
  });
}

/** The {@link JobMessaging} of a BullMQ dispatcher: system `bullmq`, the queue a job is routed to. */
export function bullMqMessaging(queueOf: (job: ReactorJob) => { name: string }): JobMessaging {
  return { system: BULLMQ_MESSAGING_SYSTEM, destination: (job) => queueOf(job).name };
}
