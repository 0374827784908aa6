import { didYouMean } from './closest-names';
import { ReactorError } from './reactor.error';

/** No run with this id is stored (never existed, or its retention TTL passed). */
export class RunNotFoundError extends ReactorError {
  constructor(readonly runId: string) {
    super(
      'RUN_NOT_FOUND',
      `Run '${runId}' was not found. It may never have existed or its retention (contextTtl) expired.`,
    );
  }
}

/** The operation is not allowed in the run's current status (for example undo of a running run). */
export class InvalidRunStateError extends ReactorError {
  constructor(
    message: string,
    readonly runId: string,
    readonly status: string,
  ) {
    super('INVALID_RUN_STATE', message);
  }
}

/**
 * An idempotency key already bound to a run whose inputs differ from this call's: the key names
 * one request, so other inputs are refused instead of replaying a run the caller did not ask for
 * (as payment APIs do). Equal inputs (canonical JSON of the validated inputs) replay the run.
 */
export class IdempotencyConflictError extends ReactorError {
  constructor(
    readonly reactorName: string,
    readonly idempotencyKey: string,
    /** The run the key is bound to. */
    readonly runId: string,
  ) {
    super(
      'IDEMPOTENCY_CONFLICT',
      `Reactor '${reactorName}': idempotency key '${idempotencyKey}' is bound to run '${runId}', started with other inputs. Use a new key for other inputs, or the same inputs to get that run back.`,
    );
  }
}

/** A run id that cannot name a run (not a string, empty, with an id separator, ill-formed Unicode). */
export class InvalidRunIdError extends ReactorError {
  constructor(
    readonly runId: unknown,
    problem: string,
    where?: string,
    hint?: string,
  ) {
    super(
      'INVALID_RUN_ID',
      `${where ?? 'Run id'} ${describeId(runId)} is invalid: ${problem}.${hint ? ` ${hint}` : ''}`,
    );
  }
}

function describeId(runId: unknown): string {
  if (typeof runId === 'string') return `'${runId}'`;
  if (typeof runId === 'object' && runId !== null) return Array.isArray(runId) ? '(an array)' : '(an object)';
  return typeof runId === 'function' || typeof runId === 'symbol' ? `(a ${typeof runId})` : String(runId);
}

/** A run names a reactor this process has not registered. */
export class UnknownReactorError extends ReactorError {
  constructor(
    readonly reactorName: string,
    known: readonly string[],
  ) {
    super(
      'UNKNOWN_REACTOR',
      `Reactor '${reactorName}' is not registered in this process.${didYouMean(reactorName, known)} ` +
        `Known reactors: ${known.length ? known.join(', ') : '(none)'}. ` +
        'Register it with @Reactor (or engine.register) in every process that runs it.',
    );
  }
}

/** The run's lease was lost (expired or taken by another worker); this worker must stop writing. */
export class LeaseLostError extends ReactorError {
  constructor(readonly runId: string) {
    super('LEASE_LOST', `Lease on run '${runId}' was lost; this worker stops and writes nothing more.`, {
      retryable: true,
    });
  }
}

/** The serialized run exceeds the configured size limit. */
export class ContextTooLargeError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      'CONTEXT_TOO_LARGE',
      `Run '${runId}' serializes to ${bytes} bytes, over the limit of ${limit} (maxContextBytes). ` +
        'Store large payloads elsewhere and pass references between steps.',
    );
  }
}

/** A stored record cannot be read: corrupt JSON or an unknown schema version. Never retried. */
export class CorruptRecordError extends ReactorError {
  constructor(
    message: string,
    readonly runId: string,
    code: 'CORRUPT_RECORD' | 'SCHEMA_VERSION' = 'CORRUPT_RECORD',
  ) {
    super(code, message);
  }
}

/** The run was started under a different definition of its reactor than this process has. */
export class DefinitionChangedError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly reactorName: string,
    /** The version the run started under. */
    readonly version = '1',
    /** The versions this process has. */
    readonly registered: readonly string[] = [],
  ) {
    super(
      'DEFINITION_CHANGED',
      `Run '${runId}' of reactor '${reactorName}' was started under a different definition (version ${version}; ` +
        `this process has ${registered.length ? `version ${registered.join(', ')}` : 'another shape'} of it). ` +
        'Keep the old definition registered beside the new one until its runs drain (@Reactor(name, { version })), ' +
        'or undo the run: its record is kept.',
    );
  }
}

/** Waiting for a run to finish took longer than the given timeout. */
export class WaitTimeoutError extends ReactorError {
  constructor(
    readonly runId: string,
    readonly timeoutMs: number,
  ) {
    super('WAIT_TIMEOUT', `Run '${runId}' did not finish within ${timeoutMs} ms.`, { retryable: true });
  }
}
