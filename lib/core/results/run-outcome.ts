import type { FieldErrors } from '../errors/input-validation.error';
import type { TraceEntry } from '../executor/run-state';

/** Why one undo or compensation did not complete. */
export type RollbackFailureReason =
  'raised' | 'returnedFailure' | 'contextUnavailable' | 'elementInFlight' | 'coordinationUnavailable';

/** One undo or compensation that did not complete. The rollback walk never stops at one. */
export interface RollbackFailure {
  /** Step whose undo or compensate failed (for composed children: the child's step). */
  step: string;
  /** Which callback failed. */
  kind: 'undo' | 'compensate' | 'undoAll';
  reason: RollbackFailureReason;
  message: string;
  /** Reactor that owns {@link step} (differs from the run's reactor for composed children). */
  reactorName?: string;
  /** Map step and element index, for map elements. */
  mapStep?: string;
  elementIndex?: number;
}

/** Why a run failed, as returned to callers and stored with the run. Inputs are redacted. */
export interface RunFailure {
  /** Human-readable message naming the reactor and step. */
  message: string;
  /** Stable code (`STEP_FAILED`, `INPUT_VALIDATION`, `ARGUMENT_RESOLUTION`, ...). */
  code: string;
  reactorName: string;
  /** The step that failed (absent when the run failed before any step, e.g. input validation). */
  stepName?: string;
  /** Name of the original error's class (`TypeError`, `PaymentDeclinedError`, ...). */
  exceptionClass: string;
  /** The original error's message. */
  errorMessage: string;
  /** Whether the failure was retryable (false for validation and argument errors). */
  retryable: boolean;
  /** Attempts made at the failing step. */
  attempts?: number;
  /** Reactor inputs, with redacted fields replaced by `[REDACTED]`. */
  inputs: Record<string, unknown>;
  /** The failing step's arguments, redacted. */
  stepArguments?: Record<string, unknown>;
  /** Field errors for validation failures. */
  fieldErrors?: FieldErrors;
  /** Every undo or compensation that did not complete; always an array. */
  rollbackFailures: RollbackFailure[];
}

interface RunOutcomeBase {
  runId: string;
  reactorName: string;
  /** Step results computed so far (step name to value). */
  results: Record<string, unknown>;
  /** The per-run execution trace. */
  trace: TraceEntry[];
  /** Attempts made per step. */
  attempts: Record<string, number>;
}

/** The run finished; {@link value} is the returned ref's value, or the map of all results. */
export interface CompletedOutcome<T> extends RunOutcomeBase {
  status: 'completed';
  value: T;
}
/** The run failed and was rolled back; see {@link failure}. */
export interface FailedOutcome extends RunOutcomeBase {
  status: 'failed';
  failure: RunFailure;
}
/** A step halted the run; completed work is kept. */
export interface HaltedOutcome extends RunOutcomeBase {
  status: 'halted';
  stepName: string;
  reason: string;
  details?: unknown;
}
/** The rest of the run was handed to a worker; poll with `get` or `wait`. */
export interface DispatchedOutcome extends RunOutcomeBase {
  status: 'dispatched';
}
/** The run is paused until an external event resumes it. */
export interface PausedOutcome extends RunOutcomeBase {
  status: 'paused';
  stepName: string;
}
/** The run was undone or cancelled. */
export interface CancelledOutcome extends RunOutcomeBase {
  status: 'cancelled';
  reason: string;
  rollbackFailures: RollbackFailure[];
}

/** What `ReactorClient.run` and `wait` resolve to. Switch on `status`. */
export type RunOutcome<T = unknown> =
  CompletedOutcome<T> | FailedOutcome | HaltedOutcome | DispatchedOutcome | PausedOutcome | CancelledOutcome;
