import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import type { Queue } from 'bullmq';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorHealthIndicator } from '../../lib/health';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { SweeperScheduler } from '../../lib/sweepers/sweeper.scheduler';
import { FakeClock } from '../../lib/testing/fake-clock';
import { BackgroundAllReactor, pollUntil, useRedisPrefixes } from '../e2e/e2e.fixtures';
import { redisUrl } from '../setup/redis';
import { createHealthApp } from './health.fixtures';

describe('ReactorHealthIndicator (nest-reactor/health) with terminus', () => {
  const files = useRedisPrefixes();
  const prefix = files.prefix;

  it("is up when Redis answers, the worker runs, the sweeper is scheduled and nothing waits; the app's own queues are not counted", async () => {
    const appPrefix = prefix('health-app-bull');

    // The app's own queue and processor, under its own prefix: its worker never runs (autorun:
    // false) and a job waits in its queue, and neither may count against nest-reactor's health.
    @Processor('app-emails', { autorun: false })
    class EmailProcessor extends WorkerHost {
      async process(): Promise<void> {}
    }
    @Injectable()
    class Mailer {
      constructor(@InjectQueue('app-emails') readonly queue: Queue) {}
    }

    const { app, client, check } = await createHealthApp(
      prefix('health-up'),
      {},
      {
        imports: [
          ScheduleModule.forRoot(),
          BullModule.forRoot({ connection: { url: redisUrl() }, prefix: appPrefix }),
          BullModule.registerQueue({ name: 'app-emails' }),
        ],
        providers: [EmailProcessor, Mailer],
      },
    );
    try {
      await app.get(Mailer).queue.add('send', { to: 'ada@example.com' });
      const started = await client.start(BackgroundAllReactor, { word: 'abc' });
      expect((await client.wait(started.runId, { timeoutMs: 10_000 })).status).toBe('completed');
      // The run is stored completed a moment before BullMQ takes its job out of the active list.
      const queue = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
      await pollUntil(async () => (await queue.getJobCounts('active')).active === 0, 5_000);

      const result = await check({ maxBacklog: 0 });

      expect(result.status).toBe('ok');
      expect(result.reactor).toEqual({
        status: 'up',
        runtime: 'redis',
        redis: { reachable: true, latencyMs: expect.any(Number), evictionPolicy: 'noeviction' },
        workers: { enabled: true, running: true, list: [{ queue: 'nest-reactor', state: 'running', running: true }] },
        sweeper: { enabled: true, scheduled: true, lastSweepAt: null, ageMs: expect.any(Number), maxAgeMs: 90_000 },
        backlog: { waiting: 0, delayed: 0, active: 0, maxBacklog: 0 },
      });
    } finally {
      await app.close();
    }
  });

  it('is down, saying so, when Redis does not answer a PING', async () => {
    const { app, check } = await createHealthApp(prefix('health-redis-down'), { sweeper: { enabled: false } });
    try {
      expect((await check()).status).toBe('ok');
      // The runtime's storage connection goes away (the queue and the worker keep their own).
      app.get<RedisReactorRuntime>(REACTOR_RUNTIME).redis.disconnect();

      const result = await check({ timeoutMs: 500 });

      expect(result.status).toBe('error');
      expect(result.result.error).toEqual({ reactor: result.reactor });
      expect(result.result.info).toEqual({});
      const reactor = result.reactor;
      expect(reactor).toMatchObject({ status: 'down', redis: { reachable: false }, workers: { running: true } });
      expect(reactor.problems).toEqual([expect.stringContaining('Redis did not answer a PING within 500 ms')]);
      expect(reactor.message).toBe(reactor.problems[0]);
    } finally {
      await app.close();
    }
  });

  it('is down when the worker is stopped, naming its queue and state', async () => {
    const { app, check } = await createHealthApp(prefix('health-workers'), { sweeper: { enabled: false } });
    try {
      await app.get<RedisReactorRuntime>(REACTOR_RUNTIME).stopWorkers();

      const result = await check();

      expect(result.status).toBe('error');
      const reactor = result.reactor;
      expect(reactor.workers).toEqual({
        enabled: true,
        running: false,
        list: [{ queue: 'nest-reactor', state: 'stopped', running: false }],
      });
      expect(reactor.problems).toEqual([
        expect.stringContaining('The nest-reactor BullMQ worker is not running (nest-reactor: stopped)'),
      ]);
    } finally {
      await app.close();
    }
  });

  it('a producer-only process (workers: false) is up; with maxBacklog it is down once more jobs wait than that', async () => {
    const { app, client, check } = await createHealthApp(prefix('health-backlog'), {
      workers: false,
      sweeper: { enabled: false },
    });
    try {
      for (const word of ['abc', 'def', 'ghi']) await client.start(BackgroundAllReactor, { word });

      const unchecked = await check();
      expect(unchecked.status).toBe('ok');
      expect(unchecked.reactor).toMatchObject({
        workers: { enabled: false, running: false, list: [] },
        backlog: { waiting: 3, delayed: 0, active: 0, maxBacklog: null },
      });
      expect((await check({ maxBacklog: 3 })).status).toBe('ok');

      const result = await check({ maxBacklog: 2 });
      expect(result.status).toBe('error');
      expect(result.reactor.backlog).toEqual({ waiting: 3, delayed: 0, active: 0, maxBacklog: 2 });
      expect(result.reactor.problems).toEqual([
        expect.stringContaining('3 jobs are waiting for a worker, more than maxBacklog (2)'),
      ]);
    } finally {
      await app.close();
    }
  });

  it('is down when the sweeper is enabled but not scheduled (no ScheduleModule)', async () => {
    const { app, check } = await createHealthApp(prefix('health-unscheduled'));
    try {
      const result = await check();

      expect(result.status).toBe('error');
      expect(result.reactor.sweeper).toMatchObject({ enabled: true, scheduled: false, ageMs: null });
      expect(result.reactor.problems).toEqual([
        expect.stringContaining('The recovery sweeper is enabled but not scheduled'),
      ]);
    } finally {
      await app.close();
    }
  });

  it('a scheduled sweeper is up while it ticks, and down once no tick settled for maxSweepAgeMs (3 intervals by default)', async () => {
    const clock = new FakeClock(Date.now());
    const { app, check } = await createHealthApp(
      prefix('health-sweep-scheduled'),
      { clock, sweeper: { intervalMs: 1_000 } },
      { imports: [ScheduleModule.forRoot()] },
    );
    try {
      // The cron fires every second; wait for its first sweep.
      await pollUntil(async () => (await check()).reactor.sweeper.lastSweepAt !== null, 5_000);
      const up = await check();
      expect(up.status).toBe('ok');
      expect(up.reactor.sweeper).toEqual({
        enabled: true,
        scheduled: true,
        lastSweepAt: new Date(clock.now()).toISOString(),
        ageMs: 0,
        maxAgeMs: 3_000,
      });

      // The cron stops ticking (as when every sweep throws); time goes on.
      await app.get(SweeperScheduler).stop();
      clock.advance(3_000);
      expect((await check()).status).toBe('ok');
      clock.advance(1);

      const result = await check();
      expect(result.status).toBe('error');
      expect(result.reactor.sweeper).toMatchObject({ ageMs: 3_001, maxAgeMs: 3_000 });
      expect(result.reactor.problems).toEqual([
        expect.stringContaining('The last recovery sweep finished 3001 ms ago, more than maxSweepAgeMs (3000 ms)'),
      ]);
      expect((await check({ maxSweepAgeMs: 10_000 })).status).toBe('ok');
    } finally {
      await app.close();
    }
  });

  it('with an external cron (sweeper disabled) the sweep age is checked only when maxSweepAgeMs is given', async () => {
    const clock = new FakeClock(Date.now());
    const { app, client, check } = await createHealthApp(prefix('health-sweep-external'), {
      clock,
      sweeper: { enabled: false },
    });
    try {
      clock.advance(5_000);
      const unchecked = await check();
      expect(unchecked.status).toBe('ok');
      expect(unchecked.reactor.sweeper).toEqual({
        enabled: false,
        scheduled: false,
        lastSweepAt: null,
        ageMs: 5_000,
        maxAgeMs: null,
      });

      const never = await check({ maxSweepAgeMs: 1_000 });
      expect(never.status).toBe('error');
      expect(never.reactor.problems).toEqual([
        expect.stringContaining('No recovery sweep has finished since the sweeper started, 5000 ms ago'),
      ]);

      await client.sweepOnce();
      const swept = await check({ maxSweepAgeMs: 1_000 });
      expect(swept.status).toBe('ok');
      expect(swept.reactor.sweeper).toMatchObject({
        lastSweepAt: new Date(clock.now()).toISOString(),
        ageMs: 0,
      });

      clock.advance(1_001);
      expect((await check({ maxSweepAgeMs: 1_000 })).status).toBe('error');
    } finally {
      await app.close();
    }
  });

  it('with the embedded runtime it is up and says that runs live in memory', async () => {
    const { app, check } = await createHealthApp('', { embedded: true });
    try {
      const result = await check({ maxBacklog: 0, maxSweepAgeMs: 0 });
      expect(result.status).toBe('ok');
      expect(result.reactor).toEqual({
        status: 'up',
        runtime: 'embedded',
        message: expect.stringContaining("Embedded runtime: runs, leases and jobs live in this process's memory"),
      });
    } finally {
      await app.close();
    }
  });

  it('refuses an invalid threshold with a ConfigurationError naming it', async () => {
    const { app } = await createHealthApp('', { embedded: true });
    try {
      const indicator = app.get(ReactorHealthIndicator);
      await expect(indicator.isHealthy('reactor', { maxBacklog: -1 })).rejects.toMatchObject({
        code: 'CONFIGURATION_INVALID',
        option: 'maxBacklog',
        message: expect.stringContaining('option maxBacklog must be a number of 0 or more (got -1)'),
      });
      await expect(indicator.isHealthy('reactor', { timeoutMs: Number.NaN })).rejects.toMatchObject({
        option: 'timeoutMs',
      });
      expect(await indicator.isHealthy('queue-host')).toEqual({
        'queue-host': expect.objectContaining({ status: 'up' }),
      });
    } finally {
      await app.close();
    }
  });
});
