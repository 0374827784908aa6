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
  /**
   * How the job reached this worker (its queue's id of it, the queue, the attempt), for the
   * CONSUMER span of `engine.handleJob`. Not part of the payload: the adapter that delivers the job
   * attaches it with {@link withDelivery}, so no copy or serialization of the job carries it (and
   * the engine drops it when it enqueues a job again).
   */
  delivery?: JobDelivery;
}

/**
 * `job` with how it was delivered, for the CONSUMER span: attached as a non-enumerable property,
 * so it is in no copy (`{ ...job }`), no JSON and no equality of the job, and is never enqueued.
 */
export function withDelivery<J extends ReactorJob>(job: J, delivery: JobDelivery): J {
  Object.defineProperty(job, 'delivery', { value: delivery, enumerable: false, configurable: true, writable: true });
  return job;
}

/** How a job was delivered: what the queue knows of it (see {@link JobIdentity.delivery}). */
export interface JobDelivery {
  /** `messaging.system`; absent: the engine's dispatcher's ({@link JobMessaging.system}). */
  system?: string;
  /** The queue it came from; absent: where the engine's dispatcher sends such a job. */
  destination?: string;
  /** The queue's id of the job (a BullMQ job id). */
  messageId?: string;
  /** Which delivery of the job this is, from 1 (BullMQ: `attemptsStarted`). */
  attempt?: number;
}

/**
 * How a dispatcher's jobs appear in traces: the OpenTelemetry messaging system and the queue a job
 * goes to (`messaging.system`, `messaging.destination.name`). A dispatcher without it is traced as
 * system `nest-reactor`, queue `nest-reactor`.
 */
export interface JobMessaging {
  /** `bullmq`, `in-process`, ... */
  readonly system: string;
  /** The queue `job` goes to. */
  destination(job: ReactorJob): string;
}

/** Execute (or resume) a run from its stored state. */
export interface ResumeJob extends JobIdentity {
  kind: 'resume';
  /**
   * Set on every job of an async unit's run (`r.asyncStep`, `r.asyncReactor`), so that a queue's
   * jobs say which runs are units without reading storage or parsing the run id. A marker only:
   * what a worker does comes from the stored run (its `asyncParent`), so a job queued without it
   * (before this field existed) runs the unit the same way.
   */
  unit?: true;
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
  /** What the engine's job spans say of this dispatcher (see {@link JobMessaging}). */
  readonly messaging?: JobMessaging;
  /**
   * Enqueue `job` after `delayMs`. With `dedupeId`, at most one job with that id is pending at a
   * time: while one waits, is delayed or runs, another with the same id is not added (the
   * recovery sweeper uses it so that a run waiting in a long queue is not enqueued again and again).
   * May resolve to the queue's id of the job (the PRODUCER span's `messaging.message.id`). Resolves
   * to `false` when it did not add the job (a job with the same `dedupeId` is pending, or the
   * dispatcher is closed): what the recovery sweep counts as enqueued is what did not answer `false`.
   */
  dispatch(job: ReactorJob, options?: DispatchOptions): Promise<string | void | false>;
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
