import type { FieldErrors } from '../model/failure';
import { InputValidationError } from './input-validation.error';
import { didYouMean } from './closest-names';
import { ReactorError } from './reactor.error';

/** The interrupt was answered already (by another resume, its timeout, or its last invalid payload). */
export class AlreadyResumedError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly path: string,
    readonly by: 'payload' | 'rejected' | 'timeout' | 'result',
  ) {
    super(
      'ALREADY_RESUMED',
      `Interrupt '${path}' of run '${runId}' was already resumed` +
        (by === 'timeout' ? ' by its timeout' : by === 'rejected' ? ' (its last payload was invalid)' : '') +
        '; this resume was not applied.',
    );
  }
}

/**
 * The payload does not match the interrupt's contract. {@link attemptsLeft} more may be tried; at 0
 * ({@link runFailed}) the run fails with rollback.
 */
export class PayloadValidationError extends InputValidationError {
  constructor(
    message: string,
    fieldErrors: FieldErrors,
    reactorName: string,
    stepName: string,
    /** Invalid payloads so far. */
    readonly attempts: number,
    /** Attempts left before the run fails (`Infinity` when unlimited). */
    readonly attemptsLeft: number,
    /** The run the payload was for (absent when no run was found for it yet). */
    readonly runId?: string,
  ) {
    super(message, fieldErrors, reactorName, stepName, 'PAYLOAD_INVALID');
  }

  /** Whether this was the last attempt: the run fails (rolled back here or by a worker). */
  get runFailed(): boolean {
    return this.attemptsLeft === 0;
  }

  override toJSON() {
    return {
      ...super.toJSON(),
      attempts: this.attempts,
      ...(this.runId !== undefined ? { runId: this.runId } : {}),
    };
  }
}

/** The run is not waiting at an interrupt any more (finished, rolling back, cancelled), or not yet. */
export class NotPausedError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly path: string,
    readonly status: string,
    detail?: string,
  ) {
    super(
      'RUN_NOT_PAUSED',
      `Run '${runId}' is ${status}, not waiting at interrupt '${path}'${detail ? `: ${detail}` : ''}.`,
    );
  }
}

/** The step (or path) named is not an interrupt of the reactor. */
export class UnknownInterruptError extends ReactorError {
  constructor(
    readonly reactorName: string,
    readonly path: string,
    readonly known: readonly string[],
  ) {
    super(
      'INTERRUPT_NOT_FOUND',
      `Reactor '${reactorName}' has no interrupt '${path}'.${didYouMean(path, known)} ` +
        (known.length > 0 ? `Its interrupts: ${known.join(', ')}.` : 'It declares no interrupt.'),
    );
  }
}

/** The interrupt timed out: no payload is accepted after `timeoutAt`; also the failure of a run that timed out. */
export class InterruptTimedOutError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly path: string,
    readonly timeoutAt: number,
  ) {
    super(
      'INTERRUPT_TIMED_OUT',
      `Interrupt '${path}' of run '${runId}' timed out at ${new Date(timeoutAt).toISOString()}.`,
    );
  }
}

/** No run of the reactor waits under this correlation id (and the resume was not to be kept). */
export class UnknownCorrelationIdError extends ReactorError {
  constructor(
    readonly reactorName: string,
    readonly correlationId: string,
  ) {
    super(
      'CORRELATION_ID_NOT_FOUND',
      `No run of reactor '${reactorName}' waits under correlation id '${correlationId}'.`,
    );
  }
}

/** Another live run of the reactor holds the correlation id: the failure of the run that reached it second. */
export class CorrelationIdTakenError extends ReactorError {
  constructor(
    readonly reactorName: string,
    readonly correlationId: string,
    readonly otherRunId: string,
  ) {
    super(
      'CORRELATION_ID_TAKEN',
      `Correlation id '${correlationId}' of reactor '${reactorName}' is held by run '${otherRunId}'; ` +
        'correlation ids are unique among live runs of a reactor.',
    );
  }
}

/** An interrupt inside a map element or an async unit (neither has a run a client can resume). */
export class InterruptNotSupportedError extends ReactorError {
  constructor(reactorName: string, step: string) {
    super(
      'INTERRUPT_NOT_SUPPORTED',
      `Reactor '${reactorName}': interrupt '${step}' is not supported inside a map element or an async unit. ` +
        'Pause the run that maps or dispatches it instead.',
    );
  }
}

/** A worker waited for an async unit longer than `asyncParkTimeoutMs` (from its dispatch): the reading step fails. */
export class AsyncWaitTimeoutError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly step: string,
    readonly unitRunId: string,
    waitedMs: number,
  ) {
    super(
      'ASYNC_WAIT_TIMEOUT',
      `Run '${runId}': async unit '${step}' (run '${unitRunId}') did not finish within ${waitedMs} ms of its dispatch (asyncParkTimeoutMs).`,
    );
  }
}
