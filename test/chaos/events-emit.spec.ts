/**
 * Events emitted concurrently from two processes (issue 23): two real child processes on one Redis
 * each emit the same 1,000 event ids at once (`e0` .. `e999`, released together by one line on
 * their stdin). The reactor declared on the event gets exactly one run per id: 1,000 runs stored,
 * and the two processes report 1,000 started between them, none twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import { cleanupPrefix, createTestRedis, onCluster, redisUrl, uniquePrefix } from '../setup/redis';
import { createRedisApp, quitAndWait } from '../e2e/e2e.fixtures';
import { waitFor } from './chaos.harness';
import { ChaosFulfilReactor } from './events.fixtures';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import type { TestingModule } from '@nestjs/testing';

const ROOT = resolve(__dirname, '..', '..');
const EVENTS = 1000;

/** An `events-emitter.ts` child process, its output captured. */
class Emitter {
  out = '';
  readonly exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    this.exited = new Promise((done) => child.once('exit', (code) => done(code)));
  }

  static start(prefix: string): Emitter {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'test/chaos/events-emitter.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...(onCluster() ? {} : { REDIS_URL: redisUrl() }),
        CHAOS_PREFIX: prefix,
        EVENTS: String(EVENTS),
        TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'),
        NO_COLOR: '1',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new Emitter(child);
  }

  result(): { started: string[]; rejected: number } {
    const line = /^result (.*)$/m.exec(this.out);
    if (!line) throw new Error(`no result line in:\n${this.out}`);
    return JSON.parse(line[1]) as { started: string[]; rejected: number };
  }
}

describe('chaos: one event id emitted from two processes at once starts one run (Redis)', () => {
  const prefix = uniquePrefix('chaos-events');
  let redis: Redis;
  let emitters: Emitter[] = [];
  let reader: { app: TestingModule; client: ReactorClient } | undefined;

  beforeAll(() => {
    redis = createTestRedis();
  });

  afterAll(async () => {
    for (const e of emitters) if (e.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
    await Promise.all(emitters.map((e) => e.exited));
    await reader?.app.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('1,000 event ids, each emitted by both processes concurrently: exactly 1,000 runs, one per id', async () => {
    emitters = [Emitter.start(prefix), Emitter.start(prefix)];
    for (const e of emitters) {
      await waitFor(() => /^ready$/m.test(e.out) || e.child.exitCode !== null, {
        timeoutMs: 60_000,
        what: () => `emitter ready (output:\n${e.out})`,
      });
      expect(e.out).toMatch(/^ready$/m);
    }
    for (const e of emitters) e.child.stdin!.write('go\n');
    const codes = await Promise.all(emitters.map((e) => e.exited));
    expect(codes).toEqual([0, 0]);

    const [a, b] = emitters.map((e) => e.result());
    expect(a.rejected + b.rejected).toBe(0);
    const started = [...a.started, ...b.started];
    expect(started).toHaveLength(EVENTS);
    expect(new Set(started).size).toBe(EVENTS);

    // What is stored: 1,000 runs of the reactor, one per order (event) id.
    reader = await createRedisApp(prefix, { workers: false }, { providers: [ChaosFulfilReactor] });
    const runs: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await reader.client.list({
        reactor: 'chaos-evt-fulfil',
        limit: 1000,
        ...(cursor ? { cursor } : {}),
      });
      runs.push(...page.runs.map((r) => r.runId));
      cursor = page.cursor;
    } while (cursor);
    expect(runs.sort()).toEqual([...started].sort());
    const orders = new Set<unknown>();
    for (const runId of runs.slice(0, 50)) {
      const view = await reader.client.get(runId);
      expect(view).toMatchObject({ reactorName: 'chaos-evt-fulfil', inputs: { orderId: expect.any(String) } });
      orders.add(view?.inputs.orderId);
    }
    expect(orders.size).toBe(50);
  }, 180_000);
});
