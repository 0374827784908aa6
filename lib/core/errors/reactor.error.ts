/**
 * Stable error codes. They are stored with failed runs and survive serialization, so never
 * rename one; add new codes instead.
 */
export type ReactorErrorCode =
  | 'DEFINITION_INVALID'
  | 'INPUT_VALIDATION'
  | 'ARGUMENT_RESOLUTION'
  | 'STEP_FAILED'
  | 'UNEXPECTED_RESULT'
  | 'RUN_NOT_FOUND'
  | 'INVALID_RUN_ID'
  | 'INVALID_RUN_STATE'
  | 'IDEMPOTENCY_CONFLICT'
  | 'UNKNOWN_REACTOR'
  | 'LEASE_LOST'
  | 'CONTEXT_TOO_LARGE'
  | 'CORRUPT_RECORD'
  | 'SCHEMA_VERSION'
  | 'DEFINITION_CHANGED'
  | 'CONFIGURATION_INVALID'
  | 'VALUE_NOT_STORABLE'
  | 'STORAGE_UNAVAILABLE'
  | 'WAIT_TIMEOUT'
  | 'ALREADY_RESUMED'
  | 'PAYLOAD_INVALID'
  | 'RUN_NOT_PAUSED'
  | 'INTERRUPT_NOT_FOUND'
  | 'INTERRUPT_TIMED_OUT'
  | 'CORRELATION_ID_NOT_FOUND'
  | 'CORRELATION_ID_TAKEN'
  | 'INTERRUPT_NOT_SUPPORTED'
  | 'ASYNC_WAIT_TIMEOUT'
  | 'LOCK_CONTENDED'
  | 'SEMAPHORE_FULL'
  | 'RATE_LIMITED'
  | 'ORDER_WAIT'
  | 'DEADLOCK'
  | 'LOCK_LOST'
  | 'SEMAPHORE_LOST'
  | 'INTERNAL'
  | 'STEP_ABORTED'
  | 'INVALID_ARGUMENT'
  | 'SCHEDULE_NOT_FOUND'
  | 'FLOW_QUEUE_FULL'
  | 'FLOW_GATHER_LOST';

/** The JSON form of an error, as stored with a run and shown by `ReactorClient.get`. */
export interface SerializedError {
  code: ReactorErrorCode | string;
  name: string;
  message: string;
  retryable: boolean;
}

/**
 * Base class of every error this library raises. Each error carries a stable {@link code},
 * says whether retrying can help ({@link retryable}), and serializes with {@link toJSON}.
 */
export class ReactorError extends Error {
  /** Stable machine-readable code. */
  readonly code: ReactorErrorCode;
  /** Whether retrying the same work can succeed. */
  readonly retryable: boolean;

  constructor(code: ReactorErrorCode, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }

  toJSON(): SerializedError {
    return { code: this.code, name: this.name, message: this.message, retryable: this.retryable };
  }
}
