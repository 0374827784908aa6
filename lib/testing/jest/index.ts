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
 * Vitest: `nest-reactor/testing/vitest`.
 *
 * @packageDocumentation
 */
import type { ReactorRunMatchers } from '../matchers/reactor-matchers.types';

export {
  reactorMatchers,
  type ReactorMatcherContext,
  type ReactorMatcherName,
  type ReactorMatcherResult,
  type RollbackFailureExpectation,
} from '../matchers/reactor.matchers';
export type { ReactorRunMatchers } from '../matchers/reactor-matchers.types';

declare global {
  // NOTE: a namespace is how @types/jest declares its matchers; merging into it is the only way to
  // type `expect(x).toHaveCompleted()` there. Its type parameters must be the same as @types/jest's.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unused-vars
    interface Matchers<R, T = {}> extends ReactorRunMatchers<R> {}
  }
}
