/**
 * ReactorMetricsModule on the Redis runtime through Nest (issue 25): runs executed by the BullMQ
 * workers (a retried step, a failing step that compensates and undoes, completed runs) counted
 * exactly; the queue gauges per queue (waiting, active, delayed, failed, the oldest waiting job's
 * age) read from BullMQ at scrape time; the sweeper's recoveries; and `GET /metrics` over HTTP.
 */
import type { INestApplication, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Worker, type Queue } from 'bullmq';
import { Registry } from 'prom-client';
import request from 'supertest';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { ReactorMetricsModule, type ReactorMetricsOptions } from '../../lib/metrics';
import { ReactorQueues } from '../../lib/queue/reactor-queues';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { pollUntil, useRedisPrefixes } from '../e2e/e2e.fixtures';
import { bullMqConnection, reactorRedisOption } from '../setup/redis';
import {
  METRICS_REACTORS,
  OkReactor,
  RetryReactor,
  RollbackReactor,
  expectRunMetrics,
  sampleOf,
  seriesOf,
} from './metrics.fixtures';

const WAIT = { timeoutMs: 15_000 };
const ROUTED_QUEUE = 'metrics-routed';

/** One step, on a queue of its own. */
@Reactor('metrics-routed', { queue: ROUTED_QUEUE })
class RoutedReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('only', () => success('done'), {});
  }
}

const PROVIDERS: Provider[] = [...METRICS_REACTORS, RoutedReactor];

interface MetricsApp {
  app: INestApplication;
  client: ReactorClient;
  registry: Registry;
  queues: ReactorQueues;
  close(): Promise<void>;
}

async function metricsApp(
  prefix: string,
  options: Omit<ReactorModuleOptions, 'prefix' | 'redis'> = {},
  metrics: ReactorMetricsOptions = {},
): Promise<MetricsApp> {
  const connection = reactorRedisOption();
  const registry = new Registry();
  const module = await Test.createTestingModule({
    imports: [
      ReactorModule.forRoot({ redis: connection.redis, prefix, ...options }),
      ReactorMetricsModule.forRoot({ registry, ...metrics }),
    ],
    providers: PROVIDERS,
  }).compile();
  const app = module.createNestApplication({ logger: false });
  await app.init();
  return {
    app,
    client: app.get(ReactorClient),
    registry,
    queues: app.get(ReactorQueues),
    close: async () => {
      await app.close();
      await connection.close();
    },
  };
}

/** The queue gauges of one queue: its jobs by state and its oldest waiting job's age. */
async function queueGauges(registry: Registry, queue: string) {
  const jobs: Record<string, number | undefined> = {};
  for (const state of ['waiting', 'active', 'delayed', 'failed']) {
    jobs[state] = await sampleOf(registry, 'reactor_queue_jobs', { queue, state });
  }
  return { jobs, age: await sampleOf(registry, 'reactor_queue_oldest_waiting_age_seconds', { queue }) };
}

const IDLE = { waiting: 0, active: 0, delayed: 0, failed: 0 };

describe('ReactorMetricsModule on the Redis runtime', () => {
  const { prefix } = useRedisPrefixes();

  describe('with workers, and the controller at /metrics', () => {
    let m: MetricsApp;

    beforeAll(async () => {
      m = await metricsApp(prefix('metrics25'), { sweeper: { enabled: false } }, { controller: true });
    });
    afterAll(async () => {
      await m?.close();
    });

    it('counts the runs the workers executed: started, finished by status, retries, compensations, undos, step attempts', async () => {
      const { client, registry } = m;
      // In the caller, then three in the workers (the flaky step's retries are delayed jobs).
      expect((await client.run(OkReactor, {})).status).toBe('completed');
      const started = [
        await client.start(OkReactor, {}),
        await client.start(RetryReactor, {}),
        await client.start(RollbackReactor, {}),
        await client.start(RoutedReactor, {}),
      ];
      const outcomes = await Promise.all(started.map(({ runId }) => client.wait(runId, WAIT)));
      expect(outcomes.map((o) => o.status)).toEqual(['completed', 'completed', 'failed', 'completed']);

      await expectRunMetrics(registry, {
        started: { 'reactor=metrics-routed': 1 },
        finished: { 'reactor=metrics-routed,status=completed': 1 },
        steps: { 'outcome=success,reactor=metrics-routed,step=only': 1 },
      });

      // Every queue of the module is reported, and drained: the last jobs' workers finish soon after the runs.
      await pollUntil(async () => (await queueGauges(registry, 'nest-reactor')).jobs.active === 0, 5_000);
      await pollUntil(async () => (await queueGauges(registry, ROUTED_QUEUE)).jobs.active === 0, 5_000);
      expect(await queueGauges(registry, 'nest-reactor')).toEqual({ jobs: IDLE, age: 0 });
      expect(await queueGauges(registry, ROUTED_QUEUE)).toEqual({ jobs: IDLE, age: 0 });
      expect(Object.keys(await seriesOf(registry, 'reactor_queue_oldest_waiting_age_seconds')).sort()).toEqual([
        `queue=${ROUTED_QUEUE}`,
        'queue=nest-reactor',
      ]);
    });

    it('serves the registry at GET /metrics in the Prometheus text format', async () => {
      const response = await request(m.app.getHttpServer()).get('/metrics').expect(200);
      // Registry.PROMETHEUS_CONTENT_TYPE (Express puts the charset first).
      expect(response.headers['content-type']?.split('; ').sort()).toEqual(
        Registry.PROMETHEUS_CONTENT_TYPE.split('; ').sort(),
      );
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.text).toContain('# TYPE reactor_runs_started_total counter');
      expect(response.text).toContain('reactor_runs_started_total{reactor="metrics-ok"} 2');
      expect(response.text).toContain('reactor_runs_finished_total{reactor="metrics-rollback",status="failed"} 1');
      expect(response.text).toContain('reactor_step_retries_total{reactor="metrics-retry",step="flaky"} 2');
      expect(response.text).toContain(
        'reactor_step_duration_seconds_count{reactor="metrics-retry",step="flaky",outcome="retry"} 2',
      );
      expect(response.text).toContain('reactor_queue_jobs{queue="nest-reactor",state="waiting"} 0');
      // No run id, key or input in any label.
      const labels = [...response.text.matchAll(/\{([^}]*)\}/g)].flatMap((match) =>
        match[1].split(',').map((pair) => pair.split('=')[0]),
      );
      expect([...new Set(labels)].sort()).toEqual(
        ['kind', 'le', 'ok', 'outcome', 'queue', 'reactor', 'state', 'status', 'step'].filter((l) =>
          labels.includes(l),
        ),
      );
      expect(labels).not.toContain('runId');
    });
  });

  describe('without workers (jobs stay in the queues)', () => {
    let m: MetricsApp;

    beforeAll(async () => {
      m = await metricsApp(prefix('metrics25-producer'), {
        workers: false,
        sweeper: { enabled: false },
        leaseTtlMs: 1_000,
      });
    });
    afterAll(async () => {
      await m?.close();
    });

    /** Make one job of `queue` fail, with a worker of its own that throws. */
    async function failOneJob(queue: Queue): Promise<void> {
      const { connection, close } = bullMqConnection();
      await queue.add('not-a-reactor-job', {}, { attempts: 1, removeOnFail: false });
      const worker = new Worker(
        queue.name,
        async () => {
          throw new Error('rejected');
        },
        { connection, prefix: queue.opts.prefix },
      );
      try {
        await pollUntil(async () => (await queue.getJobCounts('failed')).failed === 1, 5_000);
      } finally {
        await worker.close();
        await close();
      }
    }

    it('reports each queue: waiting, active, delayed and failed jobs and how long the oldest has waited', async () => {
      const { client, registry, queues } = m;
      expect(await queueGauges(registry, 'nest-reactor')).toEqual({ jobs: IDLE, age: 0 });
      const main = queues.get()!;
      await failOneJob(main);

      const before = Date.now();
      await client.start(OkReactor, {});
      await client.start(OkReactor, {});
      await client.start(RoutedReactor, {});
      await main.add('later', {}, { delay: 60_000 });
      await new Promise((resolve) => setTimeout(resolve, 300));

      const scraped = await queueGauges(registry, 'nest-reactor');
      const routed = await queueGauges(registry, ROUTED_QUEUE);
      const elapsed = (Date.now() - before) / 1000;
      expect(scraped.jobs).toEqual({ waiting: 2, active: 0, delayed: 1, failed: 1 });
      expect(scraped.age).toBeGreaterThanOrEqual(0.25);
      expect(scraped.age).toBeLessThanOrEqual(elapsed);
      expect(routed.jobs).toEqual({ waiting: 1, active: 0, delayed: 0, failed: 0 });
      expect(routed.age).toBeGreaterThan(0);
      expect(routed.age).toBeLessThanOrEqual(elapsed);
      // Nothing ran here.
      expect(await seriesOf(registry, 'reactor_runs_started_total')).toEqual({});
    });

    it("counts the runs the sweeper recovered, once per sweep, and the last sweep's time", async () => {
      const { client, registry } = m;
      expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({});
      // The three runs started above have not been updated for a lease TTL (1 s): stalled.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const first = await client.sweepOnce();
      expect(first.reactors).toBe(3);
      const second = await client.sweepOnce();
      expect(second.reactors).toBe(0); // their recovery jobs are pending: none added
      expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({ 'kind=runs': 3, 'kind=maps': 0 });
      const at = (await sampleOf(registry, 'reactor_sweeper_last_sweep_timestamp_seconds'))!;
      expect(Math.abs(at * 1000 - Date.now())).toBeLessThan(5_000);
      // Scraped again with no new sweep: not counted twice.
      expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({ 'kind=runs': 3, 'kind=maps': 0 });
    });
  });
});
