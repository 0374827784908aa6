import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from './setup/redis';

const root = join(__dirname, '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');

/**
 * Where a fresh app's packages come from. Nest 11 (CommonJS, Jest): this repository's own
 * node_modules. Nest 12 (`nest new` today: ESM, Vitest, TypeScript 6, with bullmq 6, @nestjs/bullmq
 * 12, @nestjs/schedule 12): the tools/compat/nest12 workspace, which the root's `npm ci` installs
 * beside them, then the root for the packages it does not hold. No network either way.
 */
interface Flavour {
  name: string;
  modules: string[];
}
const NEST11: Flavour = { name: 'Nest 11', modules: [join(root, 'node_modules')] };
const NEST12: Flavour = {
  name: 'Nest 12',
  modules: [join(root, 'tools', 'compat', 'nest12', 'node_modules'), join(root, 'node_modules')],
};

/** The installed version of `name` in a flavour (from the first place that holds it). */
function versionIn(flavour: Flavour, name: string): string {
  const dir = flavour.modules.map((m) => join(m, name)).find((d) => existsSync(d));
  if (!dir) throw new Error(`${name} is not installed for ${flavour.name}`);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

/** The module settings a CommonJS Nest app is compiled with: older `nest new`'s (commonjs), node16, and today's CommonJS template's (nodenext). */
const RESOLUTIONS = [
  ['commonjs', 'node10'],
  ['node16', 'node16'],
  ['nodenext', 'nodenext'],
] as const;

/** `npm pack` into `dir` (its `prepack` builds `dist` first): the tarball and the files it holds. */
function pack(dir: string): { tarball: string; files: string[] } {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir, '--ignore-scripts=false'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  const [report] = JSON.parse(out.slice(out.indexOf('['))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  return { tarball: join(dir, report.filename), files: report.files.map((f) => f.path) };
}

/**
 * A fresh application directory holding the packed package as npm installs it
 * (`node_modules/nest-reactor`, extracted from the tarball) and, beside it, the packages npm would
 * put at the top level: the ones `install` names, the package's dependencies and its required peer
 * dependencies (linked from this repository's node_modules: same versions, no network).
 * Optional peers (`@nestjs/terminus`) are left out, as npm leaves them out.
 */
function freshApp(
  tarball: string,
  install: readonly string[],
  flavour: Flavour = NEST11,
  manifest: Record<string, unknown> = {},
): string {
  const app = mkdtempSync(join(tmpdir(), 'nest-reactor-app-'));
  const modules = join(app, 'node_modules');
  mkdirSync(join(modules, pkg.name), { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', join(modules, pkg.name), '--strip-components=1']);
  const optional = new Set(
    Object.entries(pkg.peerDependenciesMeta ?? {})
      .filter(([, meta]) => meta.optional)
      .map(([name]) => name),
  );
  const required = new Set([
    ...install.filter((name) => name !== pkg.name),
    ...Object.keys(pkg.dependencies),
    ...Object.keys(pkg.peerDependencies).filter((name) => !optional.has(name)),
    '@types/node', // every Nest app has it (`nest new` installs it)
  ]);
  for (const name of required) {
    const target = flavour.modules.map((m) => join(m, name)).find((dir) => existsSync(dir));
    if (!target) throw new Error(`${name} is not installed in this repository (for ${flavour.name})`);
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(target, join(modules, name), 'dir');
  }
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'fresh-app', private: true, ...manifest }));
  return app;
}

/** tsconfig of the app, as `nest new` writes it, with the given module settings. */
function tsconfig(module: string, moduleResolution: string, outDir: string, include: string[]): string {
  return JSON.stringify({
    compilerOptions: {
      module,
      moduleResolution,
      target: 'es2022',
      strict: true,
      declaration: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      skipLibCheck: true,
      outDir,
      rootDir: 'src',
    },
    include,
  });
}

/** The README's quick start: its files (each ts block opens with `// src/<file>`), install line and output. */
function readmeQuickStart(): { files: Map<string, string>; install: string[]; output: string } {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Quick start\n');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end);
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map(([, lang, body]) => ({ lang, body }));
  const files = new Map<string, string>();
  for (const { body } of blocks.filter((b) => b.lang === 'ts')) {
    const header = /^\/\/ (src\/[\w./-]+\.ts)\n/.exec(body);
    if (!header) throw new Error(`a ts block of the README's quick start does not open with // src/<file>:\n${body}`);
    files.set(header[1], body);
  }
  const installLine = blocks.find((b) => b.lang === 'bash' && b.body.startsWith('npm install '))?.body ?? '';
  const install = installLine.trim().split(/\s+/).slice(2);
  const output = blocks.find((b) => b.lang === 'text')?.body ?? '';
  return { files, install, output };
}

/** Writes `files` (path relative to the app → content) into the app, making their folders. */
function writeFiles(app: string, files: Iterable<[string, string]>): void {
  for (const [file, content] of files) {
    mkdirSync(dirname(join(app, file)), { recursive: true });
    writeFileSync(join(app, file), content);
  }
}

/** The README's quick start, read once for every test of this file. */
const QUICK_START = readmeQuickStart();

/** Compile the app with tsc; throws with tsc's diagnostics when it does not compile. */
function compile(app: string): void {
  try {
    execFileSync(tsc, ['-p', app], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`the app did not compile:\n${stdout ?? ''}${stderr ?? ''}\n${String(error)}`);
  }
}

describe('the published package', () => {
  let packDir: string;
  let tarball: string;
  let files: string[];

  // One pack (and so one build) for the file: packing runs `prepack`, the build.
  beforeAll(() => {
    packDir = mkdtempSync(join(tmpdir(), 'nest-reactor-pack-'));
    ({ tarball, files } = pack(packDir));
  }, 120_000);
  afterAll(() => rmSync(packDir, { recursive: true, force: true }));

  it('npm pack builds first (prepack) and ships the entry points, their types and the Lua scripts, no sources or tests', () => {
    for (const entry of [
      'dist/lib/index.js',
      'dist/lib/index.d.ts',
      'dist/lib/testing/index.js',
      'dist/lib/testing/index.d.ts',
      'dist/lib/testing/jest/index.js',
      'dist/lib/testing/jest/index.d.ts',
      'dist/lib/health/index.js',
      'dist/lib/health/index.d.ts',
      'dist/lib/dashboard/index.js',
      'dist/lib/dashboard/index.d.ts',
      'dist/lib/metrics/index.js',
      'dist/lib/metrics/index.d.ts',
      'dist/lib/dashboard/assets/index.html',
      'dist/lib/dashboard/assets/app.js',
      'dist/lib/dashboard/assets/app.css',
    ]) {
      expect(files).toContain(entry);
    }
    expect(files).toContain('dist/lib/scripts/checkpoint-n.lua');
    expect(files).toContain('dist/lib/scripts/interruptClaim-3.lua');
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('lib/') || f.startsWith('sample/'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('declares Nest, BullMQ, schedule, validation, reflection and tracing packages as peers accepting both majors, so an app shares its own copies', () => {
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(
      [
        '@nestjs/bullmq',
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/schedule',
        '@nestjs/terminus',
        '@opentelemetry/api',
        'bullmq',
        'class-transformer',
        'class-validator',
        'prom-client',
        'reflect-metadata',
        'rxjs',
      ].sort(),
    );
    for (const name of Object.keys(pkg.peerDependencies)) expect(pkg.dependencies).not.toHaveProperty(name);
    expect(pkg.peerDependenciesMeta?.['@nestjs/terminus']?.optional).toBe(true);
    expect(pkg.peerDependenciesMeta?.['prom-client']?.optional).toBe(true);
    // Each range accepts what both test flavours install: Nest 11 (this repository) and Nest 12.
    for (const flavour of [NEST11, NEST12]) {
      for (const [name, range] of Object.entries(pkg.peerDependencies)) {
        const version = versionIn(flavour, name);
        const major = version.split('.')[0];
        const accepted = range
          .split('||')
          .map((r) => r.trim())
          .some((r) => r.replace(/^[\^~]/, '').split('.')[0] === major);
        expect({ flavour: flavour.name, name, version, accepted }).toEqual({
          flavour: flavour.name,
          name,
          version,
          accepted: true,
        });
      }
    }
    expect(versionIn(NEST12, '@nestjs/common')).toMatch(/^12\./);
    expect(versionIn(NEST12, 'bullmq')).toMatch(/^6\./);
    expect(versionIn(NEST12, '@nestjs/bullmq')).toMatch(/^12\./);
    expect(versionIn(NEST12, '@nestjs/schedule')).toMatch(/^12\./);
    expect(versionIn(NEST11, '@nestjs/common')).toMatch(/^11\./);
    expect(versionIn(NEST11, 'bullmq')).toMatch(/^5\./);
  });

  it('ships source maps that carry their sources, a CHANGELOG, and says where it lives', () => {
    const map = JSON.parse(readFileSync(join(root, 'dist', 'lib', 'index.js.map'), 'utf8')) as {
      sources: string[];
      sourcesContent?: string[];
    };
    expect(map.sourcesContent?.length).toBe(map.sources.length);
    expect(map.sourcesContent?.[0]).toContain('export');
    expect(files).toContain('CHANGELOG.md');
    expect(files).toContain('LICENSE');
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      repository?: { url?: string };
      engines?: { node?: string };
    };
    expect(manifest.repository?.url).toMatch(/^git\+https:\/\//);
    expect(manifest.engines?.node).toBe('>=20.19.0');
  });

  it.each(RESOLUTIONS)(
    "'nest-reactor' and 'nest-reactor/testing' resolve with module %s (moduleResolution %s), without any test framework's types",
    (module, moduleResolution) => {
      const app = freshApp(tarball, []);
      try {
        mkdirSync(join(app, 'src'));
        writeFileSync(
          join(app, 'src', 'consumer.ts'),
          "import { ReactorModule } from 'nest-reactor';\n" +
            "import { FakeClock, ReactorTestingKit, ReactorTestingModule, TestClock, reactorMatchers, validateReactors } from 'nest-reactor/testing';\n" +
            'export const clock: FakeClock = new FakeClock();\n' +
            'export const testClock: TestClock = new TestClock();\n' +
            'export const module = ReactorModule;\n' +
            'export const testing = ReactorTestingModule.forRoot({ clock: testClock });\n' +
            'export type Kit = ReactorTestingKit;\n' +
            'export const matchers = Object.keys(reactorMatchers);\n' +
            'export const validate: (m: typeof ReactorModule) => Promise<{ reactors: string[] }> = validateReactors;\n',
        );
        writeFileSync(join(app, 'tsconfig.json'), tsconfig(module, moduleResolution, 'dist', ['src']));
        compile(app);
        // And it loads: every runtime import of the package is a dependency or a peer.
        const loaded = execFileSync(process.execPath, ['-e', "require('./dist/consumer.js'); console.log('loaded')"], {
          cwd: app,
          encoding: 'utf8',
        });
        expect(loaded.trim()).toBe('loaded');
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it.each(RESOLUTIONS)(
    "'nest-reactor/testing/jest' resolves with module %s (moduleResolution %s) and types the matchers on jest's expect",
    (module, moduleResolution) => {
      const app = freshApp(tarball, ['@types/jest']);
      try {
        mkdirSync(join(app, 'src'));
        writeFileSync(
          join(app, 'src', 'matchers.spec.ts'),
          "import type { RunOutcome } from 'nest-reactor';\n" +
            "import { reactorMatchers } from 'nest-reactor/testing/jest';\n" +
            'expect.extend(reactorMatchers);\n' +
            'declare const outcome: RunOutcome;\n' +
            'export function check(): void {\n' +
            '  expect(outcome).toHaveCompleted();\n' +
            "  expect(outcome).toHaveCompleted({ shipmentId: 'sh_1' });\n" +
            "  expect(outcome).toHaveFailedAt('charge');\n" +
            "  expect(outcome).toHaveRolledBack(['charge', 'reserve']);\n" +
            "  expect(outcome).toHaveRetried('charge', 2);\n" +
            "  expect(outcome).not.toHaveValidationErrorOn('order.totalCents', /positive/);\n" +
            "  expect(outcome).toHaveRollbackFailure('reserve', { kind: 'undo', reason: 'raised', message: /down/ });\n" +
            '}\n',
        );
        writeFileSync(join(app, 'tsconfig.json'), tsconfig(module, moduleResolution, 'dist', ['src']));
        compile(app);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it.each(RESOLUTIONS)(
    "'nest-reactor/health' resolves with module %s (moduleResolution %s) where @nestjs/terminus is installed, and only it loads terminus",
    (module, moduleResolution) => {
      const app = freshApp(tarball, ['@nestjs/terminus']);
      try {
        mkdirSync(join(app, 'src'));
        writeFileSync(
          join(app, 'src', 'health.ts'),
          "import { ReactorHealthModule, type ReactorHealthIndicator } from 'nest-reactor/health';\n" +
            'export const health = ReactorHealthModule;\n' +
            "export type Check = ReturnType<ReactorHealthIndicator['isHealthy']>;\n",
        );
        writeFileSync(join(app, 'tsconfig.json'), tsconfig(module, moduleResolution, 'dist', ['src']));
        compile(app);
        const terminusFilesLoadedBy = (entry: string): string[] =>
          JSON.parse(
            execFileSync(
              process.execPath,
              [
                '-e',
                `require('reflect-metadata'); require(${JSON.stringify(entry)}); ` +
                  "console.log(JSON.stringify(Object.keys(require.cache).filter((f) => f.includes('@nestjs/terminus'))))",
              ],
              { cwd: app, encoding: 'utf8' },
            ),
          ) as string[];
        expect(terminusFilesLoadedBy('nest-reactor')).toEqual([]);
        expect(terminusFilesLoadedBy('./dist/health.js')).not.toEqual([]);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it.each(RESOLUTIONS)(
    "'nest-reactor/dashboard' resolves with module %s (moduleResolution %s) and serves its page from the package",
    (module, moduleResolution) => {
      const app = freshApp(tarball, ['@nestjs/platform-express']);
      try {
        mkdirSync(join(app, 'src'));
        writeFileSync(
          join(app, 'src', 'main.ts'),
          "import 'reflect-metadata';\n" +
            "import { Module } from '@nestjs/common';\n" +
            "import { NestFactory } from '@nestjs/core';\n" +
            "import { ReactorModule } from 'nest-reactor';\n" +
            "import { ReactorDashboardModule, type ReactorDashboardOptions } from 'nest-reactor/dashboard';\n" +
            "const options: ReactorDashboardOptions = { path: 'reactor', guard: { canActivate: () => true } };\n" +
            '@Module({ imports: [ReactorModule.forRoot(), ReactorDashboardModule.forRoot(options)] })\n' +
            'class AppModule {}\n' +
            'async function main(): Promise<void> {\n' +
            '  const app = await NestFactory.create(AppModule, { logger: false });\n' +
            "  await app.listen(0, '127.0.0.1');\n" +
            '  const base = await app.getUrl();\n' +
            "  for (const path of ['/reactor/', '/reactor/assets/app.js', '/reactor/assets/app.css', '/reactor/api/reactors']) {\n" +
            '    const reply = await fetch(base + path);\n' +
            "    console.log(path, reply.status, reply.headers.get('content-type')?.split(';')[0]);\n" +
            '  }\n' +
            '  await app.close();\n' +
            '}\n' +
            'void main();\n',
        );
        writeFileSync(join(app, 'tsconfig.json'), tsconfig(module, moduleResolution, 'dist', ['src']));
        compile(app);
        const stdout = execFileSync(process.execPath, ['dist/main.js'], { cwd: app, encoding: 'utf8' });
        expect(stdout.trim().split('\n')).toEqual([
          '/reactor/ 200 text/html',
          '/reactor/assets/app.js 200 text/javascript',
          '/reactor/assets/app.css 200 text/css',
          '/reactor/api/reactors 200 application/json',
        ]);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
    60_000,
  );

  describe("the README's quick start", () => {
    it('is a complete app: a module, a main.ts, and an install line naming every package it imports', () => {
      expect([...QUICK_START.files.keys()]).toEqual(expect.arrayContaining(['src/app.module.ts', 'src/main.ts']));
      const imported = new Set(
        [...QUICK_START.files.values()].flatMap((code) =>
          [...code.matchAll(/from '([^'.][^']*)'|import '([^'.][^']*)'/g)].map(([, a, b]) => a ?? b),
        ),
      );
      expect([...imported].filter((name) => !QUICK_START.install.includes(name))).toEqual([]);
    });

    it.each(RESOLUTIONS)(
      'compiles and runs verbatim from the packed package in a fresh app (module %s, moduleResolution %s)',
      (module, moduleResolution) => {
        const app = freshApp(tarball, QUICK_START.install);
        try {
          writeFiles(app, QUICK_START.files);
          writeFileSync(join(app, 'tsconfig.json'), tsconfig(module, moduleResolution, 'dist', ['src']));
          compile(app);
          const stdout = execFileSync(process.execPath, ['dist/main.js'], { cwd: app, encoding: 'utf8' });
          expect(stdout).toBe(QUICK_START.output);
        } finally {
          rmSync(app, { recursive: true, force: true });
        }
      },
      60_000,
    );
  });
  it('tests a reactor with Jest in a Nest 11 CommonJS app: the testing kit and the typed matchers of nest-reactor/testing/jest', () => {
    const app = freshApp(
      tarball,
      [...QUICK_START.install, '@nestjs/testing', '@types/jest', 'jest', 'ts-jest', 'typescript'],
      NEST11,
      {
        // `nest new`'s Jest configuration (Nest 11, CommonJS)
        jest: {
          moduleFileExtensions: ['js', 'json', 'ts'],
          rootDir: 'src',
          testRegex: '.*\\.spec\\.ts$',
          transform: { '^.+\\.(t|j)s$': 'ts-jest' },
          testEnvironment: 'node',
          setupFilesAfterEnv: ['<rootDir>/../test/setup-reactor.ts'],
          // relative imports that end in .js (the quick start's, as ES modules need) map to the .ts file
          moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
        },
      },
    );
    try {
      writeFiles(app, QUICK_START.files);
      mkdirSync(join(app, 'test'));
      writeFileSync(
        join(app, 'test', 'setup-reactor.ts'),
        "import { reactorMatchers } from 'nest-reactor/testing/jest';\nexpect.extend(reactorMatchers);\n",
      );
      writeFileSync(
        join(app, 'src', 'checkout.spec.ts'),
        "import 'nest-reactor/testing/jest';\n" +
          "import { Test } from '@nestjs/testing';\n" +
          "import { ReactorTestingKit, ReactorTestingModule } from 'nest-reactor/testing';\n" +
          "import { CheckoutReactor } from './checkout.reactor.js';\n" +
          "import { ChargePayment, CreateShipment, ReserveStock } from './checkout.steps.js';\n" +
          "import { PaymentsService } from './payments.service.js';\n\n" +
          "it('refunds the charge and releases the stock when shipping fails', async () => {\n" +
          '  const moduleRef = await Test.createTestingModule({\n' +
          '    imports: [ReactorTestingModule.forRoot()],\n' +
          '    providers: [PaymentsService, ReserveStock, ChargePayment, CreateShipment, CheckoutReactor],\n' +
          '  }).compile();\n' +
          '  await moduleRef.init();\n' +
          '  const kit = moduleRef.get(ReactorTestingKit);\n' +
          "  const order = { orderId: 'o-2', customerId: 'c-2', totalCents: 990, country: 'AQ' };\n" +
          '  const outcome = await kit.client.run(CheckoutReactor, { order });\n' +
          "  expect(outcome).toHaveFailedAt('ship');\n" +
          "  expect(outcome).toHaveRolledBack(['charge', 'reserve']);\n" +
          '  await moduleRef.close();\n' +
          '});\n',
      );
      // ts-jest type-checks the spec (diagnostics on), so the typed matchers are checked too.
      writeFileSync(
        join(app, 'tsconfig.json'),
        tsconfig('nodenext', 'nodenext', 'dist', ['src', 'test']).replace('"rootDir":"src"', '"rootDir":"."'),
      );
      const out = execFileSync(process.execPath, ['node_modules/jest/bin/jest.js', '--ci', '--json'], {
        cwd: app,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NODE_OPTIONS: '' },
      });
      const report = JSON.parse(out) as { numPassedTests: number; numFailedTests: number };
      expect({ passed: report.numPassedTests, failed: report.numFailedTests }).toEqual({ passed: 1, failed: 0 });
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  }, 120_000);

  describe("in the app today's `nest new` makes (Nest 12: ESM, TypeScript 6, Vitest) with bullmq 6", () => {
    /** `nest new`'s files for an ESM app (@nestjs/schematics 12, application/files/ts-esm), strict. */
    const NEST_NEW = {
      'package.json': { type: 'module' },
      'tsconfig.json': {
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          resolvePackageJsonExports: true,
          esModuleInterop: true,
          isolatedModules: true,
          declaration: true,
          removeComments: true,
          emitDecoratorMetadata: true,
          experimentalDecorators: true,
          allowSyntheticDefaultImports: true,
          target: 'ES2023',
          sourceMap: true,
          outDir: './dist',
          rootDir: '.',
          incremental: true,
          skipLibCheck: true,
          strict: true,
          strictPropertyInitialization: false,
          types: ['vitest/globals', 'node'],
        },
      },
      'tsconfig.build.json': {
        extends: './tsconfig.json',
        compilerOptions: { rootDir: './src' },
        include: ['src'],
        exclude: ['node_modules', 'test', 'dist', '**/*spec.ts'],
      },
      'nest-cli.json': {
        $schema: 'https://json.schemastore.org/nest-cli',
        collection: '@nestjs/schematics',
        sourceRoot: 'src',
        compilerOptions: { deleteOutDir: true },
      },
    };
    const NEST12_PACKAGES = [
      '@nestjs/cli',
      '@nestjs/platform-express',
      '@nestjs/testing',
      'typescript',
      'vitest',
      'vite-tsconfig-paths',
    ];

    /** A fresh Nest 12 ESM app from the packed package, with `nest new`'s configuration and these files. */
    function nest12App(extra: readonly string[], sources: Map<string, string>): string {
      const app = freshApp(tarball, [...QUICK_START.install, ...NEST12_PACKAGES, ...extra], NEST12, {
        type: 'module',
        scripts: { build: 'nest build', test: 'vitest run' },
      });
      for (const [file, content] of Object.entries(NEST_NEW)) {
        if (file !== 'package.json') writeFileSync(join(app, file), JSON.stringify(content, null, 2));
      }
      writeFiles(app, sources);
      return app;
    }

    /** Runs a command of the app (a package's bin through node), returning stdout; throws with both streams. */
    function inApp(app: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
      try {
        return execFileSync(process.execPath, args, {
          cwd: app,
          encoding: 'utf8',
          stdio: 'pipe',
          env: { ...process.env, ...env },
        });
      } catch (error) {
        const { stdout, stderr } = error as { stdout?: string; stderr?: string };
        throw new Error(`\`${args.join(' ')}\` failed in the app:\n${stdout ?? ''}${stderr ?? ''}\n${String(error)}`);
      }
    }
    const nestBuild = (app: string) => inApp(app, ['node_modules/@nestjs/cli/bin/nest.js', 'build']);

    it('runs the quick start verbatim: `npm run build` (nest build, TypeScript 6) and `node dist/main.js`', () => {
      const app = nest12App([], QUICK_START.files);
      try {
        expect(versionIn(NEST12, 'typescript')).toMatch(/^6\./);
        nestBuild(app);
        expect(inApp(app, ['dist/main.js'])).toBe(QUICK_START.output);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    }, 120_000);

    it('tests a reactor with Vitest: the testing kit, mockStep and the typed matchers of nest-reactor/testing/vitest', () => {
      const sources = new Map(QUICK_START.files);
      sources.set(
        'test/setup-reactor.ts',
        "import { expect } from 'vitest';\n" +
          "import { reactorMatchers } from 'nest-reactor/testing/vitest';\n" +
          'expect.extend(reactorMatchers);\n',
      );
      sources.set(
        'vitest.config.ts',
        "import { defineConfig } from 'vitest/config';\n" +
          "import tsconfigPaths from 'vite-tsconfig-paths';\n\n" +
          'export default defineConfig({\n' +
          '  plugins: [tsconfigPaths()],\n' +
          "  test: { globals: true, root: './', include: ['**/*.spec.ts'], setupFiles: ['./test/setup-reactor.ts'] },\n" +
          '});\n',
      );
      sources.set(
        'src/checkout.spec.ts',
        "import { Test } from '@nestjs/testing';\n" +
          "import { success } from 'nest-reactor';\n" +
          "import { ReactorTestingKit, ReactorTestingModule } from 'nest-reactor/testing';\n" +
          "import { CheckoutReactor } from './checkout.reactor.js';\n" +
          "import { ChargePayment, CreateShipment, ReserveStock } from './checkout.steps.js';\n" +
          "import { PaymentsService } from './payments.service.js';\n\n" +
          "describe('checkout', () => {\n" +
          '  let kit: ReactorTestingKit;\n' +
          '  let close: () => Promise<void>;\n' +
          '  beforeEach(async () => {\n' +
          '    const moduleRef = await Test.createTestingModule({\n' +
          '      imports: [ReactorTestingModule.forRoot()],\n' +
          '      providers: [PaymentsService, ReserveStock, ChargePayment, CreateShipment, CheckoutReactor],\n' +
          '    }).compile();\n' +
          '    await moduleRef.init();\n' +
          '    kit = moduleRef.get(ReactorTestingKit);\n' +
          '    close = () => moduleRef.close();\n' +
          '  });\n' +
          '  afterEach(() => close());\n\n' +
          "  it('refunds the charge and releases the stock when shipping fails', async () => {\n" +
          "    const order = { orderId: 'o-2', customerId: 'c-2', totalCents: 990, country: 'AQ' };\n" +
          '    const outcome = await kit.client.run(CheckoutReactor, { order });\n' +
          "    expect(outcome).toHaveFailedAt('ship');\n" +
          "    expect(outcome).toHaveRolledBack(['charge', 'reserve']);\n" +
          "    expect(outcome).not.toHaveRollbackFailure('charge', { kind: 'undo' });\n" +
          '  });\n\n' +
          "  it('completes with a mocked shipment', async () => {\n" +
          "    kit.mockStep(CreateShipment, { run: async () => success({ trackingId: 'trk_mock' }) });\n" +
          "    const order = { orderId: 'o-1', customerId: 'c-1', totalCents: 4200, country: 'FR' };\n" +
          "    expect(await kit.client.run(CheckoutReactor, { order })).toHaveCompleted({ trackingId: 'trk_mock' });\n" +
          '  });\n\n' +
          "  it('refuses an invalid order, naming the field', async () => {\n" +
          "    const order = { orderId: 'o-3', customerId: 'c-3', totalCents: -1, country: 'FR' };\n" +
          "    expect(await kit.client.run(CheckoutReactor, { order })).toHaveValidationErrorOn('order.totalCents');\n" +
          '  });\n' +
          '});\n',
      );
      const app = nest12App([], sources);
      try {
        // tsc type-checks the spec (the matchers are typed on Vitest's expect), then Vitest runs it.
        inApp(app, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json']);
        const out = inApp(app, ['node_modules/vitest/vitest.mjs', 'run', '--reporter=verbose'], { NO_COLOR: '1' });
        expect(out).toMatch(/Tests\s+3 passed \(3\)/);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    }, 120_000);

    it('runs a durable run on Redis: handed to a bullmq 6 worker under @nestjs/bullmq 12 and @nestjs/schedule 12', async () => {
      const prefix = uniquePrefix('pkg-nest12');
      const sources = new Map<string, string>([
        [
          'src/main.ts',
          "import 'reflect-metadata';\n" +
            "import { Module } from '@nestjs/common';\n" +
            "import { NestFactory } from '@nestjs/core';\n" +
            "import { ScheduleModule } from '@nestjs/schedule';\n" +
            "import { Reactor, ReactorClient, ReactorModule, Step, success, type ReactorBlueprint, type ReactorBuilder } from 'nest-reactor';\n\n" +
            "@Step('greet')\n" +
            'class Greet {\n' +
            '  async run({ name }: { name: string }) {\n' +
            '    return success({ greeting: `hello ${name} from ${process.pid}` });\n' +
            '  }\n' +
            '}\n\n' +
            "@Reactor('greeting', { background: { all: true } })\n" +
            'class Greeting implements ReactorBlueprint<{ name: string }> {\n' +
            '  build(r: ReactorBuilder<{ name: string }>) {\n' +
            "    return r.step('greet', Greet, { name: r.input('name') });\n" +
            '  }\n' +
            '}\n\n' +
            '@Module({\n' +
            '  imports: [\n' +
            '    ScheduleModule.forRoot(),\n' +
            '    ReactorModule.forRoot({ redis: { url: process.env.REDIS_URL! }, prefix: process.env.PREFIX! }),\n' +
            '  ],\n' +
            '  providers: [Greet, Greeting],\n' +
            '})\n' +
            'class AppModule {}\n\n' +
            "const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });\n" +
            'app.enableShutdownHooks();\n' +
            'const client = app.get(ReactorClient);\n' +
            "const started = await client.start(Greeting, { name: 'nest 12' });\n" +
            'const done = await client.wait(started.runId, { timeoutMs: 20_000 });\n' +
            "console.log(JSON.stringify({ started: started.status, status: done.status, value: done.status === 'completed' ? done.value : undefined }));\n" +
            'await app.close();\n',
        ],
      ]);
      const app = nest12App([], sources);
      const redis = createTestRedis();
      try {
        nestBuild(app);
        const out = inApp(app, ['dist/main.js'], { REDIS_URL: redisUrl(), PREFIX: prefix });
        expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({
          started: 'dispatched',
          status: 'completed',
          value: { greeting: expect.stringMatching(/^hello nest 12 from \d+$/) },
        });
        expect(versionIn(NEST12, 'bullmq')).toMatch(/^6\./);
      } finally {
        rmSync(app, { recursive: true, force: true });
        await cleanupPrefix(redis, prefix);
        redis.disconnect();
      }
    }, 120_000);

    it('serves the dashboard (platform-express 12) and answers the health check (terminus 12)', () => {
      const sources = new Map<string, string>([
        [
          'src/main.ts',
          "import 'reflect-metadata';\n" +
            "import { Controller, Get, Module } from '@nestjs/common';\n" +
            "import { NestFactory } from '@nestjs/core';\n" +
            "import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';\n" +
            "import { ReactorModule } from 'nest-reactor';\n" +
            "import { ReactorDashboardModule } from 'nest-reactor/dashboard';\n" +
            "import { ReactorHealthIndicator, ReactorHealthModule } from 'nest-reactor/health';\n\n" +
            "@Controller('health')\n" +
            'class HealthController {\n' +
            '  constructor(private readonly health: HealthCheckService, private readonly reactor: ReactorHealthIndicator) {}\n' +
            '  @Get()\n' +
            '  @HealthCheck()\n' +
            '  check() {\n' +
            "    return this.health.check([() => this.reactor.isHealthy('reactor')]);\n" +
            '  }\n' +
            '}\n\n' +
            '@Module({\n' +
            '  imports: [\n' +
            '    ReactorModule.forRoot(),\n' +
            '    TerminusModule,\n' +
            '    ReactorHealthModule,\n' +
            "    ReactorDashboardModule.forRoot({ path: 'reactor', guard: { canActivate: () => true } }),\n" +
            '  ],\n' +
            '  controllers: [HealthController],\n' +
            '})\n' +
            'class AppModule {}\n\n' +
            'const app = await NestFactory.create(AppModule, { logger: false });\n' +
            "await app.listen(0, '127.0.0.1');\n" +
            'const base = await app.getUrl();\n' +
            "for (const path of ['/reactor/', '/reactor/assets/app.js', '/reactor/api/reactors', '/health']) {\n" +
            '  const reply = await fetch(base + path);\n' +
            "  console.log(path, reply.status, reply.headers.get('content-type')?.split(';')[0]);\n" +
            '}\n' +
            'await app.close();\n',
        ],
      ]);
      const app = nest12App(['@nestjs/terminus'], sources);
      try {
        nestBuild(app);
        expect(inApp(app, ['dist/main.js']).trim().split('\n')).toEqual([
          '/reactor/ 200 text/html',
          '/reactor/assets/app.js 200 text/javascript',
          '/reactor/api/reactors 200 application/json',
          '/health 200 application/json',
        ]);
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    }, 120_000);
  });
});
