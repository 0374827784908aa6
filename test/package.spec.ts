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
    "'nest-reactor' and 'nest-reactor/testing' resolve with module %s (moduleResolution %s)",
    (module, moduleResolution) => {
      const app = mkdtempSync(join(tmpdir(), 'nest-reactor-consumer-'));
      try {
        mkdirSync(join(app, 'node_modules'));
        symlinkSync(root, join(app, 'node_modules', 'nest-reactor'), 'dir');
        writeFileSync(
          join(app, 'consumer.ts'),
          "import { ReactorModule } from 'nest-reactor';\n" +
            "import { FakeClock } from 'nest-reactor/testing';\n" +
            'export const clock: FakeClock = new FakeClock();\n' +
            'export const module = ReactorModule;\n',
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
});
