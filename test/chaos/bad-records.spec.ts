/**
 * Bad records on Redis: a run whose record is corrupt JSON, one written in another schema version,
 * one of a reactor the worker process does not register, and runs whose context grows over
 * `maxContextBytes`. Each is marked failed once with the right code; its BullMQ job completes (no
 * retry, nothing in the failed set); a second delivery changes nothing; the worker process keeps
 * running and executes healthy runs.
 */
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { ChaosBigLastReactor, ChaosBigReactor, ChaosChainReactor, ChaosStep } from './chaos.fixtures';
import { createChaosApp, stopAllWorkers, waitFor, WorkerProcess, type ChaosApp } from './chaos.harness';

const MAX_CONTEXT_BYTES = 20_000;

/** Registered in the test process only: the worker process does not know it. */
@Reactor('chaos-unregistered', { background: { all: true } })
class UnregisteredReactor implements ReactorBlueprint<{ seed: string }> {
  build(r: ReactorBuilder<{ seed: string }>) {
    return r.step('s1', ChaosStep, { value: r.input('seed', { type: 'string' }) });
  }
}

describe('chaos: bad records (Redis, BullMQ, child process)', () => {
  const prefix = uniquePrefix('chaos-bad-records');
  let redis: Redis;
  let producer: ChaosApp;

  beforeAll(async () => {
    redis = createTestRedis();
    producer = await createChaosApp(
      prefix,
      { maxContextBytes: MAX_CONTEXT_BYTES },
      { providers: [UnregisteredReactor] },
    );
  });

  afterAll(async () => {
    await stopAllWorkers();
    await producer?.app.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('corrupt JSON, unknown schema version, oversized context: failed once, jobs complete; an unknown reactor is handed back untouched', async () => {
    const { client, runtime, keys } = producer;
    const runKey = (runId: string) => runtime.keys.runKey(runId);

    // Runs and their jobs are stored while no worker consumes; then two records are damaged.
    const corrupt = (await client.start(ChaosChainReactor, { seed: 'c' })).runId;
    const foreign = (await client.start(ChaosChainReactor, { seed: 'f' })).runId;
    const unknown = (await client.start(UnregisteredReactor, { seed: 'u' })).runId;
    const tooLarge = (await client.start(ChaosBigReactor, { seed: 'b', size: 2 * MAX_CONTEXT_BYTES })).runId;
    const tooLargeLast = (await client.start(ChaosBigLastReactor, { seed: 'l', size: 2 * MAX_CONTEXT_BYTES })).runId;
    await redis.hset(runKey(corrupt), 'state', '{"schemaVersion": 1, "runId": ');
    const stored = JSON.parse((await redis.hget(runKey(foreign), 'state'))!);
    await redis.hset(runKey(foreign), 'state', JSON.stringify({ ...stored, schemaVersion: 999 }));
    expect(await runtime.dispatcher.pending()).toBe(5);

    const unknownBefore = await redis.hgetall(runKey(unknown));
    const worker = await WorkerProcess.start('W', prefix, { MAX_CONTEXT_BYTES: String(MAX_CONTEXT_BYTES) });
    const all = [corrupt, foreign, tooLarge, tooLargeLast];
    await waitFor(
      async () => {
        const statuses = await Promise.all(all.map((id) => redis.hget(runKey(id), 'status')));
        return statuses.every((s) => s === 'failed');
      },
      { timeoutMs: 15_000, what: () => `every bad run failed (worker output:\n${worker.output})` },
    );
    // Every job completed: none in the failed set. The one delayed job is the unknown reactor's,
    // handed back for a worker that knows it (a rolling deploy), its run untouched.
    await waitFor(async () => (await runtime.dispatcher.queue.getJobCounts('delayed')).delayed === 1, {
      timeoutMs: 5_000,
      what: 'the unknown reactor job handed back',
    });
    // A job completes just after its run's final save: wait for the last ones to leave `active`.
    await waitFor(async () => (await runtime.dispatcher.queue.getJobCounts('active')).active === 0, {
      timeoutMs: 5_000,
      what: 'every job of a bad run completed',
    });
    expect(await runtime.dispatcher.queue.getJobCounts('failed', 'waiting', 'active')).toMatchObject({
      failed: 0,
      waiting: 0,
      active: 0,
    });
    expect(await redis.hgetall(runKey(unknown))).toEqual(unknownBefore);
    expect((await client.get(unknown))?.status).toBe('running');
    expect(worker.output).toContain("reactor 'chaos-unregistered' is not registered in this process");

    const failure = async (runId: string) => (await client.get(runId))?.failure;
    expect(await failure(corrupt)).toMatchObject({ code: 'CORRUPT_RECORD', exceptionClass: 'CorruptRecordError' });
    expect((await failure(corrupt))?.message).toContain('is not valid JSON');
    expect(await failure(foreign)).toMatchObject({ code: 'SCHEMA_VERSION', reactorName: 'chaos-chain' });
    expect((await failure(foreign))?.message).toContain('schema version 999');
    for (const id of [corrupt, foreign]) expect(await redis.hget(runKey(id), 'broken')).toBe('1');
    // Nothing of the broken runs, nor of the unknown reactor's, executed.
    for (const id of [corrupt, foreign, unknown]) expect(await redis.exists(keys.log(id))).toBe(0);

    // Oversized mid-run: the step whose result does not fit fails, the run rolls back; s2 never runs.
    expect(await failure(tooLarge)).toMatchObject({ code: 'CONTEXT_TOO_LARGE', stepName: 'big' });
    expect(await redis.lrange(keys.log(tooLarge), 0, -1)).toEqual(['s1', 'big']);
    // Oversized in the final save: a minimal failed record is kept.
    expect(await failure(tooLargeLast)).toMatchObject({ code: 'CONTEXT_TOO_LARGE' });
    expect(await redis.lrange(keys.log(tooLargeLast), 0, -1)).toEqual(['s1', 'big']);
    for (const id of all) expect(Buffer.byteLength((await redis.hget(runKey(id), 'state'))!)).toBeLessThan(10_000);

    // A second delivery of each finds a finished run: nothing changes, nothing runs, no retry.
    const before = await Promise.all(all.map((id) => redis.hgetall(runKey(id))));
    for (const [runId, reactorName] of [
      [corrupt, 'chaos-chain'],
      [foreign, 'chaos-chain'],
      [tooLarge, 'chaos-big'],
      [tooLargeLast, 'chaos-big-last'],
    ]) {
      await runtime.dispatcher.dispatch({ kind: 'resume', runId, reactorName });
    }
    await waitFor(
      async () => {
        const counts = await runtime.dispatcher.queue.getJobCounts('waiting', 'active');
        return counts.waiting + counts.active === 0;
      },
      { timeoutMs: 5_000, what: 'queue drained' },
    );
    expect(await Promise.all(all.map((id) => redis.hgetall(runKey(id))))).toEqual(before);
    expect(await runtime.dispatcher.queue.getJobCounts('failed', 'delayed')).toEqual({ failed: 0, delayed: 1 });

    // The worker process never crashed, and still executes healthy runs.
    expect(worker.alive).toBe(true);
    const healthy = await client.start(ChaosChainReactor, { seed: 'ok' });
    const done = await client.wait<string>(healthy.runId, { timeoutMs: 10_000 });
    expect(done.status === 'completed' && done.value).toBe('ok>s1>s2>s3>s4>s5>s6');
    expect(worker.output).not.toMatch(/Unhandled|uncaught/i);
  }, 45_000);
});
