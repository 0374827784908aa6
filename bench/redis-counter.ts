import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import Redis from 'ioredis';

let sent = 0;
let patched = false;
/** Commands by name (and script), when BENCH_COMMANDS is set: printed by {@link printCommandNames}. */
const byName = new Map<string, number>();
const scripts = new Map<string, string>();

function scriptOf(shaOrBody: unknown): string {
  const key = String(shaOrBody);
  return scripts.get(key) ?? key.slice(0, 12);
}

/** Print the commands counted by name since the last call (BENCH_COMMANDS=1), then reset. */
export function printCommandNames(label: string): void {
  if (!process.env.BENCH_COMMANDS) return;
  console.log(`commands by name (${label}):`, Object.fromEntries([...byName].sort((a, b) => b[1] - a[1])));
  byName.clear();
}

/**
 * Counts the commands every ioredis client in this process sends (BullMQ's included: it uses
 * ioredis), by wrapping `Redis.prototype.sendCommand`. A Lua script is one command (EVALSHA);
 * commands a script runs inside Redis are not round trips and are not counted. A pipeline counts
 * one per command in it, so the figure is an upper bound on round trips.
 */
export class CommandCounter {
  private start = 0;

  constructor() {
    if (patched) return;
    patched = true;
    const proto = Redis.prototype as unknown as { sendCommand: (...args: unknown[]) => unknown };
    const original = proto.sendCommand;
    proto.sendCommand = function (this: unknown, ...args: unknown[]) {
      sent++;
      if (process.env.BENCH_COMMANDS) {
        const command = args[0] as { name?: string; args?: unknown[] };
        const name =
          command.name === 'evalsha' || command.name === 'eval'
            ? `${command.name}:${scriptOf(command.args?.[0])}`
            : String(command.name);
        byName.set(name, (byName.get(name) ?? 0) + 1);
      }
      return original.apply(this, args);
    };
  }

  async begin(): Promise<void> {
    this.start = sent;
  }

  /** Commands sent since {@link begin}. */
  async end(): Promise<number> {
    return sent - this.start;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

let server: ChildProcess | undefined;
let url: string | undefined;

/**
 * The Redis benchmarks use: a private `redis-server` on a free port (so nothing else's commands
 * are counted), or `BENCH_REDIS_URL` when set. Stopped by {@link stopBenchRedis}.
 */
export async function benchRedis(): Promise<string> {
  if (url) return url;
  if (process.env.BENCH_REDIS_URL) return (url = process.env.BENCH_REDIS_URL);
  const port = await freePort();
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const candidate = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(candidate, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined); // not up yet: retried below
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return (url = candidate);
    } catch {
      probe.disconnect();
      if (Date.now() > deadline) throw new Error('could not start redis-server for the benchmarks (is it on PATH?)');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Stop the private server, if one was started. */
export function stopBenchRedis(): void {
  server?.kill('SIGTERM');
  server = undefined;
  url = undefined;
}
