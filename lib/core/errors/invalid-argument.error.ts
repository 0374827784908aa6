import { ReactorError } from './reactor.error';

/**
 * A client method was called with an argument it cannot use (`continue(runId, 42, …)`, options
 * that are not an object, a timeout that is not a number): a bug in the caller, never retried. The
 * message names the method, the argument and what it must be.
 */
export class InvalidArgumentError extends ReactorError {
  constructor(
    /** The method called: `continue`, `wait`, ... */
    readonly method: string,
    /** The argument at fault: `step`, `options.timeoutMs`, ... */
    readonly argument: string,
    /** What it must be: `a non-empty string or an array of them`. */
    expected: string,
    got: unknown,
  ) {
    super('INVALID_ARGUMENT', `${method}(): ${argument} must be ${expected} (got ${describe(got)}).`);
  }
}

/** A short description of a value for a message, never its content (it may be secret). */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return value.length === 0 ? 'an empty string' : `a string of ${value.length} characters`;
    case 'number':
      return Number.isFinite(value) ? 'a number' : String(value);
    case 'object':
      return 'an object';
    case 'undefined':
      return 'undefined';
    default:
      return `a ${typeof value}`;
  }
}
