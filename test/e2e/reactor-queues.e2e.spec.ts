/**
 * Per-reactor queues (`@Reactor(name, { queue, concurrency, priority })`) end to end on Redis and
 * BullMQ: a routed reactor's jobs (the hand-off, map elements, the collector's resume, its async
 * units) go to its own queue, which has its own worker; a slow reactor saturating its queue does
 * not starve the default queue; priorities order a queue; shutdown closes the extra workers and
 * queues; the queues are reachable through `ReactorQueues` (Bull Board, metrics).
 */
import type { Job, Worker } from 'bullmq';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { REACTOR_QUEUE_NAME } from '../../lib/queue/queue.constants';
import { ReactorQueues } from '../../lib/queue/reactor-queues';
import { RunProcessor } from '../../lib/queue/run.processor';
import { BackgroundAllReactor, createRedisApp, Gate, GateStep, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

/** Background run whose one step waits at the gate, on queue `slow` with one job at a time. */
@Reactor('q-slow', { queue: 'slow', concurrency: 1, background: { all: true } })
class SlowReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('hold', GateStep, {});
  }
}

/** Background run on queue `routed`, prioritized. */
@Reactor('q-routed', { queue: 'routed', priority: 3, background: { all: true } })
class RoutedReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step('double', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) });
  }
}

/** An async unit's own reactor, on queue `other`. */
@Reactor('q-other', { queue: 'other' })
class OtherReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step('inc', ({ n }: { n: number }) => success(n + 1), { n: r.input('n', { type: 'number' }) });
  }
}

/** A fan-out map, an inline async unit and an async reactor, on queue `maps`. */
@Reactor('q-mapper', { queue: 'maps', background: { all: true } })
class MapperReactor implements ReactorBlueprint<{ items: number[] }> {
  build(r: ReactorBuilder<{ items: number[] }>) {
    const squares = r.map('squares', {
      source: r.input('items', { type: 'array' }),
      element: (e: ReactorBuilder<{ n: number }>) =>
        e.step('sq', ({ n }: { n: number }) => success(n * n), { n: e.input('n', { type: 'number' }) }),
      inputs: (n) => ({ n }),
      fanOut: { batchSize: 2, elementsPerJob: 1 },
      collect: async (results) => (await results.values()).reduce((a: number, b) => a + (b as number), 0),
    });
    const unit = r.asyncStep('unit', ({ s }: { s: number }) => success(s * 10), { s: squares });
    const other = r.asyncReactor('other', OtherReactor, { n: squares });
    return r.step('sum', ({ a, b }: { a: number; b: number }) => success(a + b), { a: unit, b: other });
  }
}

/** The order the steps of `q-low` and `q-high` ran in (by run id), in this process. */
const executed: string[] = [];

/** Prioritized runs on one queue (`prio`), one job at a time. */
@Reactor('q-low', { queue: 'prio', concurrency: 1, priority: 50, background: { all: true } })
class LowReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('noop', (_args: object, ctx: StepContext) => success(executed.push(ctx.runId)), {});
  }
}

@Reactor('q-high', { queue: 'prio', priority: 1, background: { all: true } })
class HighReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('noop', (_args: object, ctx: StepContext) => success(executed.push(ctx.runId)), {});
  }
}

const PROVIDERS = [SlowReactor, RoutedReactor, OtherReactor, MapperReactor, LowReactor, HighReactor];

/** Jobs each worker completed, as `<queue> <kind> <reactor>`, from now on. */
function recordCompleted(app: TestingModule): string[] {
  const processor = app.get(RunProcessor);
  const seen: string[] = [];
  const workers: Worker[] = [processor.worker, ...processor.queueWorkers];
  for (const worker of workers) {
    worker.on('completed', (job: Job<ReactorJob>) => seen.push(`${worker.name} ${job.name} ${job.data.reactorName}`));
  }
  return seen;
}

describe('per-reactor queues (e2e)', () => {
  const { prefix } = useRedisPrefixes();

  it("puts a routed reactor's jobs on its own queue with its priority; others keep the default queue", async () => {
    const p = prefix('e2e-rq-route');
    // A producer only (no workers): the jobs stay in their queues.
    const { app, client } = await createRedisApp(
      p,
      { sweeper: { enabled: false }, workers: false },
      { providers: PROVIDERS },
    );
    try {
      const queues = app.get(ReactorQueues);
      expect(queues.get()?.name).toBe(REACTOR_QUEUE_NAME);
      expect(
        queues
          .all()
          .map((q) => q.name)
          .sort(),
      ).toEqual(['maps', REACTOR_QUEUE_NAME, 'other', 'prio', 'routed', 'slow']);
      const routed = queues.get('routed')!;
      expect(routed.opts.prefix).toBe(`${p}:{${p}:queue:routed}`); // its own hash tag: its own cluster slot

      const a = await client.start(RoutedReactor, { n: 2 });
      const b = await client.start(BackgroundAllReactor, { word: 'abc' });

      const [job] = await routed.getJobs(['prioritized']);
      expect(job?.data).toEqual({ kind: 'resume', runId: a.runId, reactorName: 'q-routed' });
      expect(job?.opts.priority).toBe(3);
      const defaults = await queues.get()!.getJobs(['waiting', 'prioritized']);
      expect(defaults.map((j) => j.data.runId)).toEqual([b.runId]);
      expect(defaults[0].opts.priority ?? 0).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('a slow reactor saturating its queue does not starve the default queue', async () => {
    // One job at a time on each queue: were the slow runs on the default queue, the fast run
    // would wait behind them until the gate opens.
    const { app, client } = await createRedisApp(
      prefix('e2e-rq-starve'),
      { sweeper: { enabled: false }, workerConcurrency: 1 },
      { providers: PROVIDERS },
    );
    const gate = app.get(Gate);
    try {
      const slowQueue = app.get(ReactorQueues).get('slow')!;
      const first = await client.start(SlowReactor, {});
      const second = await client.start(SlowReactor, {});
      await gate.entered();
      expect(await slowQueue.getJobCounts('active', 'waiting')).toMatchObject({ active: 1, waiting: 1 });

      const fast = await client.start(BackgroundAllReactor, { word: 'abc' });
      const done = await client.wait(fast.runId, WAIT);
      expect(done.status).toBe('completed');
      // Meanwhile the slow queue is still held: the gate never opened.
      expect(await slowQueue.getJobCounts('active', 'waiting')).toMatchObject({ active: 1, waiting: 1 });

      gate.open();
      expect((await client.wait(first.runId, WAIT)).status).toBe('completed');
      expect((await client.wait(second.runId, WAIT)).status).toBe('completed');
    } finally {
      gate.open();
      await app.close();
    }
  });

  it("runs map elements, the collector's resume and the async units of a routed run on their reactors' queues", async () => {
    const { app, client } = await createRedisApp(
      prefix('e2e-rq-jobs'),
      { sweeper: { enabled: false } },
      { providers: PROVIDERS },
    );
    try {
      const seen = recordCompleted(app);
      const started = await client.start(MapperReactor, { items: [1, 2, 3] });
      const done = await client.wait(started.runId, WAIT);
      expect(done).toMatchObject({ status: 'completed', value: 14 * 10 + 15 });

      // Every job of the run went through `maps`; the unit running `q-other` through `other`.
      expect(seen.filter((s) => !s.startsWith('maps ') && !s.startsWith('other '))).toEqual([]);
      expect(seen).toContain('maps map-element q-mapper');
      expect(seen).toContain('maps resume q-mapper');
      expect(seen).toContain('maps resume q-mapper::unit');
      expect(seen).toContain('other resume q-other');
    } finally {
      await app.close();
    }
  });

  it('takes the jobs of a queue in priority order (1 first)', async () => {
    const p = prefix('e2e-rq-prio');
    // Enqueue with a producer, so that every job waits before a worker takes the first one.
    const producer = await createRedisApp(p, { sweeper: { enabled: false }, workers: false }, { providers: PROVIDERS });
    const runs: Record<string, string> = {};
    try {
      runs[(await producer.client.start(LowReactor, {})).runId] = 'low-1';
      runs[(await producer.client.start(LowReactor, {})).runId] = 'low-2';
      runs[(await producer.client.start(HighReactor, {})).runId] = 'high';
    } finally {
      await producer.app.close();
    }

    const { app, client } = await createRedisApp(p, { sweeper: { enabled: false } }, { providers: PROVIDERS });
    try {
      for (const runId of Object.keys(runs)) expect((await client.wait(runId, WAIT)).status).toBe('completed');
      const order = executed.map((runId) => runs[runId]);
      // The high-priority run first, though it was enqueued last; then the two low ones.
      expect(order[0]).toBe('high');
      expect([...order].sort()).toEqual(['high', 'low-1', 'low-2']);
    } finally {
      await app.close();
    }
  });

  it('closes the workers and queues of the named queues on shutdown', async () => {
    const { app } = await createRedisApp(
      prefix('e2e-rq-close'),
      { sweeper: { enabled: false } },
      { providers: PROVIDERS },
    );
    const processor = app.get(RunProcessor);
    const workers = processor.queueWorkers;
    const named = app.get(ReactorQueues).all().slice(1);
    expect(workers.map((w) => w.name).sort()).toEqual(['maps', 'other', 'prio', 'routed', 'slow']);
    expect(workers.every((w) => w.isRunning())).toBe(true);
    expect(workers.find((w) => w.name === 'slow')?.concurrency).toBe(1);
    expect(workers.find((w) => w.name === 'routed')?.concurrency).toBe(10);

    await app.close();

    expect(processor.state).toBe('stopped');
    expect(workers.some((w) => w.isRunning())).toBe(false);
    // A Cluster client (the cluster run) is 'disconnecting' until each of its node connections has ended.
    const clients = [
      ...(await Promise.all(workers.map((w) => w.client))),
      ...(await Promise.all(named.map((q) => q.client))),
    ];
    await pollUntil(() => clients.every((client) => client.status === 'end'), 5_000);
  });
});
