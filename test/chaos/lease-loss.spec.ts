/**
 * Lease loss (fencing): worker A blocks its own event loop inside step s2 (a synchronous wait, so
 * its lease extender cannot run) until the run's lease (TTL 200 ms) has expired and a second
 * holder (the test) has taken it. When A wakes up, its next checkpoint is refused inside the Lua
 * script: A logs the lost lease, stops, and has written nothing; the second holder can write and
 * the run carries on from the last checkpoint A made while it held the lease.
 */
import { decodeRecord } from '../../lib/storage/run-record.codec';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Redis from 'ioredis';
import { runLeaseKey } from '../../lib/core';
import { LeaseLostError } from '../../lib/core/errors/run-state.error';
import type { Lease } from '../../lib/core/ports/lock-manager.port';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { ChaosChainReactor } from './chaos.fixtures';
import { createChaosApp, stopAllWorkers, waitFor, WorkerProcess, type ChaosApp } from './chaos.harness';

const LEASE_TTL_MS = 200;

describe('chaos: a worker whose lease expired cannot write (Redis, child process)', () => {
  const prefix = uniquePrefix('chaos-lease-loss');
  const blockFile = join(tmpdir(), `${prefix.replace(/[^A-Za-z0-9_.-]/g, '_')}unblock`);
  let redis: Redis;
  let producer: ChaosApp;

  beforeAll(async () => {
    redis = createTestRedis();
    producer = await createChaosApp(prefix, { leaseTtlMs: LEASE_TTL_MS });
  });

  afterEach(async () => {
    // Unblock a worker still blocked (a failed test), then stop it.
    writeFileSync(blockFile, 'go');
    await stopAllWorkers();
  });

  afterAll(async () => {
    await producer?.app.close();
    rmSync(blockFile, { force: true });
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('the blocked worker finds its lease taken: its checkpoint is refused and it writes nothing', async () => {
    const { client, keys, runtime } = producer;
    rmSync(blockFile, { force: true });
    const workerA = await WorkerProcess.start('A', prefix, {
      LEASE_TTL_MS: String(LEASE_TTL_MS),
      BLOCK_AT_STEP: 's2',
      BLOCK_FILE: blockFile,
    });
    const { runId } = await client.start(ChaosChainReactor, { seed: 'lease' });

    await waitFor(async () => (await redis.exists(keys.inside(runId, 's2'))) === 1, {
      timeoutMs: 10_000,
      what: () => `worker A inside s2 (output:\n${workerA.output})`,
    });
    // A's event loop is blocked: nothing extends its lease, which expires within the TTL.
    const leaseKey = runtime.keys.leaseKey(runId);
    await waitFor(async () => (await redis.exists(leaseKey)) === 0, {
      timeoutMs: 5_000,
      intervalMs: 10,
      what: "A's lease expired",
    });
    // A second holder (as a worker the sweeper handed the run to would) takes the run's lease.
    const second = await runtime.locks.acquire(runLeaseKey(runId), 10_000, 'second-holder');
    expect(second).not.toBeNull();
    const lease = second as Lease;
    const runKey = runtime.keys.runKey(runId);
    const snapshot = await redis.hgetall(runKey);
    expect(decodeRecord(runId, snapshot).state.completed).toEqual(['s1']);

    writeFileSync(blockFile, 'go');
    await workerA.waitForOutput(new RegExp(`Lease on run '${runId}' was lost`), 10_000);

    // A wrote nothing after losing its lease, did not go on to s3, and left the new holder's lease alone.
    expect(await redis.hgetall(runKey)).toEqual(snapshot);
    expect(await redis.get(leaseKey)).toBe('second-holder');
    expect(Number(await redis.get(keys.ran(runId, 's2')))).toBe(1);
    expect(await redis.exists(keys.ran(runId, 's3'))).toBe(0);
    expect(workerA.alive).toBe(true);

    // The holder's writes go through; a write fenced by any other token is refused.
    const state = (await runtime.storage.load(runId))!;
    state.updatedAt = Date.now();
    await expect(
      runtime.storage.save(state, { lease: { key: lease.key, token: 'stale-token' }, leaseTtlMs: 10_000 }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(runtime.storage.save(state, { lease, leaseTtlMs: 10_000 })).resolves.toBe(true);
    expect(decodeRecord(runId, await redis.hgetall(runKey)).state.updatedAt).toBe(state.updatedAt);

    // The holder hands the run back to a worker (A again: it blocks once per run): it resumes after s1.
    expect(await runtime.locks.release(lease)).toBe(true);
    await runtime.dispatcher.dispatch({ kind: 'resume', runId, reactorName: 'chaos-chain' });
    const done = await client.wait<string>(runId, { timeoutMs: 10_000 });
    expect(done.status === 'completed' && done.value).toBe('lease>s1>s2>s3>s4>s5>s6');
    expect(await redis.lrange(keys.log(runId), 0, -1)).toEqual(['s1', 's2', 's2', 's3', 's4', 's5', 's6']);
  });
});
