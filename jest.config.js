/**
 * Jest configuration for nest-reactor.
 *
 * - TypeScript is transpiled by ts-jest with `isolatedModules: true` (per-file transpile, no type
 *   information): fast, but not typechecked. Typechecking is `npm run typecheck` (`tsc --noEmit`).
 *   ts-jest 29.4 deprecates its own top-level `isolatedModules` option (it logs a warning in every
 *   worker), so the equivalent compiler option is passed through the inline `tsconfig` override,
 *   which is merged over ./tsconfig.json.
 * - The global setup finds or starts a Redis and exports its URL as `process.env.REDIS_URL`,
 *   which the test workers inherit (see test/setup/global-setup.ts and test/setup/redis.ts).
 *
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  // test/cluster starts Redis Clusters of its own: it runs in `npm run test:cluster` (jest.cluster.config.js).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/cluster/'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: { isolatedModules: true } }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  setupFiles: ['reflect-metadata'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  testTimeout: 30000,
  // The CI machine has 2 cores; more workers only add contention on the shared Redis.
  maxWorkers: 2,
  collectCoverageFrom: ['lib/**/*.ts'],
  coverageDirectory: 'coverage',
};
