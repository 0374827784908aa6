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
      'dist/lib/health/index.js',
      'dist/lib/health/index.d.ts',
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
    "'nest-reactor', 'nest-reactor/testing' and 'nest-reactor/health' resolve with module %s (moduleResolution %s)",
    (module, moduleResolution) => {
      const app = mkdtempSync(join(tmpdir(), 'nest-reactor-consumer-'));
      try {
        mkdirSync(join(app, 'node_modules'));
        symlinkSync(root, join(app, 'node_modules', 'nest-reactor'), 'dir');
        writeFileSync(
          join(app, 'consumer.ts'),
          "import { ReactorModule } from 'nest-reactor';\n" +
            "import { FakeClock } from 'nest-reactor/testing';\n" +
            "import { ReactorHealthModule, type ReactorHealthIndicator } from 'nest-reactor/health';\n" +
            'export const clock: FakeClock = new FakeClock();\n' +
            'export const module = ReactorModule;\n' +
            'export const health = ReactorHealthModule;\n' +
            "export type Check = ReturnType<ReactorHealthIndicator['isHealthy']>;\n",
        );
        writeFileSync(
          join(app, 'tsconfig.json'),
          JSON.stringify({
            compilerOptions: {
              module,
              moduleResolution,
              target: 'es2022',
              strict: true,
              noEmit: true,
              skipLibCheck: true,
              experimentalDecorators: true,
              types: [],
            },
            files: ['consumer.ts'],
          }),
        );
        // Throws (with tsc's diagnostics) when a module cannot be resolved.
        execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', app], { encoding: 'utf8', stdio: 'pipe' });
      } finally {
        rmSync(app, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it('at run time, nest-reactor loads without @nestjs/terminus and nest-reactor/health loads it', () => {
    const app = mkdtempSync(join(tmpdir(), 'nest-reactor-consumer-'));
    try {
      mkdirSync(join(app, 'node_modules'));
      symlinkSync(root, join(app, 'node_modules', 'nest-reactor'), 'dir');
      // Node resolves the package's `exports` from the consumer, as an application would.
      const loaded = (entry: string): string[] =>
        JSON.parse(
          execFileSync(
            process.execPath,
            [
              '-e',
              `require('reflect-metadata'); require(${JSON.stringify(entry)}); ` +
                "console.log(JSON.stringify(Object.keys(require.cache).filter((f) => f.includes('@nestjs/terminus'))))",
            ],
            { cwd: app, encoding: 'utf8', env: { ...process.env, NODE_PATH: join(root, 'node_modules') } },
          ),
        ) as string[];
      expect(loaded('nest-reactor')).toEqual([]);
      expect(loaded('nest-reactor/health')).not.toEqual([]);
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  }, 60_000);
});
