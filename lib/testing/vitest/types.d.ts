// The types of `nest-reactor/testing/vitest` (see ./index.ts): its exports, and the reactor
// matchers merged into Vitest's `Matchers`. Copied to dist by `npm run build`, not compiled here.
import type { ReactorRunMatchers } from '../matchers/reactor-matchers.types';

export * from './index';

declare module 'vitest' {
  // NOTE: Vitest documents custom matchers as a merge into its `Matchers` interface; its type
  // parameter must be the same as Vitest's.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unused-vars, @typescript-eslint/no-explicit-any
  interface Matchers<T = any> extends ReactorRunMatchers<void> {}
}
