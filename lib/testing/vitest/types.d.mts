// The types of `nest-reactor/testing/vitest` for an ES module app (package.json's `import`
// condition): the same as ./types.d.ts, whose `vitest` would resolve to Vitest's CommonJS types
// there (`index.d.cts`, a re-export that an augmentation cannot reach). Copied to dist by
// `npm run build`, not compiled here; test/package.spec.ts type-checks it in a Nest 12 ESM app.
import type { ReactorRunMatchers } from '../matchers/reactor-matchers.types.js';

export * from './index.js';

declare module 'vitest' {
  // NOTE: Vitest documents custom matchers as a merge into its `Matchers` interface; its type
  // parameter must be the same as Vitest's.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unused-vars, @typescript-eslint/no-explicit-any
  interface Matchers<T = any> extends ReactorRunMatchers<void> {}
}
