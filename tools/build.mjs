// `npm run build` (and `prepack`): compile lib/ to dist/lib with tsconfig.build.json, then copy what
// tsc does not emit: the Lua scripts, the dashboard's page and files, and the hand-written types of
// `nest-reactor/testing/vitest` (lib/testing/vitest/types.d.ts, see that file).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
});
cpSync('lib/scripts', 'dist/lib/scripts', { recursive: true });
cpSync('lib/dashboard/assets', 'dist/lib/dashboard/assets', { recursive: true });
for (const types of ['types.d.ts', 'types.d.mts'])
  cpSync(`lib/testing/vitest/${types}`, `dist/lib/testing/vitest/${types}`);
