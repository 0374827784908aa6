/**
 * A private `redis-server` for one test file: started from PATH on a free port (no persistence,
 * its files in a temp dir), ready when it logs "Ready to accept connections", stopped by pid.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running private server. */
export interface PrivateRedisServer {
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  /** SIGTERM, wait for the exit, remove its files. */
  stop(): Promise<void>;
}

const READY = /Ready to accept connections/;
const START_TIMEOUT_MS = 10_000;

/** Start `redis-server` with `args` added to the defaults (port, bind, no persistence, dir). */
export async function startRedisServer(args: readonly string[] = []): Promise<PrivateRedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'nest-reactor-private-redis-'));
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`redis-server did not start within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${error.message}\n${output.slice(-2000)}`));
    };
    const onExit = (code: number | null) => fail(new Error(`redis-server exited (code ${code})`));
    child.once('error', fail);
    child.once('exit', onExit);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (READY.test(output)) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve();
      }
    });
  });
  child.stdout.resume();
  child.stderr.resume();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not find a free port'))));
    });
  });
}
