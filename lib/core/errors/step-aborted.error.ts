import { ReactorError } from './reactor.error';

/**
 * Why the engine aborted a step's `ctx.signal`:
 *
 * - `'cancel'`: `client.cancel(runId)` asked the run to stop (the run then undoes its completed steps);
 * - `'shutdown'`: this process is shutting down and `shutdownGraceMs` passed with the step still
 *   running (the run is left for recovery, which resumes it in another process);
 * - `'lease-lost'`: this process lost the run's lease (another worker owns the run now; this one
 *   writes nothing more).
 */
export type StepAbortCause = 'cancel' | 'shutdown' | 'lease-lost';

/** Where an aborted signal belonged: the run, its reactor, the step, and which callback of it. */
export interface StepAbortSite {
  runId: string;
  reactorName: string;
  stepName: string;
  /** The step's body (`run`), or one of its rollback callbacks. */
  phase: 'run' | 'compensate' | 'undo';
}

/**
 * The `reason` of an aborted `ctx.signal`: a step that stops because of it throws this (for example
 * with `ctx.signal.throwIfAborted()`, or by passing the signal to `fetch`, which rejects with it).
 * {@link abortCause} says why; a cancel's own reason is in {@link cancelReason}.
 */
export class StepAbortedError extends ReactorError {
  readonly runId: string;
  readonly reactorName: string;
  readonly stepName: string;
  readonly phase: StepAbortSite['phase'];

  constructor(
    /** Why the signal was aborted. */
    readonly abortCause: StepAbortCause,
    site: StepAbortSite,
    /** The reason given to `cancel`, for {@link abortCause} `'cancel'`. */
    readonly cancelReason?: string,
  ) {
    super('STEP_ABORTED', abortMessage(abortCause, site, cancelReason), { retryable: abortCause !== 'cancel' });
    this.runId = site.runId;
    this.reactorName = site.reactorName;
    this.stepName = site.stepName;
    this.phase = site.phase;
  }
}

/** Whether `error` is the reason of a step signal the engine aborted (of any cause, or of `cause`). */
export function isStepAborted(error: unknown, cause?: StepAbortCause): error is StepAbortedError {
  return error instanceof StepAbortedError && (cause === undefined || error.abortCause === cause);
}

function abortMessage(cause: StepAbortCause, site: StepAbortSite, cancelReason?: string): string {
  const where = `Reactor '${site.reactorName}' run '${site.runId}' step '${site.stepName}'${site.phase === 'run' ? '' : ` (${site.phase})`}`;
  switch (cause) {
    case 'cancel':
      return `${where} was aborted: the run was cancelled (${cancelReason ?? 'cancelled'}); stop and let the run undo its completed steps.`;
    case 'shutdown':
      return `${where} was aborted: this process is shutting down and shutdownGraceMs passed; the run is left for recovery, which resumes it in another process.`;
    case 'lease-lost':
      return `${where} was aborted: this process lost the run's lease; another worker owns the run now and this one writes nothing more.`;
  }
}
