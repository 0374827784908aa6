/**
 * Duplicate delivery: the same run enqueued three times at once (three identity-only resume jobs)
 * and consumed by a worker with concurrency 4. One delivery takes the run's lease and executes it;
 * the others find the lease held and snooze without touching the stored run. Every step runs once.
 */
import { Worker } from 'bullmq';
import type Redis from 'ioredis';
import { elementRunId, mapIdOf } from '../../lib/core/model/keys';
import type { MapResults } from '../../lib/core/map/map-results';
import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { bullMqPrefix, REACTOR_QUEUE_NAME } from '../../lib/queue/queue.constants';
import { bullMqConnection, cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { CHAIN_STEPS, ChaosChainReactor, ChaosMapReactor, mapItems } from './chaos.fixtures';
import { createChaosApp, waitFor, type ChaosApp } from './chaos.harness';

describe('chaos: duplicate delivery of a run (Redis, BullMQ)', () => {
  const prefix = uniquePrefix('chaos-duplicate');
  let redis: Redis;
  let producer: ChaosApp;
  let worker: ChaosApp | undefined;
  let doubler: Worker | undefined;
  /** The doubler's connection (a Cluster in the cluster run, closed after it). */
  const bull = bullMqConnection();

  beforeAll(async () => {
    redis = createTestRedis();
    producer = await createChaosApp(prefix, { snoozeDelayMs: 100 });
  });

  afterAll(async () => {
    await doubler?.close();
    await bull.close();
    await worker?.app.close();
    await producer?.app.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('three resume jobs for one run: one executes each step, the others snooze and write nothing', async () => {
    const { client, keys, runtime } = producer;
    const started = await client.start(ChaosChainReactor, { seed: 'dup' });
    const runId = started.runId;
    const job: ReactorJob = { kind: 'resume', runId, reactorName: 'chaos-chain' };
    await runtime.dispatcher.dispatch(job);
    await runtime.dispatcher.dispatch(job);
    const queue = runtime.dispatcher.queue;
    const waiting = await queue.getJobs(['waiting']);
    expect(waiting.filter((j) => j.data.runId === runId)).toHaveLength(3);

    // The worker takes all three at once; the run waits at s1 until the test opens the gate.
    worker = await createChaosApp(
      prefix,
      { workers: true, workerConcurrency: 4, snoozeDelayMs: 300 },
      { config: { gateAtStep: 's1' } },
    );
    await waitFor(async () => (await redis.exists(keys.inside(runId, 's1'))) === 1, {
      timeoutMs: 10_000,
      what: 'one delivery inside s1',
    });
    const runKey = runtime.keys.runKey(runId);
    const before = await redis.hgetall(runKey);

    // Both duplicates found the lease held and were snoozed (re-enqueued with a delay).
    const snoozed = new Set<string>();
    await waitFor(
      async () => {
        const jobs = await queue.getJobs(['delayed', 'waiting', 'active', 'prioritized']);
        for (const j of jobs) if (j.data.runId === runId && (j.data.snoozes ?? 0) >= 1) snoozed.add(j.id!);
        return snoozed.size >= 2;
      },
      { timeoutMs: 10_000, intervalMs: 20, what: 'two snoozed duplicates' },
    );
    expect(await redis.hgetall(runKey)).toEqual(before);
    expect(Number(await redis.get(keys.ran(runId, 's1')))).toBe(1);

    await redis.set(keys.open(runId, 's1'), '1');
    const done = await client.wait<string>(runId, { timeoutMs: 10_000 });
    expect(done.status === 'completed' && done.value).toBe('dup>s1>s2>s3>s4>s5>s6');
    // Let every snoozed duplicate come back and find the run finished.
    await waitFor(async () => (await runtime.dispatcher.pending()) === 0, { timeoutMs: 10_000, what: 'queue drained' });
    expect(await queue.getJobCounts('failed')).toEqual({ failed: 0 });

    for (const step of CHAIN_STEPS) expect([step, Number(await redis.get(keys.ran(runId, step)))]).toEqual([step, 1]);
    expect(await redis.lrange(keys.log(runId), 0, -1)).toEqual([...CHAIN_STEPS]);
    const view = await client.get(runId);
    expect(view?.completed).toEqual([...CHAIN_STEPS]);
    expect(view?.trace.filter((t) => t.type === 'run').map((t) => t.step)).toEqual([...CHAIN_STEPS]);
  });

  it('every job delivered twice at once (resume and map elements): each element runs once', async () => {
    await worker?.app.close();
    worker = undefined;
    const { client, keys, engine, runtime } = producer;
    // At-least-once delivery at its worst: this worker hands every job to the engine twice,
    // concurrently. (Not the re-deliveries of a snoozed job: doubling those too would snooze forever,
    // each pair re-enqueueing the one that lost the race for the lease.)
    doubler = new Worker(
      REACTOR_QUEUE_NAME,
      async (job) => {
        const data = job.data as ReactorJob;
        const copies = data.snoozes ? 1 : 2;
        await Promise.all(Array.from({ length: copies }, () => engine.handleJob(data)));
      },
      { connection: bull.connection, prefix: bullMqPrefix(prefix), concurrency: 8 },
    );
    const count = 30;
    const started = await client.start(ChaosMapReactor, mapItems(count));
    const done = await client.wait<MapResults<number>>(started.runId, { timeoutMs: 20_000 });

    expect(done.status).toBe('completed');
    if (done.status !== 'completed') return;
    expect(await done.value.values()).toEqual(Array.from({ length: count }, (_, i) => i * 7));
    const mapId = mapIdOf(started.runId, 'items');
    const ran = await Promise.all(
      Array.from({ length: count }, async (_, i) => Number(await redis.get(keys.element(elementRunId(mapId, i))))),
    );
    expect(ran).toEqual(Array.from({ length: count }, () => 1));
    await waitFor(async () => (await runtime.dispatcher.pending()) === 0, { timeoutMs: 10_000, what: 'queue drained' });
    expect(await runtime.dispatcher.queue.getJobCounts('failed')).toEqual({ failed: 0 });
    expect((await client.get(started.runId))?.maps.items).toMatchObject({ total: count, succeeded: count, done: true });
  });
});
