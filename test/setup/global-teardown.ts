/**
 * Jest global teardown: stops the redis-server that test/setup/global-setup.ts started, if any.
 *
 * The setup records the server's pid in a temp file and passes the file's path in
 * `REACTOR_TEST_REDIS_PID_FILE` (both hooks run in the Jest parent process). A Redis that was
 * merely found (REDIS_URL or 127.0.0.1:6379) is left alone.
 */
import { readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { PID_FILE_ENV } from './global-setup';

const STOP_TIMEOUT_MS = 5000;

export default async function globalTeardown(): Promise<void> {
  const pidFile = process.env[PID_FILE_ENV];
  if (!pidFile) return;

  const pid = readPid(pidFile);
  if (pid !== undefined) await stop(pid);

  // The pid file lives in the server's private temp dir (log file included): remove it all.
  rmSync(dirname(pidFile), { recursive: true, force: true });
  delete process.env[PID_FILE_ENV];
  // The URL pointed at the server just stopped; in watch mode the next run's setup must not reuse it.
  delete process.env.REDIS_URL;
}

function readPid(pidFile: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** SIGTERM, wait for the process to go away, SIGKILL if it does not within STOP_TIMEOUT_MS. */
async function stop(pid: number): Promise<void> {
  if (!signal(pid, 'SIGTERM')) return;
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!signal(pid, 0)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  signal(pid, 'SIGKILL');
}

/** Sends `sig` to `pid`; false if the process no longer exists. */
function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}
