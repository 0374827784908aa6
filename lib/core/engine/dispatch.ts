import { InternalError } from '../errors/internal.error';
import type { JobDispatcher, ReactorJob } from '../ports/job-dispatcher.port';
import { NO_TRACING, type Tracing } from '../tracing/tracing';

/** Enqueueing jobs: resumes, snoozes, and many jobs at once, each carrying the active trace context. */
export class Dispatch {
  constructor(
    private readonly dispatcher: JobDispatcher | undefined,
    private readonly snoozeDelayMs: number,
    private readonly snoozeJitterMs: number,
    private readonly tracing: Tracing = NO_TRACING,
  ) {}

  /** Whether this process can enqueue jobs at all. */
  get available(): boolean {
    return this.dispatcher !== undefined;
  }

  /** Enqueue one job, after `delayMs`. */
  async one(job: ReactorJob, delayMs?: number): Promise<void> {
    await this.require(job.reactorName).dispatch(this.traced(job), delayMs === undefined ? undefined : { delayMs });
  }

  /** Enqueue a resume of run `runId`. */
  resume(runId: string, reactorName: string, delayMs?: number): Promise<void> {
    return this.one({ kind: 'resume', runId, reactorName }, delayMs);
  }

  /** Enqueue a recovery resume of run `runId`: at most one is pending per run, however often sweeps find it. */
  async recover(runId: string, reactorName: string): Promise<void> {
    await this.require(reactorName).dispatch(this.traced({ kind: 'resume', runId, reactorName }), {
      dedupeId: `recover-${runId}`,
    });
  }

  /** Re-enqueue a job whose run is busy elsewhere, after the snooze delay plus jitter (at most `maxDelayMs`). */
  async snooze(job: ReactorJob, maxDelayMs?: number): Promise<void> {
    const jitter = Math.floor(Math.random() * this.snoozeJitterMs);
    const delayMs = Math.min(this.snoozeDelayMs + jitter, maxDelayMs ?? Infinity);
    await this.one({ ...job, snoozes: (job.snoozes ?? 0) + 1 }, delayMs);
  }

  /**
   * Re-enqueue a job whose run waits for its lock, semaphore or rate limit: after `retryAfterMs`
   * (a rate limit's exact wait) or the snooze delay plus jitter (a lock or semaphore), counted in
   * the job's `contentions` (the run's retries are not spent).
   */
  async contend(job: ReactorJob, retryAfterMs: number | undefined): Promise<void> {
    const jitter = Math.floor(Math.random() * this.snoozeJitterMs);
    const delayMs = retryAfterMs !== undefined ? retryAfterMs + Math.floor(jitter / 10) : this.snoozeDelayMs + jitter;
    await this.one({ ...job, contentions: (job.contentions ?? 0) + 1 }, delayMs);
  }

  /** Enqueue many jobs at once (map elements), in one call where the dispatcher can. */
  async many(jobs: ReactorJob[], delayMs?: number): Promise<void> {
    const dispatcher = this.require(jobs[0]?.reactorName ?? '(map)');
    const carrier = this.tracing.carrier();
    if (carrier) jobs = jobs.map((job) => ({ ...job, traceContext: carrier }));
    if (dispatcher.dispatchMany) await dispatcher.dispatchMany(jobs, { delayMs });
    else for (const job of jobs) await dispatcher.dispatch(job, { delayMs });
  }

  /**
   * `job` with the active trace context, when there is one (a snoozed job keeps the one it came
   * with: its handler runs in that context).
   */
  private traced(job: ReactorJob): ReactorJob {
    const carrier = this.tracing.carrier();
    return carrier ? { ...job, traceContext: carrier } : job;
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
