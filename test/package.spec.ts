import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..');

/** The files `npm pack` would put in the tarball (its `prepack` builds `dist` first). */
function packedFiles(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  const [report] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ files: Array<{ path: string }> }>;
  return report.files.map((f) => f.path);
}

/**
 * Compile `code` as a consumer of the package (linked into its node_modules) with these compiler
 * options. Throws, with tsc's diagnostics, when it does not compile (a module that cannot be
 * resolved, a matcher jest's `expect` does not know).
 */
function compileConsumer(options: Record<string, unknown>, code: string): void {
  const app = mkdtempSync(join(tmpdir(), 'nest-reactor-consumer-'));
  try {
    mkdirSync(join(app, 'node_modules'));
    symlinkSync(root, join(app, 'node_modules', 'nest-reactor'), 'dir');
    writeFileSync(join(app, 'consumer.ts'), code);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          experimentalDecorators: true,
          ...options,
        },
        files: ['consumer.ts'],
      }),
    );
    execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', app], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`the consumer did not compile:\n${stdout ?? ''}${stderr ?? ''}\n${String(error)}`);
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}

describe('the published package', () => {
  let files: string[];

  // One build for the file: packing runs `prepack` (the build), which the resolution checks use.
  beforeAll(() => {
    files = packedFiles();
  }, 120_000);

  it('npm pack builds first (prepack) and ships the entry points, their types and the Lua scripts, no sources or tests', () => {
    for (const entry of [
      'dist/lib/index.js',
      'dist/lib/index.d.ts',
      'dist/lib/testing/index.js',
      'dist/lib/testing/index.d.ts',
      'dist/lib/testing/jest/index.js',
      'dist/lib/testing/jest/index.d.ts',
    ]) {
      expect(files).toContain(entry);
    }
    expect(files).toContain('dist/lib/scripts/checkpoint-4.lua');
    expect(files).toContain('dist/lib/scripts/interruptClaim-3.lua');
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('lib/') || f.startsWith('sample/'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it.each([
    ['commonjs', 'node10'],
    ['node16', 'node16'],
  ])(
    "'nest-reactor' and 'nest-reactor/testing' resolve with module %s (moduleResolution %s), without any test framework's types",
    (module, moduleResolution) => {
      compileConsumer(
        { module, moduleResolution, types: [] },
        "import { ReactorModule } from 'nest-reactor';\n" +
          "import { FakeClock, ReactorTestingKit, ReactorTestingModule, TestClock, reactorMatchers } from 'nest-reactor/testing';\n" +
          'export const clock: FakeClock = new FakeClock();\n' +
          'export const testClock: TestClock = new TestClock();\n' +
          'export const module = ReactorModule;\n' +
          'export const testing = ReactorTestingModule.forRoot({ clock: testClock });\n' +
          'export type Kit = ReactorTestingKit;\n' +
          'export const matchers = Object.keys(reactorMatchers);\n',
      );
    },
    60_000,
  );

  it.each([
    ['commonjs', 'node10'],
    ['node16', 'node16'],
  ])(
    "'nest-reactor/testing/jest' resolves with module %s (moduleResolution %s) and types the matchers on jest's expect",
    (module, moduleResolution) => {
      compileConsumer(
        { module, moduleResolution, types: ['jest'], typeRoots: [join(root, 'node_modules', '@types')] },
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
    },
    60_000,
  );
});
