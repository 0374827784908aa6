import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** The files `npm pack` would put in the tarball (its `prepack` builds `dist` first). */
function packedFiles(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], {
    cwd: join(__dirname, '..'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  const [report] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ files: Array<{ path: string }> }>;
  return report.files.map((f) => f.path);
}

describe('the published package', () => {
  it('npm pack builds first (prepack) and ships the entry points, their types and the Lua scripts, no sources or tests', () => {
    const files = packedFiles();
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
  }, 120_000);
});
