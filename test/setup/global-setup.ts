/**
 * Jest global setup: find a Redis for the test run and export its URL as `process.env.REDIS_URL`.
 *
 * Runs once, in the Jest parent process, before any worker is forked; the workers inherit the
 * parent's environment, so test files read the URL via `redisUrl()` from ./redis.ts.
 *
 * Discovery order:
 *   1. `REDIS_URL`, if set (it must answer PING, else the run fails fast with a clear error);
 *   2. a Redis answering PING on 127.0.0.1:6379;
 *   3. a throw-away `redis-server` from PATH, started on a free port (no persistence, data and log
 *      in a temp dir). Its pid is written to a temp file whose path is passed to the teardown in
 *      `REACTOR_TEST_REDIS_PID_FILE`; test/setup/global-teardown.ts stops it.
 * If none works, the setup throws with instructions to install Redis or set REDIS_URL. Before all of
 * this, where `redis-server` is not on PATH and this process runs as root with apt-get (a bare
 * Debian machine), it installs Debian's `redis-server` package, so `npm test` passes there too.
 *
 * Environment knobs (for the tooling's own tests, not needed in normal use):
 *   REACTOR_TEST_REDIS_PROBE_PORT  port probed in step 2 instead of 6379; `0` skips step 2.
 *                                  E.g. `REACTOR_TEST_REDIS_PROBE_PORT=0 npx jest` always starts
 *                                  a private redis-server.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { freePort } from '../support/redis-server';

/** Env var holding the path of the pid file of a redis-server started by this setup. */
export const PID_FILE_ENV = 'REACTOR_TEST_REDIS_PID_FILE';

const DEFAULT_PROBE_PORT = 6379;
const START_TIMEOUT_MS = 10_000;
const START_ATTEMPTS = 3;

const INSTALL_HINT =
  'Install Redis (e.g. `sudo apt-get install redis-server`, or `brew install redis`) so that ' +
  '`redis-server` is on PATH or one listens on 127.0.0.1:6379, or set REDIS_URL=redis://host:port.';

export default async function globalSetup(): Promise<void> {
  const tried: string[] = [];
  // Some suites start private servers (a cluster-enabled node, an eviction policy) even when a
  // Redis answers on 6379, so the binary is provided first where it can be.
  provideRedisServer();

  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    if (await ping(fromEnv, 3000)) return log(`using REDIS_URL ${redact(fromEnv)}`);
    throw new Error(
      `REDIS_URL=${redact(fromEnv)} is set but does not answer PING. Start that Redis or unset REDIS_URL.`,
    );
  }

  const probePort = parseProbePort(process.env.REACTOR_TEST_REDIS_PROBE_PORT);
  if (probePort !== 0) {
    const url = `redis://127.0.0.1:${probePort}`;
    if (await ping(url, 500)) {
      process.env.REDIS_URL = url;
      return log(`using the Redis already running at ${url}`);
    }
    tried.push(`nothing answers PING on 127.0.0.1:${probePort}`);
  }

  let started: { url: string; pid: number; dir: string };
  try {
    started = await startRedisServer();
  } catch (err) {
    tried.push((err as Error).message);
    throw new Error(`No Redis available for the tests (REDIS_URL is unset; ${tried.join('; ')}). ${INSTALL_HINT}`);
  }
  const pidFile = join(started.dir, 'redis-server.pid');
  writeFileSync(pidFile, `${started.pid}\n`);
  process.env[PID_FILE_ENV] = pidFile;
  process.env.REDIS_URL = started.url;
  log(`started redis-server (pid ${started.pid}) at ${started.url}`);
}

/**
 * On a machine without `redis-server` on PATH where this process may install packages (root with
 * apt-get, as on the CI and development machines of this project), installs Debian's
 * `redis-server` package (binary only: the package's own service is not started here). Elsewhere
 * it does nothing, and the steps below say what to install if they need it.
 */
function provideRedisServer(): void {
  if (onPath('redis-server') || process.getuid?.() !== 0 || !onPath('apt-get')) return;
  log('redis-server is not on PATH: installing it with apt-get (Debian package redis-server)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 300_000 });
    execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'ignore', env, timeout: 300_000 });
  } catch (err) {
    log(`could not install redis-server with apt-get: ${(err as Error).message.split('\n')[0]}`);
  }
}

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** True when `url` answers PING within roughly `timeoutMs`; never retries, never throws. */
async function ping(url: string, timeoutMs: number): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: false,
  });
  client.on('error', () => undefined); // failures are reported through the promises below
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Starts `redis-server` from PATH on a free port; retries a few times if the port got taken meanwhile. */
async function startRedisServer(): Promise<{ url: string; pid: number; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'nest-reactor-test-redis-'));
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
    const port = await freePort();
    const logFile = join(dir, `redis-${port}.log`);
    // Each option is its own argv entry; `''` is the empty argument of `--save ""` (no RDB snapshots).
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    const child = spawn('redis-server', [...args, '--dir', dir, '--logfile', logFile], { stdio: 'ignore' });
    try {
      const url = `redis://127.0.0.1:${port}`;
      await waitUntilReady(child, url);
      child.unref(); // the teardown stops it; it must not keep Jest's parent process alive
      watchdog(child.pid!, dir);
      return { url, pid: child.pid!, dir };
    } catch (err) {
      lastError = withLogTail(err as Error, logFile);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') break; // not installed: retrying is pointless
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError ?? new Error('could not start redis-server');
}

/** Resolves once `url` answers PING; rejects if the child fails to spawn, exits, or times out. */
function waitUntilReady(child: ChildProcess, url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.off('error', onError);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve();
    };
    const onError = (err: NodeJS.ErrnoException) =>
      finish(
        Object.assign(
          new Error(
            err.code === 'ENOENT' ? '`redis-server` is not on PATH' : `could not run redis-server: ${err.message}`,
          ),
          { code: err.code },
        ),
      );
    const onExit = (code: number | null, signal: string | null) =>
      finish(new Error(`redis-server exited early (code ${code}, signal ${signal})`));
    const timer = setTimeout(
      () => finish(new Error(`redis-server did not answer PING within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.once('error', onError);
    child.once('exit', onExit);
    void (async () => {
      while (!settled) {
        if (await ping(url, 500)) return finish();
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  });
}

/**
 * Best effort: a detached shell that kills the server (and removes its temp dir) if this Jest
 * process dies without running the teardown (e.g. `kill -9`). It exits by itself, within ~2 s,
 * once the server is gone.
 */
function watchdog(redisPid: number, dir: string): void {
  const script =
    'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 2; done; ' +
    'if kill "$2" 2>/dev/null; then sleep 1; rm -rf "$3"; fi';
  try {
    const sh = spawn('sh', ['-c', script, 'sh', String(process.pid), String(redisPid), dir], {
      stdio: 'ignore',
      detached: true,
    });
    sh.on('error', () => undefined);
    sh.unref();
  } catch {
    // no `sh`: the teardown still stops the server on a normal exit
  }
}

function parseProbePort(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_PROBE_PORT;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`REACTOR_TEST_REDIS_PROBE_PORT must be a port number (0 skips the probe), got "${value}"`);
  }
  return port;
}

/** Hides a password in `redis://user:password@host` URLs. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

/** Appends the last lines of the server's log to a start-up error. */
function withLogTail(err: Error, logFile: string): Error {
  let tail = '';
  try {
    tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    // no log (e.g. the binary was not found)
  }
  if (tail) err.message += `; last lines of its log:\n${tail}`;
  return err;
}

function log(message: string): void {
  process.stderr.write(`\n[test redis] ${message}\n`);
}
