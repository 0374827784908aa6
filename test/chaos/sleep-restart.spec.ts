/**
 * Restart: a run sleeping (`r.sleep`) in a worker child process survives a restart of every
 * process (the worker SIGKILLed while the run sleeps, the producer app closed). A new worker wakes
 * it: through its delayed BullMQ job, which is in Redis; or, when that job was lost too, through the
 * recovery sweeper once the wake-up time has passed (by the lease TTL, the sweep's grace). Each step
 * runs once. How late each woke (the worker's trace entry of the waking step against the later of
 * the recorded wake-up time and the new worker's boot) is printed and asserted against the bound
 * the README and DD-sleep-5 give: through the delayed job, at once (under {@link JOB_LATE_BOUND_MS});
 * through the sweeper, by at most the lease TTL (its grace) plus one sweep interval, plus
 * {@link SWEEP_MARGIN_MS} for a loaded 2-core CI machine.
 */
import type Redis from 'ioredis';
import type { RunView } from '../../lib/core/engine/run-view';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { createChaosApp, stopAllWorkers, waitFor, WorkerProcess, type ChaosApp } from './chaos.harness';
import { CHAOS_SLEEP_PROVIDERS, ChaosSleepReactor } from './sleep.fixtures';

const WORKER = 'test/chaos/sleep.worker.ts';
const LEASE_TTL_MS = 1500;
const SWEEPER_INTERVAL_MS = 1000;
/** Long enough that the kill and the restart happen while the run sleeps (a worker takes seconds to boot). */
const SLEEP_MS = 15_000;
/**
 * The delayed-job path: BullMQ promotes a due job and the waiting worker takes it within
 * milliseconds (37 ms measured); 2 s is the margin for a loaded 2-core CI machine (a turn of the
 * event loop held by the other process, a slow Redis round trip).
 */
const JOB_LATE_BOUND_MS = 2_000;
/**
 * The sweeper path's margin over its designed bound (lease TTL + one sweep interval, 2.5 s; 2,256 ms
 * measured): the sweep itself, the resume job it enqueues and the worker taking it, on a loaded
 * 2-core CI machine.
 */
const SWEEP_MARGIN_MS = 2_000;

describe('chaos: a sleeping run across a restart of every process (Redis, BullMQ, child processes)', () => {
  const prefix = uniquePrefix('chaos-sleep-restart');
  let redis: Redis;
  const producers: ChaosApp[] = [];

  async function newProducer(): Promise<ChaosApp> {
    const producer = await createChaosApp(prefix, { leaseTtlMs: LEASE_TTL_MS }, { providers: CHAOS_SLEEP_PROVIDERS });
    producers.push(producer);
    return producer;
  }

  async function untilView(
    producer: ChaosApp,
    runId: string,
    done: (view: RunView) => boolean,
    workers: WorkerProcess[],
    what: string,
    timeoutMs = 30_000,
  ): Promise<RunView> {
    let view: RunView | undefined;
    await waitFor(async () => (view = await producer.client.get(runId)) !== undefined && done(view), {
      timeoutMs,
      intervalMs: 25,
      what: () =>
        `run ${runId} ${what} (now ${view?.status}; output:\n` +
        workers.map((w) => `--- ${w.name}\n${w.output}`).join('\n') +
        ')',
    });
    return view!;
  }

  /** Start a run in worker A, wait until it sleeps and its delayed wake-up job is in Redis. */
  async function sleepingInWorker(): Promise<{
    producer: ChaosApp;
    workerA: WorkerProcess;
    runId: string;
    wakeAt: number;
  }> {
    const producer = await newProducer();
    const workerA = await WorkerProcess.start('A', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS) }, WORKER);
    const started = await producer.client.start(ChaosSleepReactor, { ms: SLEEP_MS });
    expect(started.status).toBe('dispatched');
    const view = await untilView(producer, started.runId, (v) => v.sleeping !== undefined, [workerA], 'sleeping');
    expect(view).toMatchObject({ status: 'running', completed: ['s1'], sleeping: { step: 'nap' } });
    const queue = producer.runtime.dispatcher.queue;
    await waitFor(
      async () => (await queue.getDelayed()).some((job) => (job.data as { runId?: string }).runId === started.runId),
      { timeoutMs: 10_000, what: `the delayed wake-up job of run ${started.runId}` },
    );
    return { producer, workerA, runId: started.runId, wakeAt: view.sleeping!.wakeAt };
  }

  async function killEverything(producer: ChaosApp, workers: WorkerProcess[]): Promise<void> {
    for (const worker of workers) {
      await worker.kill('SIGKILL');
      expect((await worker.exited).signal).toBe('SIGKILL');
    }
    await producer.app.close();
    producers.splice(producers.indexOf(producer), 1);
  }

  /**
   * When the worker that woke the run re-entered the sleep (its trace entry), minus the wake-up
   * time, and minus the later of the wake-up time and when the new worker was ready (a worker that
   * boots after the wake-up time cannot wake the run before it is up).
   */
  function lateBy(view: RunView, wakeAt: number, readyAt: number): { late: number; afterReady: number } {
    const woke = view.trace.find((t) => t.type === 'run' && t.step === 'nap' && t.detail === 'waking from sleep');
    expect(woke).toBeDefined();
    return { late: woke!.at - wakeAt, afterReady: woke!.at - Math.max(wakeAt, readyAt) };
  }

  /**
   * From a new producer: the run completes in `workerB` with each step run once and its sleep's
   * value the recorded wake-up time; how late it woke ({@link lateBy}, never early).
   */
  async function completedOnceInNewWorker(
    runId: string,
    wakeAt: number,
    readyAt: number,
    workerB: WorkerProcess,
  ): Promise<{ late: number; afterReady: number }> {
    const producer = await newProducer();
    const done = await untilView(producer, runId, (v) => v.status === 'completed', [workerB], 'completed');
    expect(done.results).toMatchObject({ s1: 's1', nap: { sleptUntil: wakeAt }, s2: 's2' });
    expect(await ran(producer, runId, 's1')).toBe(1);
    expect(await ran(producer, runId, 's2')).toBe(1);
    const timing = lateBy(done, wakeAt, readyAt);
    expect(timing.late).toBeGreaterThanOrEqual(0);
    return timing;
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

  it('worker SIGKILLed while the run sleeps, producer closed: a new worker wakes it through its delayed job, each step once', async () => {
    const first = await sleepingInWorker();
    const { runId, wakeAt } = first;
    expect(await redis.exists(first.producer.keys.ready('A'))).toBe(1);

    await killEverything(first.producer, [first.workerA]);
    expect(Date.now()).toBeLessThan(wakeAt); // restarted while it sleeps

    const workerB = await WorkerProcess.start('B', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS) }, WORKER);
    const readyAt = Date.now();
    const { late, afterReady } = await completedOnceInNewWorker(runId, wakeAt, readyAt, workerB);
    process.stdout.write(
      `[sleep-restart] woken by its delayed job ${late} ms after its wake-up time ` +
        `(${afterReady} ms after the later of it and the new worker's boot, ${readyAt - wakeAt} ms from the wake-up time)\n`,
    );
    expect(afterReady).toBeLessThan(JOB_LATE_BOUND_MS);
    expect(workerB.alive).toBe(true);
  }, 90_000);

  it('its wake-up job lost as well: the new worker sweeper wakes it once the time has passed, each step once', async () => {
    const first = await sleepingInWorker();
    const { runId, wakeAt } = first;
    // The job is lost with the processes (say, Redis restored from a snapshot taken before it was added).
    for (const job of await first.producer.runtime.dispatcher.queue.getDelayed()) {
      if ((job.data as { runId?: string }).runId === runId) await job.remove();
    }
    await killEverything(first.producer, [first.workerA]);
    expect(Date.now()).toBeLessThan(wakeAt);

    const workerB = await WorkerProcess.start(
      'B',
      prefix,
      { LEASE_TTL_MS: String(LEASE_TTL_MS), SWEEPER_INTERVAL_MS: String(SWEEPER_INTERVAL_MS) },
      WORKER,
    );
    const readyAt = Date.now();
    const { late, afterReady } = await completedOnceInNewWorker(runId, wakeAt, readyAt, workerB);
    process.stdout.write(
      `[sleep-restart] woken by the sweeper ${late} ms after its wake-up time, ${afterReady} ms after the later of it ` +
        `and the new worker's boot (${readyAt - wakeAt} ms from the wake-up time) ` +
        `(sweep interval ${SWEEPER_INTERVAL_MS} ms, grace = lease TTL ${LEASE_TTL_MS} ms)\n`,
    );
    expect(afterReady).toBeLessThanOrEqual(LEASE_TTL_MS + SWEEPER_INTERVAL_MS + SWEEP_MARGIN_MS);
    expect(workerB.alive).toBe(true);
  }, 90_000);
});
