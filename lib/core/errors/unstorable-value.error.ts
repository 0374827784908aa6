import { ReactorError } from './reactor.error';
import { errorText, sentences } from './sentence';

/**
 * A value the run must store cannot be written as JSON: a BigInt, a circular object, or an object
 * whose `toJSON` throws. The step that produced it fails (never retried: the same value would come
 * back) and the run rolls back as for any failure.
 */
export class UnstorableValueError extends ReactorError {
  constructor(
    readonly runId: string,
    /** What could not be stored: `the result of step 'charge'`, `the inputs`, ... */
    readonly what: string,
    /** The step whose value it is, when one is. */
    readonly stepName: string | undefined,
    cause: unknown,
  ) {
    super(
      'VALUE_NOT_STORABLE',
      sentences(
        `Run '${runId}': ${what} cannot be stored: ${errorText(cause)}`,
        'Return JSON-compatible values (a string for a BigInt, plain objects without cycles).',
      ),
      { retryable: false, cause },
    );
  }
}
