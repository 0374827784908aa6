/**
 * The spans of jobs, with OpenTelemetry's messaging attributes: a PRODUCER span around each
 * enqueue (`send <queue>`), whose context is what the job carries, and a CONSUMER span around the
 * handling of a job (`process <queue>`), the child of the context the job carried, under which the
 * run and its steps are traced. Made in the engine around the {@link JobDispatcher} port, so every
 * runtime (BullMQ, in-process, a dispatcher of your own) gets them; the adapter only says what it
 * is ({@link JobMessaging}) and how a job reached the worker ({@link JobDelivery}).
 */
import { errorMessage } from '../model/failure';
import type { JobMessaging, ReactorJob } from '../ports/job-dispatcher.port';
import { ReactorTraceAttributes as A, type TraceAttributes, type TraceSpan, type Tracing } from '../tracing/tracing';

/** How the jobs of a dispatcher that does not say ({@link JobDispatcher.messaging}) are traced. */
export const DEFAULT_JOB_MESSAGING: JobMessaging = {
  system: 'nest-reactor',
  destination: () => 'nest-reactor',
};

/**
 * Enqueue `jobs` (of one run) through `send` inside a PRODUCER span, each job carrying that span's
 * context. One span for the call, a batch when there are several (`messaging.batch.message_count`).
 * Without tracing (or without an SDK: nothing to carry), the jobs go as they are, less their
 * `delivery`, which is never enqueued. Resolves to what `send` did (`false`: the job was not added).
 */
export async function sendJobs(
  tracing: Tracing,
  messaging: JobMessaging,
  jobs: ReactorJob[],
  delayMs: number | undefined,
  send: (jobs: ReactorJob[]) => Promise<string | void | false>,
): Promise<string | void | false> {
  if (!tracing.enabled) return send(jobs.map((job) => outgoing(job, undefined)));
  const first = jobs[0];
  const destination = messaging.destination(first);
  const attributes = jobAttributes(messaging.system, destination, 'send', first);
  if (delayMs !== undefined && delayMs > 0) attributes[A.JOB_DELAY_MS] = delayMs;
  if (jobs.length > 1) attributes[A.MESSAGING_BATCH_COUNT] = jobs.length;
  const span = tracing.start(`send ${destination}`, attributes, 'producer');
  const carrier = span.carrier();
  try {
    // With the span active: the spans of the queue's client (BullMQ's own telemetry, a Redis
    // instrumentation) nest under it.
    const id = await span.within(() => send(jobs.map((job) => outgoing(job, carrier))));
    if (typeof id === 'string' && jobs.length === 1) span.set({ [A.MESSAGING_MESSAGE_ID]: id });
    span.end();
    return id;
  } catch (error) {
    fail(span, error);
    throw error;
  }
}

/**
 * Handle `job` inside a CONSUMER span, the child of the context the job carried (a new trace when
 * it carried none: a job of the recovery sweeper). The run's span is made inside it.
 */
export function processJob(
  tracing: Tracing,
  messaging: JobMessaging,
  job: ReactorJob,
  handle: () => Promise<void>,
): Promise<void> {
  if (!tracing.enabled) return handle();
  return tracing.resume(job.traceContext, async () => {
    const { delivery } = job;
    const destination = delivery?.destination ?? messaging.destination(job);
    const attributes = jobAttributes(delivery?.system ?? messaging.system, destination, 'process', job);
    if (delivery?.messageId !== undefined) attributes[A.MESSAGING_MESSAGE_ID] = delivery.messageId;
    if (delivery?.attempt !== undefined) attributes[A.JOB_ATTEMPT] = delivery.attempt;
    const span = tracing.start(`process ${destination}`, attributes, 'consumer');
    try {
      await span.within(handle);
    } catch (error) {
      fail(span, error);
      throw error;
    }
    span.end();
  });
}

function jobAttributes(
  system: string,
  destination: string,
  operation: 'send' | 'process',
  job: ReactorJob,
): TraceAttributes {
  const attributes: TraceAttributes = {
    [A.MESSAGING_SYSTEM]: system,
    [A.MESSAGING_DESTINATION]: destination,
    [A.MESSAGING_OPERATION_TYPE]: operation,
    [A.MESSAGING_OPERATION_NAME]: operation,
    [A.REACTOR]: job.reactorName,
    [A.RUN_ID]: job.runId,
    [A.JOB_KIND]: job.kind,
  };
  if (job.snoozes !== undefined && job.snoozes > 0) attributes[A.JOB_SNOOZES] = job.snoozes;
  return attributes;
}

/** The span ends with status ERROR: the enqueue or the handling threw (an infrastructure error). */
function fail(span: TraceSpan, error: unknown): void {
  span.set({ [A.ERROR_TYPE]: error instanceof Error ? error.name : typeof error });
  span.end(errorMessage(error));
}

/** `job` as it is enqueued: with `carrier` as its trace context (else the one it has), without `delivery`. */
function outgoing(job: ReactorJob, carrier: Record<string, string> | undefined): ReactorJob {
  if (job.delivery === undefined) return carrier ? Object.assign({}, job, { traceContext: carrier }) : job;
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { delivery, ...rest } = job;
  return carrier ? Object.assign(rest, { traceContext: carrier }) : rest;
}
