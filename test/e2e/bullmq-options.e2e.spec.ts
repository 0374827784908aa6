import { BullModule } from '@nestjs/bullmq';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { RunProcessor } from '../../lib/queue/run.processor';
import { bullMqPrefix } from '../../lib/queue/queue.constants';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { bullMqConnection } from '../setup/redis';
import { BackgroundAllReactor, createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 10_000 };

describe('BullMQ job and worker options (bullmq)', () => {
  const files = useRedisPrefixes();

  it('by default completed jobs are removed at once; removeOnComplete: { count } keeps them for Bull Board', async () => {
    const plain = await createRedisApp(files.prefix('keep-default'));
    try {
      const started = await plain.client.start(BackgroundAllReactor, { word: 'a' });
      expect((await plain.client.wait(started.runId, WAIT)).status).toBe('completed');
      const queue = plain.app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
      expect(await queue.getCompletedCount()).toBe(0);
    } finally {
      await plain.app.close();
    }

    const { app, client } = await createRedisApp(files.prefix('keep-2'), {
      bullmq: { defaultJobOptions: { removeOnComplete: { count: 2 }, removeOnFail: 10 } },
    });
    try {
      const runs = await Promise.all(['x', 'y', 'z'].map((word) => client.start(BackgroundAllReactor, { word })));
      for (const run of runs) expect((await client.wait(run.runId, WAIT)).status).toBe('completed');
      const queue = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
      // BullMQ trims to the newest two as each job completes.
      await pollUntil(async () => (await queue.getCompletedCount()) === 2, 5_000);
      const kept = await queue.getCompleted();
      expect(kept).toHaveLength(2);
      for (const job of kept) {
        expect(runs.map((run) => run.runId)).toContain(job.data.runId);
        expect(job.opts).toMatchObject({ removeOnComplete: { count: 2 }, removeOnFail: 10, attempts: 4 });
      }
    } finally {
      await app.close();
    }
  });

  it('applies the worker limiter: BullMQ rate-limits the queue (over every worker of it, in all processes)', async () => {
    const { app, client } = await createRedisApp(files.prefix('limiter'), {
      bullmq: { worker: { limiter: { max: 1, duration: 60_000 } } },
    });
    try {
      const processor = app.get(RunProcessor);
      expect(processor.worker.opts.limiter).toEqual({ max: 1, duration: 60_000 });
      const queue = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;

      const first = await client.start(BackgroundAllReactor, { word: 'one' });
      expect((await client.wait(first.runId, WAIT)).status).toBe('completed');
      // The one job of this minute was taken: the queue is rate limited now...
      await pollUntil(async () => (await queue.getRateLimitTtl()) > 0, 5_000);
      const second = await client.start(BackgroundAllReactor, { word: 'two' });
      // ...so the next job waits for the window (a minute) instead of being processed.
      await pollUntil(async () => (await queue.getJobCounts('waiting', 'prioritized')).waiting === 1, 5_000);
      expect((await client.get(second.runId))?.status).not.toBe('completed');
      expect(await queue.getRateLimitTtl()).toBeGreaterThan(50_000);
    } finally {
      await app.close();
    }
  });

  it("configKey builds on the app's named BullModule configuration; the module's own options and job settings win", async () => {
    const p = files.prefix('config-key');
    const shared = bullMqConnection();
    try {
      const { app, client } = await createRedisApp(
        p,
        { bullmq: { configKey: 'shared-bull', defaultJobOptions: { removeOnFail: 3 } } },
        {
          imports: [
            BullModule.forRoot('shared-bull', {
              connection: shared.connection,
              prefix: 'ignored-prefix',
              // attempts and delay are the module's own: left out of its jobs.
              defaultJobOptions: { removeOnComplete: 5, removeOnFail: 50, attempts: 9, delay: 60_000 },
            }),
          ],
        },
      );
      try {
        const queue = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
        expect(queue.opts.prefix).toBe(bullMqPrefix(p));
        expect(queue.opts.defaultJobOptions).toEqual({ removeOnComplete: 5, removeOnFail: 3 });
        const started = await client.start(BackgroundAllReactor, { word: 'shared' });
        expect((await client.wait(started.runId, WAIT)).status).toBe('completed');
        // The run is stored completed before BullMQ moves its job to the completed set.
        await pollUntil(async () => (await queue.getCompletedCount()) === 1, 5_000);
        const [job] = await queue.getCompleted();
        expect(job?.opts).toMatchObject({ removeOnComplete: 5, removeOnFail: 3, attempts: 4 });
        expect(job?.opts.delay ?? 0).toBe(0);
      } finally {
        await app.close();
      }
    } finally {
      await shared.close();
    }
  });

  it('configKey works with BullModule.forRootAsync too', async () => {
    const shared = bullMqConnection();
    try {
      const { app } = await createRedisApp(
        files.prefix('config-key-async'),
        { bullmq: { configKey: 'shared-async' } },
        {
          imports: [
            BullModule.forRootAsync('shared-async', {
              useFactory: async () => ({ connection: shared.connection, defaultJobOptions: { removeOnComplete: 11 } }),
            }),
          ],
        },
      );
      try {
        const queue = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
        expect(queue.opts.defaultJobOptions).toEqual({ removeOnComplete: 11, removeOnFail: { count: 1000 } });
      } finally {
        await app.close();
      }
    } finally {
      await shared.close();
    }
  });

  it('a configKey the app did not register fails the boot, naming the option and the fix', async () => {
    await expect(createRedisApp(files.prefix('config-key-missing'), { bullmq: { configKey: 'nope' } })).rejects.toThrow(
      "ReactorModule option 'bullmq.configKey' is 'nope', but no BullMQ configuration is registered under that key. " +
        "Register it with BullModule.forRoot('nope', { ... }) (or forRootAsync('nope', { ... })) in your application " +
        "module, or drop bullmq.configKey to use the module's own configuration only.",
    );
  });

  it('refuses the job and worker options the module sets itself, naming each and what to use instead', () => {
    const refused = (bullmq: unknown) => () =>
      ReactorModule.forRoot({ redis: { url: 'redis://localhost:6379' }, bullmq: bullmq as never });
    expect(refused({ defaultJobOptions: { attempts: 5 } })).toThrow(
      "ReactorModule option 'bullmq.defaultJobOptions.attempts' cannot be set: use jobRetryCount (BullMQ retries of " +
        'a job whose handling hit an infrastructure error). The job options you may set are removeOnComplete, ' +
        'removeOnFail, keepLogs, stackTraceLimit.',
    );
    expect(refused({ defaultJobOptions: { jobId: 'x' } })).toThrow(
      "'bullmq.defaultJobOptions.jobId' cannot be set: job ids de-duplicate recovery jobs (the sweeper) and are chosen by the module.",
    );
    expect(refused({ defaultJobOptions: { delay: 5 } })).toThrow(
      /'bullmq.defaultJobOptions.delay' cannot be set: delays carry snoozes/,
    );
    expect(refused({ defaultJobOptions: { priority: 1 } })).toThrow(/use @Reactor\(name, \{ priority \}\)/);
    expect(refused({ worker: { concurrency: 3 } })).toThrow(
      "ReactorModule option 'bullmq.worker.concurrency' cannot be set: use workerConcurrency (the default queue) or " +
        '@Reactor(name, { queue, concurrency }). The worker options you may set are limiter.',
    );
    expect(refused({ worker: { limiter: { max: 0, duration: 1000 } } })).toThrow(
      "ReactorModule option 'bullmq.worker.limiter.max' must be an integer >= 1 (got 0).",
    );
    expect(refused({ defaultJobOptions: { removeOnComplete: { keep: 1 } } })).toThrow(
      "ReactorModule option 'bullmq.defaultJobOptions.removeOnComplete' must be true, false, a number of jobs to keep, " +
        'or { count?, age? } (age in seconds) (got {"keep":1}).',
    );
    expect(refused({ queue: {} })).toThrow(
      "ReactorModule option 'bullmq.queue' is unknown. Known options: bullmq.configKey, bullmq.defaultJobOptions, bullmq.worker.",
    );
    expect(refused({ configKey: '' })).toThrow(/'bullmq.configKey' must be the non-empty config key/);
    expect(() =>
      ReactorModule.forRoot({ redis: { url: 'redis://localhost:6379', requireNoEviction: 'yes' as never } }),
    ).toThrow("ReactorModule option 'redis.requireNoEviction' must be true or false (got 'yes').");
    expect(() => ReactorModule.forRoot({ redis: { requireNoEviction: true } as never })).toThrow(
      "ReactorModule option 'redis' must be exactly one of { url } or { connection }",
    );
  });
});
