/**
 * Two holders of one lock, on Redis with two real processes: a worker process whose step blocks
 * its event loop inside a reactor's locked section for longer than the lock's TTL (but not the
 * run lease). The lock is a TTL lock: while the worker is stalled its lock runs out, and a run in
 * the test process takes it and goes in (both are inside at once: the documented limit). What
 * holds: the stalled run's result is not recorded (its step fails `LOCK_LOST`, compensated, the run
 * rolled back), and a downstream store that checks `ctx.fence()` refuses its stale write.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type Redis from 'ioredis';
import type { TestingModule } from '@nestjs/testing';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { createRedisApp, quitAndWait } from '../e2e/e2e.fixtures';
import { cleanupPrefix, createTestRedis, onCluster, redisUrl, uniquePrefix } from '../setup/redis';
import { waitFor } from './chaos.harness';
import {
  STALL_LOCK_KEY,
  STALL_LOCK_TTL_MS,
  StallKeys,
  StallLockedReactor,
  stallProviders,
} from './lock-stall.fixtures';

const ROOT = resolve(__dirname, '..', '..');
/** The run lease: longer than the stall (the lock's TTL, then the other run's whole execution). */
const LEASE_TTL_MS = 6_000;

/** The worker process, its output, and its exit. */
function startWorker(prefix: string, blockFile: string): { child: ChildProcess; output: () => string } {
  let out = '';
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'test/chaos/lock-stall.worker.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...(onCluster() ? {} : { REDIS_URL: redisUrl() }),
      CHAOS_PREFIX: prefix,
      BLOCK_FILE: blockFile,
      LEASE_TTL_MS: String(LEASE_TTL_MS),
      TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'),
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  return { child, output: () => out };
}

describe('chaos: a lock holder that stalls past ttlMs (Redis, two processes, blocked event loop)', () => {
  const prefix = uniquePrefix('chaos-lock-stall');
  const keys = new StallKeys(prefix);
  const dir = mkdtempSync(join(tmpdir(), 'lock-stall-'));
  const blockFile = join(dir, 'unblock');
  let redis: Redis;
  let producer: TestingModule | undefined;
  let worker: ReturnType<typeof startWorker> | undefined;

  beforeAll(() => {
    redis = createTestRedis();
  });

  afterAll(async () => {
    // Unblock the worker whatever happened, then stop it.
    writeFileSync(blockFile, '');
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
      const exited = new Promise((done) => worker!.child.once('exit', done));
      worker.child.kill('SIGKILL');
      await exited;
    }
    await producer?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the other run goes in, the stalled run’s result is not recorded (LOCK_LOST), and its stale fenced write is refused', async () => {
    worker = startWorker(prefix, blockFile);
    await waitFor(() => /^ready$/m.test(worker!.output()) || worker!.child.exitCode !== null, {
      timeoutMs: 60_000,
      what: () => `the worker ready (output:\n${worker!.output()})`,
    });
    expect(worker.child.exitCode).toBeNull();
    // The producer: no workers of its own (the stalled run can only be the worker process's).
    ({ app: producer } = await createRedisApp(
      prefix,
      { workers: false, sweeper: { enabled: false }, leaseTtlMs: LEASE_TTL_MS },
      { providers: stallProviders({ prefix }) },
    ));
    const client = producer.get(ReactorClient);

    // 1. The worker takes the lock, goes in, and blocks its event loop there.
    const stalled = await client.start(StallLockedReactor, { label: 'first', block: true });
    await waitFor(async () => (await redis.exists(keys.inside(stalled.runId))) === 1, {
      timeoutMs: 30_000,
      what: () => `the worker inside the locked step (output:\n${worker!.output()})`,
    });
    const stalledFence = Number(await redis.get(keys.inside(stalled.runId)));
    expect(existsSync(blockFile)).toBe(false);

    // 2. The worker extends nothing while stalled: the lock runs out and a run here takes it
    //    (waiting for it, lock.waitMs), under a higher fence, and completes.
    const other = await client.run(StallLockedReactor, { label: 'second', block: false });
    expect(other).toMatchObject({ status: 'completed', value: 'second written' });
    const otherFence = Number(await redis.get(keys.inside(other.runId)));
    expect(otherFence).toBeGreaterThan(stalledFence);
    // Two holders were inside at once: a TTL lock cannot prevent it (README, "Locks").
    expect(Number(await redis.get(keys.maxInFlight()))).toBe(2);

    // 3. The stall ends. The stalled step writes downstream under its old fence (refused), and
    //    reports success; its run's check finds the lock lost before recording it.
    writeFileSync(blockFile, '');
    await waitFor(async () => ['failed', 'completed'].includes((await client.get(stalled.runId))?.status ?? ''), {
      timeoutMs: 30_000,
      what: () => `the stalled run finished (output:\n${worker!.output()})`,
    });
    const view = await client.get(stalled.runId);
    expect(view).toMatchObject({
      status: 'failed',
      failure: { code: 'LOCK_LOST', reactorName: 'stall-locked', stepName: 'guarded', retryable: false },
    });
    expect(view?.failure?.errorMessage).toContain(`the lock '${STALL_LOCK_KEY}'`);
    // Its result was never recorded; its body was compensated.
    expect(view?.results).not.toHaveProperty('guarded');
    expect(await redis.lrange(keys.compensated(), 0, -1)).toEqual([stalled.runId]);
    // The downstream store kept the newer holder's write and refused the stale one.
    expect(await redis.lrange(keys.accepted(), 0, -1)).toEqual([other.runId]);
    expect(await redis.lrange(keys.refused(), 0, -1)).toEqual([stalled.runId]);
    expect(Number(await redis.get(keys.highestFence()))).toBe(otherFence);
    // The stall was longer than the lock's TTL and shorter than the lease: the worker kept the run
    // (it wrote the failure itself) and is alive.
    expect(STALL_LOCK_TTL_MS).toBeLessThan(LEASE_TTL_MS);
    expect(worker.child.exitCode).toBeNull();
  }, 120_000);
});
