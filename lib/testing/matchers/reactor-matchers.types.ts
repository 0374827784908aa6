import type { RollbackFailureExpectation } from './reactor.matchers';

/**
 * The reactor matchers as an `expect(...)` chain sees them; `R` is what the test framework's
 * matchers return (jest's `R`, Vitest's `void`). Declared once, merged into jest's `Matchers` by
 * `nest-reactor/testing/jest` and into Vitest's by `nest-reactor/testing/vitest`.
 */
export interface ReactorRunMatchers<R> {
  /** The run completed; with an argument, its value equals it. */
  toHaveCompleted(value?: unknown): R;
  /** The run failed at step `step`. */
  toHaveFailedAt(step: string): R;
  /** Its rollback compensated/undid exactly these steps, in this order (newest first). */
  toHaveRolledBack(steps: readonly string[]): R;
  /**
   * The rollback left an undo or compensation of `step` undone (a `rollbackFailures` entry),
   * optionally of this kind, reason, message (substring or RegExp), map step, element index.
   */
  toHaveRollbackFailure(step: string, expected?: RollbackFailureExpectation): R;
  /** Step `step` was retried exactly `times` times. */
  toHaveRetried(step: string, times: number): R;
  /** Validation failed on `field` (or a path under it), optionally with a matching message. */
  toHaveValidationErrorOn(field: string, message?: string | RegExp): R;
}
