import type { RunFailure } from './run-outcome';
import { Failure } from './step-outcome';

/**
 * A step failed because nested work failed: a composed child, or an element of an atomic map.
 * Carries that work's {@link RunFailure} as is (its reactor, step, exception class, field errors),
 * is never retried, and says whether the step still needs compensating (a map's completed
 * elements; a composed child has already rolled itself back).
 * @internal
 */
export class NestedFailure extends Failure {
  constructor(
    readonly failure: RunFailure,
    readonly compensate: boolean,
    /** For a map: the index of the element that failed. */
    readonly elementIndex?: number,
  ) {
    super(new Error(failure.message), { retryable: false });
  }
}
