import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = join(__dirname, '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

/** The two module settings a Nest app is compiled with: `nest new`'s (commonjs) and node16. */
const RESOLUTIONS = [
  ['commonjs', 'node10'],
  ['node16', 'node16'],
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
function freshApp(tarball: string, install: readonly string[]): string {
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
    const target = join(root, 'node_modules', name);
    if (!existsSync(target)) throw new Error(`${name} is not installed in this repository`);
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(target, join(modules, name), 'dir');
  }
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'fresh-app', private: true }));
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
      'dist/lib/dashboard/assets/index.html',
      'dist/lib/dashboard/assets/app.js',
      'dist/lib/dashboard/assets/app.css',
    ]) {
      expect(files).toContain(entry);
    }
    expect(files).toContain('dist/lib/scripts/checkpoint-4.lua');
    expect(files).toContain('dist/lib/scripts/interruptClaim-3.lua');
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('lib/') || f.startsWith('sample/'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('declares the Nest, BullMQ and schedule packages as peer dependencies, so an app shares its own copies', () => {
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(
      [
        '@nestjs/bullmq',
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/schedule',
        '@nestjs/terminus',
        'bullmq',
        'rxjs',
      ].sort(),
    );
    for (const shared of ['@nestjs/bullmq', '@nestjs/schedule', 'bullmq', '@nestjs/common', '@nestjs/core'])
      expect(pkg.dependencies).not.toHaveProperty(shared);
    expect(pkg.peerDependenciesMeta?.['@nestjs/terminus']?.optional).toBe(true);
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
            "import { FakeClock, ReactorTestingKit, ReactorTestingModule, TestClock, reactorMatchers } from 'nest-reactor/testing';\n" +
            'export const clock: FakeClock = new FakeClock();\n' +
            'export const testClock: TestClock = new TestClock();\n' +
            'export const module = ReactorModule;\n' +
            'export const testing = ReactorTestingModule.forRoot({ clock: testClock });\n' +
            'export type Kit = ReactorTestingKit;\n' +
            'export const matchers = Object.keys(reactorMatchers);\n',
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
    const quickStart = readmeQuickStart();

    it('is a complete app: a module, a main.ts, and an install line naming every package it imports', () => {
      expect([...quickStart.files.keys()]).toEqual(expect.arrayContaining(['src/app.module.ts', 'src/main.ts']));
      const imported = new Set(
        [...quickStart.files.values()].flatMap((code) =>
          [...code.matchAll(/from '([^'.][^']*)'|import '([^'.][^']*)'/g)].map(([, a, b]) => a ?? b),
        ),
      );
      expect([...imported].filter((name) => !quickStart.install.includes(name))).toEqual([]);
    });

    it.each(RESOLUTIONS)(
      'compiles and runs verbatim from the packed package in a fresh app (module %s, moduleResolution %s)',
      (module, moduleResolution) => {
        const app = freshApp(tarball, quickStart.install);
        try {
          for (const [file, code] of quickStart.files) {
            mkdirSync(dirname(join(app, file)), { recursive: true });
            writeFileSync(join(app, file), code);
          }
          writeFileSync(join(app, 'tsconfig.json'), tsconfig(module, moduleResolution, 'dist', ['src']));
          compile(app);
          const stdout = execFileSync(process.execPath, ['dist/main.js'], { cwd: app, encoding: 'utf8' });
          expect(stdout).toBe(quickStart.output);
        } finally {
          rmSync(app, { recursive: true, force: true });
        }
      },
      60_000,
    );
  });
});
