import { LeaseLostError, ReactorError } from '../core/errors';

/**
 * Negative codes returned by the Lua scripts in `lib/scripts/`. The memory adapters raise the same
 * errors through {@link storageError}, so both runtimes fail identically.
 *
 * NOTE: never renumber a code; scripts of a running deployment return them.
 */
export enum StorageErrorCode {
  /** The fencing lease is not held by the given token (expired, released, or taken by another worker). */
  LeaseLost = -1,
  /** A script received an argument it cannot use (a non-numeric TTL, ...): a bug in the adapter. */
  InvalidArgument = -2,
}

/** Non-error results of `checkpoint-3.lua` (and of the memory adapter's save). */
export enum CheckpointResult {
  /** Nothing written: `createOnly` and a record with this id exists. */
  Exists = 0,
  /** The record was written. */
  Written = 1,
  /** Nothing written: the stored record is terminal and the new state is not (a stale writer). */
  TerminalKept = 2,
}

/** What the error is about, for its message. */
export interface StorageErrorContext {
  runId: string;
  /** The script (or adapter method) that returned the code. */
  operation: string;
}

/**
 * The one factory that turns a negative script code into an error.
 * Unknown codes become an `INTERNAL` {@link ReactorError} naming the operation.
 */
export function storageError(code: number, context: StorageErrorContext): ReactorError {
  switch (code) {
    case StorageErrorCode.LeaseLost:
      return new LeaseLostError(context.runId);
    case StorageErrorCode.InvalidArgument:
      return new ReactorError(
        'INTERNAL',
        `Storage operation '${context.operation}' on run '${context.runId}' was given an invalid argument. This is a bug in nest-reactor.`,
      );
    default:
      return new ReactorError(
        'INTERNAL',
        `Storage operation '${context.operation}' on run '${context.runId}' returned unknown code ${code}.`,
      );
  }
}

/** True when a script result is an error code. */
export function isErrorCode(result: number): boolean {
  return result < 0;
}
