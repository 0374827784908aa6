/**
 * Why runs fail and what their rollbacks could not do: the records stored with a run and shown to
 * callers, one constructor for them, and one way to describe any thrown value.
 */

/** Field path (dot-separated) to the messages of every constraint it violated. */
export type FieldErrors = Record<string, string[]>;

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
  /**
   * Where the failure started, when {@link stepName} is a compose or map step whose nested work
   * failed: the child's (or element's) reactor and step, the element index, and its message.
   */
  cause?: FailureCause;
}

/** Where a failure inside nested work (a composed child, a map element) started. */
export interface FailureCause {
  reactorName: string;
  /** The failing step of that reactor (absent when it failed before any step, e.g. its inputs). */
  stepName?: string;
  /** For a map: the element that failed. */
  elementIndex?: number;
  code: string;
  /** The nested failure's message (it names its reactor and step). */
  message: string;
  exceptionClass: string;
  /** Deeper still, when that step was itself a compose or map step. */
  cause?: FailureCause;
}

/** What {@link describeError} reads off any thrown value. */
export interface ErrorDescription {
  /** The error's message; a string as is; anything else as JSON (or `String(value)`). */
  message: string;
  /** The error's class name, or `typeof` for non-errors. */
  exceptionClass: string;
  /** An error's own boolean `retryable` (every `ReactorError` has one); otherwise true. */
  retryable: boolean;
}

/** Describe a thrown value (an `Error` or anything else) for a failure record. */
export function describeError(error: unknown): ErrorDescription {
  return { message: errorMessage(error), exceptionClass: errorClass(error), retryable: errorRetryable(error) };
}

/** The message of a thrown value. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

function errorClass(error: unknown): string {
  if (error instanceof Error) return error.constructor?.name ?? error.name;
  return typeof error;
}

function errorRetryable(error: unknown): boolean {
  if (
    error &&
    typeof error === 'object' &&
    'retryable' in error &&
    typeof (error as { retryable: unknown }).retryable === 'boolean'
  ) {
    return (error as { retryable: boolean }).retryable;
  }
  return true;
}

/** The fields of a {@link RunFailure}; those left out take the defaults of {@link runFailure}. */
export type RunFailureInit = Omit<
  RunFailure,
  'exceptionClass' | 'errorMessage' | 'retryable' | 'inputs' | 'rollbackFailures'
> &
  Partial<Pick<RunFailure, 'exceptionClass' | 'errorMessage' | 'retryable' | 'inputs' | 'rollbackFailures'>> & {
    /** The thrown value: gives `exceptionClass` and `errorMessage` unless they are set. */
    error?: unknown;
  };

/**
 * The one constructor of {@link RunFailure} records. `exceptionClass` and `errorMessage` come from
 * `error` (else `Error` and the message), `retryable` defaults to false, `inputs` to `{}`, and
 * `rollbackFailures` to a new empty array. Optional fields that are undefined are left out.
 */
export function runFailure(init: RunFailureInit): RunFailure {
  const described = init.error === undefined ? undefined : describeError(init.error);
  const failure: RunFailure = {
    message: init.message,
    code: init.code,
    reactorName: init.reactorName,
    stepName: init.stepName,
    exceptionClass: init.exceptionClass ?? described?.exceptionClass ?? 'Error',
    errorMessage: init.errorMessage ?? described?.message ?? init.message,
    retryable: init.retryable ?? false,
    attempts: init.attempts,
    inputs: init.inputs ?? {},
    stepArguments: init.stepArguments,
    fieldErrors: init.fieldErrors,
    rollbackFailures: init.rollbackFailures ?? [],
  };
  if (init.cause) failure.cause = init.cause;
  for (const key of ['stepName', 'attempts', 'stepArguments', 'fieldErrors'] as const) {
    if (failure[key] === undefined) delete failure[key];
  }
  return failure;
}
