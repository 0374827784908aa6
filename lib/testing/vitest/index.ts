/**
 * `nest-reactor/testing/vitest`: the run matchers, with their types for Vitest's `expect`
 * (merged into Vitest's `Matchers`, so `expect(outcome).toHaveCompleted()` type-checks). Register
 * them in a setup file (`test.setupFiles` in vitest.config.ts) and let TypeScript see this entry:
 *
 * ```ts
 * // test/setup-reactor.ts
 * import { expect } from 'vitest';
 * import { reactorMatchers } from 'nest-reactor/testing/vitest';
 * expect.extend(reactorMatchers);
 * ```
 *
 * Kept apart from `nest-reactor/testing`, whose types compile without any test framework's. The
 * types of this entry are `./types.d.ts` (copied by the build, not compiled here: this repository
 * resolves modules the node10 way, which cannot see Vitest's `exports`); the fresh-app test in
 * test/package.spec.ts type-checks them in a Vitest app.
 *
 * @packageDocumentation
 */
export {
  reactorMatchers,
  type ReactorMatcherContext,
  type ReactorMatcherName,
  type ReactorMatcherResult,
  type RollbackFailureExpectation,
} from '../matchers/reactor.matchers';
export type { ReactorRunMatchers } from '../matchers/reactor-matchers.types';
