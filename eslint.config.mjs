// ESLint flat config: @eslint/js + typescript-eslint "recommended" (syntax-only rules, no type
// information, so linting stays fast; typechecking is `npm run typecheck`).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// lib/core is the Nest-free engine: no Nest, BullMQ or Redis client, and no relative import that
// climbs out of lib/core (only lib/core/ports talks to the world). Whether a relative path leaves
// lib/core depends on how deep the importing file sits, so there is one config block per depth:
// from lib/core/index.ts `../nest/x` leaves core; from lib/core/map/a.ts `../model/x` stays in core
// and `../../nest/x` leaves it; and so on. A path that climbs out and comes straight back in
// (`../../core/...`) is allowed. Value and type-only imports and re-exports (`export ... from`) are
// restricted; dynamic `import()`, `require()` and `import('x').T` types are not (lib/core has none).
const CORE_BOUNDARY_MESSAGE =
  'lib/core is the Nest-free engine (DESIGN.md non-negotiable 1): talk to the world through lib/core/ports';
const CORE_MAX_DEPTH = 8; // folders below lib/core; deeper files would get no rule, so keep this generous
// OpenTelemetry is imported in one room of core only (lib/core/tracing, which has its own block below).
const OTEL_MESSAGE = 'only lib/core/tracing imports @opentelemetry/*: use its TraceSpan and Tracing';
const boundaryPatterns = (depth, { otel = false } = {}) => [
  { regex: '^(@nestjs|bullmq|ioredis)(/|$)', message: CORE_BOUNDARY_MESSAGE },
  { regex: `^(\\./)?(\\.\\.(/|$)){${depth + 1}}(?!core(/|$))`, message: CORE_BOUNDARY_MESSAGE },
  ...(otel ? [] : [{ regex: '^@opentelemetry(/|$)', message: OTEL_MESSAGE }]),
];
const coreBoundary = Array.from({ length: CORE_MAX_DEPTH + 1 }, (_, depth) => ({
  files: [['lib/core', ...Array(depth).fill('*'), '*.ts'].join('/')],
  rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: boundaryPatterns(depth) }] },
}));
// The ground floor of core: lib/core/model imports nothing else from core, and the ports import
// only the model (docs/architecture.md). Flat config replaces a rule's options per file, so these
// blocks repeat the boundary patterns of their depth.
const floor = (files, regex, message) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': ['error', { patterns: [...boundaryPatterns(1), { regex, message }] }],
  },
});
const coreFloors = [
  // lib/core/tracing: the OpenTelemetry API, and nothing else from core.
  {
    files: ['lib/core/tracing/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            ...boundaryPatterns(1, { otel: true }),
            { regex: '^\\.\\./', message: 'lib/core/tracing imports nothing else from core' },
          ],
        },
      ],
    },
  },
  floor(
    ['lib/core/model/*.ts'],
    '^\\.\\./',
    'lib/core/model is the ground floor of core: it imports nothing else from core',
  ),
  floor(
    ['lib/core/ports/*.ts'],
    '^\\.\\./(?!model(/|$))',
    'lib/core/ports import only lib/core/model (and each other)',
  ),
];

export default defineConfig(
  {
    ignores: ['dist/', 'node_modules/', '.sample-build/', '.bench-build/', 'coverage/'],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
        },
      ],
    },
  },
  {
    files: ['lib/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  ...coreBoundary,
  ...coreFloors,
  {
    // The run's hot path (per step, per run, per element, per job): objects V8 builds on its slow
    // path on Node 20 (a few µs each), see DD-speed22-11 and DD-speed22-13.
    files: [
      'lib/core/executor/**/*.ts',
      'lib/core/steps/**/*.ts',
      'lib/core/results/**/*.ts',
      'lib/core/engine/{executions,run-jobs,map-jobs,dispatch,job-tracing}.ts',
      'lib/storage/run-record.codec.ts',
      'lib/storage/redis/{redis-reactor.storage,checkpoint-batcher}.ts',
      'lib/storage/memory/memory-reactor.storage.ts',
      'lib/live/live-events.middleware.ts',
      'lib/queue/bullmq-job.dispatcher.ts',
      'lib/runtime/in-process-job.dispatcher.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement ~ Property',
          message:
            'A property after a spread is built on V8 slow path on Node 20 (DD-speed22-11): assign it (Object.assign, or set it on the copy made by copyOwn).',
        },
        {
          selector: "ObjectExpression > Property[kind='get']",
          message: 'An object literal with a getter is built on V8 slow path on Node 20 (DD-speed22-13): use a class.',
        },
      ],
    },
  },
  {
    // Node ES module scripts such as tools/check-import-cycles.mjs.
    files: ['tools/**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { console: 'readonly', process: 'readonly' } },
  },
  {
    // Plain CommonJS config files such as jest.config.js (no `globals` package dependency needed).
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        module: 'writable',
        exports: 'writable',
        require: 'readonly',
        __dirname: 'readonly',
        process: 'readonly',
      },
    },
  },
);
