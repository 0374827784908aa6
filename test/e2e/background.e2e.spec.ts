import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import {
  BackgroundAfterReactor,
  BackgroundAllReactor,
  BackgroundBeforeReactor,
  BackgroundRetryReactor,
  BackgroundRollbackReactor,
  createRedisApp,
  LetterStep,
  quitAndWait,
  type StepLog,
} from './e2e.fixtures';

const WAIT = { timeoutMs: 10_000 };

/**
 * Two module instances on one Redis and prefix, as two processes would be: the producer
 * (`workers: false`) runs the caller's part of each run; the worker app's BullMQ worker runs the
 * rest. Each app has its own StepLog, so the logs show where each step ran.
 */
describe('background runs on Redis and BullMQ (e2e)', () => {
  const prefix = uniquePrefix('e2e-background');
  let redis: Redis;
  let producerApp: TestingModule;
  let workerApp: TestingModule;
  let producer: ReactorClient;
  let worker: ReactorClient;
  let producerLog: StepLog;
  let workerLog: StepLog;

  beforeAll(async () => {
    redis = createTestRedis();
    ({ app: producerApp, client: producer, log: producerLog } = await createRedisApp(prefix, { workers: false }));
    ({ app: workerApp, client: worker, log: workerLog } = await createRedisApp(prefix));
  });

  afterAll(async () => {
    await producerApp?.close();
    await workerApp?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('background all: the caller gets dispatched with no results; the worker runs every step', async () => {
    const started = await producer.run(BackgroundAllReactor, { word: 'abc' });

    expect(started.status).toBe('dispatched');
    expect(started.results).toEqual({});
    const done = await producer.wait(started.runId, WAIT);
    expect(done.status === 'completed' && done.value).toBe('C');
    expect(done.results).toEqual({ a: 'A', b: 'B', c: 'C' });
    expect(producerLog.of(started.runId)).toEqual([]);
    expect(workerLog.of(started.runId)).toEqual(['run:a', 'run:b', 'run:c']);
  });

  it("background after 'b': a and b run in the caller, c in the worker", async () => {
    const started = await producer.run(BackgroundAfterReactor, { word: 'xyz' });

    expect(started.status).toBe('dispatched');
    expect(started.results).toEqual({ a: 'X', b: 'Y' });
    const done = await producer.wait(started.runId, WAIT);
    expect(done.status === 'completed' && done.value).toBe('Z');
    expect(producerLog.of(started.runId)).toEqual(['run:a', 'run:b']);
    expect(workerLog.of(started.runId)).toEqual(['run:c']);
  });

  it("background before 'b': a runs in the caller, b and c in the worker", async () => {
    const started = await producer.run(BackgroundBeforeReactor, { word: 'pqr' });

    expect(started.status).toBe('dispatched');
    expect(started.results).toEqual({ a: 'P' });
    const done = await producer.wait(started.runId, WAIT);
    expect(done.status === 'completed' && done.value).toBe('R');
    expect(producerLog.of(started.runId)).toEqual(['run:a']);
    expect(workerLog.of(started.runId)).toEqual(['run:b', 'run:c']);
  });

  it('retries a failing step inside the worker with delayed jobs, honouring the backoff', async () => {
    const started = await producer.run(BackgroundRetryReactor, {});
    const done = await producer.wait(started.runId, WAIT);

    expect(done.status === 'completed' && done.value).toBe('steady');
    expect(done.attempts).toEqual({ flaky: 3 });
    expect(workerLog.of(started.runId)).toEqual(['run:flaky:1', 'run:flaky:2', 'run:flaky:3']);
    const retries = done.trace.filter((t) => t.type === 'retry');
    const runs = done.trace.filter((t) => t.type === 'run');
    expect(retries.map((t) => t.delayMs)).toEqual([50, 100]);
    expect(runs.map((t) => t.attempt)).toEqual([1, 2, 3]);
    // Each attempt started no sooner than its backoff after the failure before it.
    expect(runs[1].at - retries[0].at).toBeGreaterThanOrEqual(50);
    expect(runs[2].at - retries[1].at).toBeGreaterThanOrEqual(100);
  });

  it('rolls a failing background run back in the worker: compensate, then undo newest first', async () => {
    const started = await producer.run(BackgroundRollbackReactor, { word: 'mn' });
    const done = await producer.wait(started.runId, WAIT);

    expect(done.status).toBe('failed');
    if (done.status !== 'failed') return;
    expect(done.failure.stepName).toBe('charge');
    expect(done.failure.errorMessage).toBe('card declined');
    expect(done.failure.rollbackFailures).toEqual([]);
    expect(producerLog.of(started.runId)).toEqual([]);
    expect(workerLog.of(started.runId)).toEqual([
      'run:a',
      'run:b',
      'run:charge',
      'compensate:charge',
      'undo:b',
      'undo:a',
    ]);
  });

  it('the boot fails on a background hand-off point that is an interrupt, naming the reactor, the step and its kind', async () => {
    @Reactor('e2e-bg-before-interrupt', { background: { before: 'approve' } })
    class HandOffAtInterrupt implements ReactorBlueprint<object> {
      build(r: ReactorBuilder<object>) {
        const approved = r.interrupt('approve');
        return r.step('a', LetterStep, { word: approved as never, at: r.value(0) });
      }
    }
    // Refused at boot (an app that booted anyway is closed, and the test fails).
    const booted = createRedisApp(uniquePrefix('e2e-bg-interrupt'), {}, { providers: [HandOffAtInterrupt] }).then(
      async ({ app }) => {
        await app.close();
        return 'booted';
      },
    );
    await expect(booted).rejects.toThrow(
      "Reactor 'e2e-bg-before-interrupt': background: { before: 'approve' } names interrupt step 'approve', which cannot be a hand-off point",
    );
  });

  it('get and wait work from another module instance than the one that executed the run', async () => {
    const started = await worker.start(BackgroundAllReactor, { word: 'def' });
    expect(started.status).toBe('dispatched');

    // The producer app never executes anything (workers: false): it only reads Redis.
    const done = await producer.wait(started.runId, WAIT);
    expect(done.status === 'completed' && done.value).toBe('F');
    const view = await producer.get(started.runId);
    expect(view).toMatchObject({
      runId: started.runId,
      reactorName: 'e2e-bg-all',
      status: 'completed',
      results: { a: 'D', b: 'E', c: 'F' },
      completed: ['a', 'b', 'c'],
    });
    expect(await worker.get(started.runId)).toMatchObject({ status: 'completed' });
    expect(producerLog.of(started.runId)).toEqual([]);
  });
});
