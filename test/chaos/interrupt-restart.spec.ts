/**
 * Restart: a run paused at an interrupt in a worker child process survives a restart of every
 * process (the worker SIGKILLed, the producer app closed). From new processes on the same prefix,
 * a resume by correlation id completes it with each step run once; an active timeout whose
 * deadline passed while nothing was running still fires in the new worker (its delayed job is in
 * Redis), failing the run with rollback with nobody calling.
 */
import type Redis from 'ioredis';
import type { RunView } from '../../lib/core/engine/run-view';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import {
  CHAOS_INTERRUPT_PROVIDERS,
  CHAOS_INTERRUPT_TIMEOUT_MS,
  ChaosApprovalReactor,
  ChaosApprovalTimeoutReactor,
} from './chaos.fixtures';
import { createChaosApp, stopAllWorkers, waitFor, WorkerProcess, type ChaosApp } from './chaos.harness';

describe('chaos: a paused run across a restart of every process (Redis, BullMQ, child processes)', () => {
  const prefix = uniquePrefix('chaos-interrupt-restart');
  let redis: Redis;
  const producers: ChaosApp[] = [];

  /** A producer-only app in the test process, with the interrupt fixtures. */
  async function newProducer(): Promise<ChaosApp> {
    const producer = await createChaosApp(prefix, {}, { providers: CHAOS_INTERRUPT_PROVIDERS });
    producers.push(producer);
    return producer;
  }

  /** Wait until run `runId` has `status` (read by `producer`), and return its view. */
  async function untilStatus(
    producer: ChaosApp,
    runId: string,
    status: RunView['status'],
    workers: WorkerProcess[],
    timeoutMs = 20_000,
  ): Promise<RunView> {
    let view: RunView | undefined;
    await waitFor(async () => (view = await producer.client.get(runId))?.status === status, {
      timeoutMs,
      intervalMs: 50,
      what: () =>
        `run ${runId} ${status} (now ${view?.status}; output:\n` +
        workers.map((w) => `--- ${w.name}\n${w.output}`).join('\n') +
        ')',
    });
    return view!;
  }

  /** Start a run of `reactor` in worker A and wait until it is paused at `approve`. */
  async function pausedInWorker(
    reactor: typeof ChaosApprovalReactor,
    orderId: string,
  ): Promise<{ producer: ChaosApp; workerA: WorkerProcess; runId: string; view: RunView }> {
    const producer = await newProducer();
    const workerA = await WorkerProcess.start('A', prefix);
    const started = await producer.client.start(reactor, { seed: 'seed', orderId });
    expect(started.status).toBe('dispatched');
    const view = await untilStatus(producer, started.runId, 'paused', [workerA]);
    return { producer, workerA, runId: started.runId, view };
  }

  /** SIGKILL every worker and close the producer: nothing of the first generation is left. */
  async function killEverything(producer: ChaosApp, workers: WorkerProcess[]): Promise<void> {
    for (const worker of workers) {
      await worker.kill('SIGKILL');
      expect((await worker.exited).signal).toBe('SIGKILL');
    }
    await producer.app.close();
    producers.splice(producers.indexOf(producer), 1);
  }

  async function ran(producer: ChaosApp, runId: string, step: string): Promise<number> {
    return Number(await redis.get(producer.keys.ran(runId, step)));
  }

  beforeAll(() => {
    redis = createTestRedis();
  });

  afterEach(async () => {
    await stopAllWorkers();
    for (const producer of producers.splice(0)) await producer.app.close();
  });

  afterAll(async () => {
    await stopAllWorkers();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('paused in a worker, every process restarted: continueByCorrelationId from the new producer completes it, each step once', async () => {
    const first = await pausedInWorker(ChaosApprovalReactor, 'o-1');
    const { runId } = first;
    expect(first.view.completed).toEqual(['s1']);
    expect(first.view.outcome).toMatchObject({
      status: 'paused',
      stepName: 'approve',
      correlationId: 'order-o-1',
      waitingFor: [{ path: 'approve', correlationId: 'order-o-1' }],
    });

    await killEverything(first.producer, [first.workerA]);

    const workerB = await WorkerProcess.start('B', prefix);
    const producer = await newProducer();
    expect((await producer.client.get(runId))?.status).toBe('paused');

    const resumed = await producer.client.continueByCorrelationId(ChaosApprovalReactor, 'approve', 'order-o-1', 'yes');

    // The reactor runs in the background: the new worker applies the resume.
    expect(resumed).toMatchObject({ accepted: 'deferred', runId, reason: 'background' });
    const done = await untilStatus(producer, runId, 'completed', [workerB]);
    expect(done.value).toBe('yes>s2');
    expect(done.results).toEqual({ s1: 'seed>s1', approve: 'yes', s2: 'yes>s2' });
    expect(done.trace.filter((t) => t.type === 'resume')).toHaveLength(1);
    expect(await ran(producer, runId, 's1')).toBe(1);
    expect(await ran(producer, runId, 's2')).toBe(1);
    expect(await redis.lrange(producer.keys.log(runId), 0, -1)).toEqual(['s1', 's2']);
    expect(await redis.lrange(producer.keys.undone(runId), 0, -1)).toEqual([]);
    // The finished run still holds the id: a second resume is told its interrupt was answered.
    await expect(
      producer.client.continueByCorrelationId(ChaosApprovalReactor, 'approve', 'order-o-1', 'again', {
        ifNotReached: 'refuse',
      }),
    ).rejects.toMatchObject({ code: 'ALREADY_RESUMED' });
    expect(workerB.alive).toBe(true);
  }, 60_000);

  it('an active timeout across the restart: everything killed before the deadline, nobody calls, the new worker fails the run and undoes s1', async () => {
    const first = await pausedInWorker(ChaosApprovalTimeoutReactor, 'o-2');
    const { runId } = first;
    const timeoutAt = first.view.outcome.status === 'paused' ? first.view.outcome.timeoutAt : undefined;
    expect(timeoutAt).toBeGreaterThan(first.view.createdAt);
    expect(timeoutAt).toBeLessThanOrEqual(first.view.createdAt + CHAOS_INTERRUPT_TIMEOUT_MS + 5_000);
    // Worker A enqueues the wake-up job right after its pause is saved: wait for it before the kill
    // (a kill in between leaves the run to the recovery sweeper, not exercised here).
    const queue = first.producer.runtime.dispatcher.queue;
    await waitFor(
      async () => (await queue.getDelayed()).some((job) => (job.data as { runId?: string }).runId === runId),
      { timeoutMs: 10_000, what: `the delayed wake-up job of run ${runId}` },
    );

    await killEverything(first.producer, [first.workerA]);
    expect(Date.now()).toBeLessThan(timeoutAt!);
    expect(await redis.lrange(first.producer.keys.undone(runId), 0, -1)).toEqual([]);

    const workerB = await WorkerProcess.start('B', prefix);
    const producer = await newProducer();

    const failed = await untilStatus(producer, runId, 'failed', [workerB], CHAOS_INTERRUPT_TIMEOUT_MS + 20_000);
    expect(failed.failure).toMatchObject({ code: 'INTERRUPT_TIMED_OUT', stepName: 'approve' });
    expect(failed.finishedAt).toBeGreaterThanOrEqual(timeoutAt!);
    expect(await ran(producer, runId, 's1')).toBe(1);
    expect(await ran(producer, runId, 's2')).toBe(0);
    expect(await redis.lrange(producer.keys.undone(runId), 0, -1)).toEqual(['s1']);
    await expect(producer.client.continue(runId, 'approve', 'late')).rejects.toMatchObject({
      code: 'RUN_NOT_PAUSED',
    });
    expect(workerB.alive).toBe(true);
  }, 60_000);
});
