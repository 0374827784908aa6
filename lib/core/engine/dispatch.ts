import { InternalError } from '../errors/internal.error';
import type { JobDispatcher, JobMessaging, ReactorJob, ResumeJob } from '../ports/job-dispatcher.port';
import { DEFAULT_JOB_MESSAGING, processJob, sendJobs } from './job-tracing';
import { NO_TRACING, type Tracing } from '../tracing/tracing';

/**
 * The resume job of run `runId`; `unit` (an async unit's run, `asyncParent` in its record) is
 * marked by the job's `unit` field, never by the shape of its id.
 */
export function resumeJob(runId: string, reactorName: string, unit: boolean): ResumeJob {
  return unit ? { kind: 'resume', runId, reactorName, unit: true } : { kind: 'resume', runId, reactorName };
}

/** The resume job of a stored run (an async unit's is marked {@link ResumeJob.unit}). */
export function resumeJobOf(state: { runId: string; reactorName: string; asyncParent?: unknown }): ResumeJob {
  return resumeJob(state.runId, state.reactorName, state.asyncParent !== undefined);
}

/**
 * Enqueueing jobs: resumes, snoozes, and many jobs at once, each inside a PRODUCER span whose
 * context the job carries; and the CONSUMER span around the handling of a job ({@link process}).
 */
export class Dispatch {
  /** What the job spans say of the dispatcher (its messaging system and queues). */
  private readonly messaging: JobMessaging;

  constructor(
    private readonly dispatcher: JobDispatcher | undefined,
    private readonly snoozeDelayMs: number,
    private readonly snoozeJitterMs: number,
    private readonly tracing: Tracing = NO_TRACING,
  ) {
    this.messaging = dispatcher?.messaging ?? DEFAULT_JOB_MESSAGING;
  }

  /** Whether this process can enqueue jobs at all. */
  get available(): boolean {
    return this.dispatcher !== undefined;
  }

  /** Enqueue one job, after `delayMs`. */
  async one(job: ReactorJob, delayMs?: number): Promise<void> {
    const dispatcher = this.require(job.reactorName);
    await sendJobs(this.tracing, this.messaging, [job], delayMs, ([traced]) =>
      dispatcher.dispatch(traced, delayMs === undefined ? undefined : { delayMs }),
    );
  }

  /** Enqueue a resume of run `runId` (`unit`: the run is an async unit's, marked in the job). */
  resume(runId: string, reactorName: string, delayMs?: number, unit = false): Promise<void> {
    return this.one(resumeJob(runId, reactorName, unit), delayMs);
  }

  /**
   * Enqueue a recovery resume of run `runId`: at most one is pending per run, however often sweeps
   * find it. Resolves to whether a job was added (`false`: one was pending already).
   */
  async recover(runId: string, reactorName: string, unit = false): Promise<boolean> {
    const dispatcher = this.require(reactorName);
    const added = await sendJobs(
      this.tracing,
      this.messaging,
      [resumeJob(runId, reactorName, unit)],
      undefined,
      ([traced]) => dispatcher.dispatch(traced, { dedupeId: `recover-${runId}` }),
    );
    return added !== false;
  }

  /** Re-enqueue a job whose run is busy elsewhere, after the snooze delay plus jitter (at most `maxDelayMs`). */
  async snooze(job: ReactorJob, maxDelayMs?: number): Promise<void> {
    const jitter = Math.floor(Math.random() * this.snoozeJitterMs);
    const delayMs = Math.min(this.snoozeDelayMs + jitter, maxDelayMs ?? Infinity);
    await this.one(Object.assign({}, job, { snoozes: (job.snoozes ?? 0) + 1 }), delayMs);
  }

  /**
   * Re-enqueue a job whose run waits for its lock, semaphore or rate limit: after `retryAfterMs`
   * (a rate limit's exact wait) or the snooze delay plus jitter (a lock or semaphore), counted in
   * the job's `contentions` (the run's retries are not spent).
   */
  async contend(job: ReactorJob, retryAfterMs: number | undefined): Promise<void> {
    const jitter = Math.floor(Math.random() * this.snoozeJitterMs);
    const delayMs = retryAfterMs !== undefined ? retryAfterMs + Math.floor(jitter / 10) : this.snoozeDelayMs + jitter;
    await this.one(Object.assign({}, job, { contentions: (job.contentions ?? 0) + 1 }), delayMs);
  }

  /** Enqueue many jobs at once (map elements), in one call where the dispatcher can. */
  async many(jobs: ReactorJob[], delayMs?: number): Promise<void> {
    const dispatcher = this.require(jobs[0]?.reactorName ?? '(map)');
    if (jobs.length === 0) return;
    await sendJobs(this.tracing, this.messaging, jobs, delayMs, async (traced) => {
      if (dispatcher.dispatchMany) await dispatcher.dispatchMany(traced, { delayMs });
      else for (const job of traced) await dispatcher.dispatch(job, { delayMs });
    });
  }

  /**
   * Handle a delivered `job` (`handle`) inside its CONSUMER span, the child of the context the job
   * carried, so the run's spans are under the PRODUCER span of the code that enqueued it.
   */
  process(job: ReactorJob, handle: () => Promise<void>): Promise<void> {
    return processJob(this.tracing, this.messaging, job, handle);
  }

  /** The dispatcher. @throws InternalError naming `reactorName` when none is configured. */
  require(reactorName: string): JobDispatcher {
    if (!this.dispatcher) {
      throw new InternalError(
        `Reactor '${reactorName}' needs a job dispatcher for background work, and none is configured.`,
      );
    }
    return this.dispatcher;
  }
}
