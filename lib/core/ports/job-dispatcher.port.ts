/** Kinds of job. Each carries identity only; workers rehydrate state from storage. */
export type JobKind = 'resume' | 'map-element' | 'map-collect' | 'map-rollback';

/** An identity-only job payload. */
export interface ReactorJob {
  kind: JobKind;
  runId: string;
  reactorName: string;
  /** How many times this job was snoozed by contention. */
  snoozes?: number;
  /** For map jobs: the map's id and the element index. */
  mapId?: string;
  index?: number;
}

/** Handles a job when it is delivered. */
export type JobHandler = (job: ReactorJob) => Promise<void>;

/**
 * Sends jobs to workers. The in-memory dispatcher runs them in this process; the BullMQ one puts
 * them on queues. State a job depends on is always saved before `dispatch` is called.
 */
export interface JobDispatcher {
  dispatch(job: ReactorJob, options?: { delayMs?: number }): Promise<void>;
  /** Enqueue many jobs at once (map element throws). Defaults to one `dispatch` each. */
  dispatchMany?(jobs: ReactorJob[], options?: { delayMs?: number }): Promise<void>;
}
