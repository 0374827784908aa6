/**
 * The Chromium a browser test drives with puppeteer-core, found or provided, never downloaded:
 *
 * 1. `CHROMIUM_PATH` (or `PUPPETEER_EXECUTABLE_PATH`), when set (it must exist);
 * 2. the system's `chromium` or `chromium-browser` on PATH (Debian: `apt-get install -y chromium`);
 * 3. the Chromium shipped inside the `@sparticuz/chromium` dev dependency (installed by `npm ci`
 *    like any package; unpacked to the temp dir on first use), so `npm test` passes on a bare
 *    machine with only Node on it.
 *
 * `@sparticuz/chromium` is an ES module, so it is asked from a child Node process (Jest's module
 * system here is CommonJS).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** What `puppeteer.launch` needs: the executable and the flags it must run with. */
export interface ChromiumLaunch {
  executablePath: string;
  args: string[];
  source: 'env' | 'system' | '@sparticuz/chromium';
}

/** Flags for a system Chromium running as root in a container (no sandbox, no GPU, small /dev/shm). */
const SYSTEM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'];

export function findChromium(): ChromiumLaunch {
  const fromEnv = process.env.CHROMIUM_PATH ?? process.env.PUPPETEER_EXECUTABLE_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`CHROMIUM_PATH is '${fromEnv}', which does not exist.`);
    return { executablePath: fromEnv, args: SYSTEM_ARGS, source: 'env' };
  }
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const path = execFileSync('which', [name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (path) return { executablePath: path, args: SYSTEM_ARGS, source: 'system' };
    } catch {
      // not this one
    }
  }
  try {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const { default: chromium } = await import('@sparticuz/chromium');\n" +
          'console.log(JSON.stringify({ executablePath: await chromium.executablePath(), args: chromium.args }));',
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
    );
    const found = JSON.parse(out.trim().split('\n').pop() ?? '') as { executablePath: string; args: string[] };
    return { ...found, source: '@sparticuz/chromium' };
  } catch (error) {
    throw new Error(
      'No Chromium for the browser tests: none on PATH and the @sparticuz/chromium dev dependency did not ' +
        `unpack (${(error as Error).message.split('\n')[0]}). Run \`npm ci\`, install Chromium ` +
        '(Debian/Ubuntu: apt-get install -y chromium) or set CHROMIUM_PATH to its executable.',
    );
  }
}
