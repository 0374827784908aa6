import type { RunState } from '../model/run-state';

/** Where a parked run waits: a fan-out map's elements (or their rollbacks), or an interrupt's answer. */
export type SuspensionMode = Extract<NonNullable<RunState['handoff']>['mode'], 'map' | 'interrupt' | 'async'>;

/**
 * Returned by a step that waits for work outside this execution (a fan-out map's elements, or a
 * composed child that waits for one): the run parks with its lease released and no job queued;
 * whatever it waits for resumes it. With `retryInMs` the step waits for a retry scheduled inside
 * it (a composed child's step backing off in a worker): the run is resumed by a job after that
 * delay instead. Never returned to users.
 */
export class Suspended {
  readonly kind = 'suspended' as const;
  constructor(
    readonly mode: SuspensionMode = 'map',
    readonly retryInMs?: number,
  ) {}
}

/**
 * Thrown by a rollback that must wait for work outside this execution (a fan-out map's element
 * rollback jobs). The run parks `rolling_back`; the last of that work resumes it.
 */
export class RollbackSuspended extends Error {
  constructor(
    readonly detail: string,
    readonly mode: SuspensionMode = 'map',
  ) {
    super(`rollback waits for ${detail}`);
  }
}
