interface JobIdentity {
  /** The run the job is for (for map jobs: the map's owner run). */
  runId: string;
  reactorName: string;
  /** How many times this job was snoozed by contention. */
  snoozes?: number;
  /** How many times this job waited for a lock, semaphore or rate limit of its run (capped). */
  contentions?: number;
  /** How many times this job went back to the queue because its worker did not know the reactor. */
  deferrals?: number;
  /**
   * The trace context of the code that enqueued the job (W3C `traceparent`, `tracestate`, as the
   * OpenTelemetry propagator writes them), so the worker handles it in the same trace. Metadata,
   * not state: a job without it runs as well.
   */
  traceContext?: Record<string, string>;
}

/** Execute (or resume) a run from its stored state. */
export interface ResumeJob extends JobIdentity {
  kind: 'resume';
}

/**
 * Run elements `index ..< index + count` of fan-out map `mapId` together (a `map-element` job), or
 * undo element `index` (`map-rollback`).
 */
export interface MapElementJob extends JobIdentity {
  kind: 'map-element' | 'map-rollback';
  mapId: string;
  index: number;
  /** Elements in the job, from `index` on. @default 1 */
  count?: number;
}

/** An identity-only job payload. Each carries identity only; workers rehydrate state from storage. */
export type ReactorJob = ResumeJob | MapElementJob;

/** Kinds of job. */
export type JobKind = ReactorJob['kind'];

/** Options of {@link JobDispatcher.dispatch}. */
export interface DispatchOptions {
  delayMs?: number;
  dedupeId?: string;
}

/** Handles a job when it is delivered. */
export type JobHandler = (job: ReactorJob) => Promise<void>;

/**
 * Sends jobs to workers. The in-memory dispatcher runs them in this process; the BullMQ one puts
 * them on queues. State a job depends on is always saved before `dispatch` is called.
 */
export interface JobDispatcher {
  /**
   * Enqueue `job` after `delayMs`. With `dedupeId`, at most one job with that id is pending at a
   * time: while one waits, is delayed or runs, another with the same id is not added (the
   * recovery sweeper uses it so that a run waiting in a long queue is not enqueued again and again).
   */
  dispatch(job: ReactorJob, options?: DispatchOptions): Promise<void>;
  /** Enqueue many jobs at once (map element throws). Defaults to one `dispatch` each. */
  dispatchMany?(jobs: ReactorJob[], options?: { delayMs?: number }): Promise<void>;
}

/** Where the jobs of one reactor go, for a dispatcher with several queues. */
export interface JobRoute {
  /** The named queue; absent: the dispatcher's default queue. */
  readonly queue?: string;
  /** Priority of the jobs in their queue (1 is the highest); absent: none. */
  readonly priority?: number;
}

/**
 * The routing of jobs by reactor, resolved at boot from the reactors' `queue`, `concurrency` and
 * `priority` options. Routing is a scheduling concern only: a job handled from any queue does the
 * same thing, so a job that lands in another queue (enqueued before a deploy moved its reactor) is
 * still handled correctly.
 */
export interface JobRouting {
  /** The route of each reactor (by name) that declares one; the others use the default queue. */
  readonly routes: ReadonlyMap<string, JobRoute>;
  /** Each named queue, with its worker concurrency when one was declared. */
  readonly queues: ReadonlyMap<string, { readonly concurrency?: number }>;
}
