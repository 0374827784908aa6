/**
 * `nest-reactor/testing/jest`: the run matchers, with their types for `expect` (the `jest.Matchers`
 * of `@types/jest`). Register them in a setup file and import it (or this entry) where tests
 * type-check:
 *
 * ```ts
 * // test/setup-reactor.ts (jest's setupFilesAfterEnv)
 * import { reactorMatchers } from 'nest-reactor/testing/jest';
 * expect.extend(reactorMatchers);
 * ```
 *
 * Kept apart from `nest-reactor/testing`, whose types compile without any test framework's.
 *
 * @packageDocumentation
 */
export {
  reactorMatchers,
  type ReactorMatcherContext,
  type ReactorMatcherName,
  type ReactorMatcherResult,
} from '../matchers/reactor.matchers';

declare global {
  // NOTE: a namespace is how @types/jest declares its matchers; merging into it is the only way to
  // type `expect(x).toHaveCompleted()` there. Its type parameters must be the same as @types/jest's.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unused-vars
    interface Matchers<R, T = {}> {
      /** The run completed; with an argument, its value equals it. */
      toHaveCompleted(value?: unknown): R;
      /** The run failed at step `step`. */
      toHaveFailedAt(step: string): R;
      /** Its rollback compensated/undid exactly these steps, in this order (newest first). */
      toHaveRolledBack(steps: readonly string[]): R;
      /** Step `step` was retried exactly `times` times. */
      toHaveRetried(step: string, times: number): R;
      /** Validation failed on `field` (or a path under it), optionally with a matching message. */
      toHaveValidationErrorOn(field: string, message?: string | RegExp): R;
    }
  }
}
