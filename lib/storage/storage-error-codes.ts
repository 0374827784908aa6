import { LeaseLostError, ReactorError } from '../core';

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
  /** The fan-out map is not stored (its retention TTL passed, or it was never created). */
  MapMissing = -3,
}

/** Non-error results of `checkpoint-n.lua` (and of the memory adapter's save). */
export enum CheckpointResult {
  /** Nothing written: `createOnly` and a record with this id exists. */
  Exists = 0,
  /** The record was written. */
  Written = 1,
  /** Nothing written: the stored record is terminal and the new state is not (a stale writer). */
  TerminalKept = 2,
  /** The record was written, and it holds a cancel request (see `ReactorStorage.requestCancel`). */
  WrittenCancelRequested = 3,
}

/** What the error is about, for its message. */
export interface StorageErrorContext {
  /** The run (or, for a map element, the element's run id `<mapId>#<index>`) the error is about. */
  runId: string;
  /** The fan-out map the operation was on, if any (named by {@link StorageErrorCode.MapMissing}). */
  mapId?: string;
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
    case StorageErrorCode.MapMissing:
      return new ReactorError(
        'INTERNAL',
        `Map '${context.mapId ?? context.runId}' is not stored (expired, or never dispatched); '${context.operation}' found nothing to work on.`,
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
