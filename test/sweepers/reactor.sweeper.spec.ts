import { randomUUID } from 'node:crypto';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { ReactorEngine, runLeaseKey } from '../../lib/core';
import { newRunState } from '../../lib/core';
import type { LockManager } from '../../lib/core/ports/lock-manager.port';
import type { ReactorStorage } from '../../lib/core/ports/reactor-storage.port';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { REACTOR_LOCKS, REACTOR_RUNTIME, REACTOR_STORAGE } from '../../lib/config/reactor.constants';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { ReactorSweeper } from '../../lib/sweepers/reactor.sweeper';
import { SweeperScheduler } from '../../lib/sweepers/sweeper.scheduler';
import { REACTOR_SWEEPER_CRON } from '../../lib/sweepers/sweep-schedule';
import { createRedisApp, E2E_PROVIDERS, useRedisPrefixes } from '../e2e/e2e.fixtures';
import { CapturingLogger } from '../nest/fixtures';
import { redisUrl } from '../setup/redis';

const WAIT = { timeoutMs: 10_000 };
const TEN_MINUTES = 10 * 60_000;

/** Store a run as a worker that died would leave it: running, no lease, last updated `ageMs` ago. */
async function storeStalledRun(app: TestingModule, ageMs: number, word = 'abc'): Promise<string> {
  const def = app.get(ReactorEngine).definition('e2e-bg-all');
  const state = newRunState(def, `stalled-${randomUUID()}`, { word }, Date.now() - ageMs);
  state.status = 'running';
  expect(await app.get<ReactorStorage>(REACTOR_STORAGE).save(state, { createOnly: true })).toBe(true);
  return state.runId;
}

describe('recovery sweeper', () => {
  const files = useRedisPrefixes();
  const prefix = files.prefix;

  it('sweepOnce re-enqueues a stalled run, which completes, and leaves a run whose lease is held', async () => {
    const { app, client } = await createRedisApp(prefix('sweep-once'), { sweeper: { enabled: false } });
    const locks = app.get<LockManager>(REACTOR_LOCKS);
    try {
      const stalled = await storeStalledRun(app, TEN_MINUTES, 'abc');
      const held = await storeStalledRun(app, TEN_MINUTES, 'xyz');
      const lease = await locks.acquire(runLeaseKey(held), 60_000);
      const fresh = await storeStalledRun(app, 0, 'pqr'); // updated just now: not stalled yet

      expect(await client.sweepOnce()).toEqual({ reactors: 1, maps: 0 });

      const done = await client.wait(stalled, WAIT);
      expect(done.status === 'completed' && done.value).toBe('C');
      expect((await client.get(held))?.status).toBe('running');
      expect((await client.get(fresh))?.status).toBe('running');

      // Once its holder is gone (the lease released or expired), the next sweep recovers it.
      await locks.release(lease!);
      expect(await client.sweepOnce()).toEqual({ reactors: 1, maps: 0 });
      expect((await client.wait(held, WAIT)).status).toBe('completed');
    } finally {
      await app.close();
    }
  });

  it('a run waiting in a long queue is enqueued once by recovery, however many sweeps find it', async () => {
    // A producer-only process: nothing consumes, as when the workers are far behind.
    const { app, client } = await createRedisApp(prefix('sweep-storm'), {
      workers: false,
      sweeper: { enabled: false },
    });
    try {
      const stalled = await storeStalledRun(app, TEN_MINUTES);
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      for (let sweep = 0; sweep < 5; sweep++) await client.sweepOnce();
      expect(await runtime.dispatcher.pending()).toBe(1);
      const [job] = await runtime.dispatcher.queue.getJobs(['waiting', 'delayed']);
      expect(job?.data).toEqual({ kind: 'resume', runId: stalled, reactorName: 'e2e-bg-all' });
    } finally {
      await app.close();
    }
  });

  it('a sweep reports the jobs it added: a second sweep while the recovery job of the first is pending reports 0', async () => {
    const { app, client } = await createRedisApp(prefix('sweep-count'), {
      workers: false,
      sweeper: { enabled: false },
    });
    try {
      const stalled = await storeStalledRun(app, TEN_MINUTES);
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      expect(await client.sweepOnce()).toEqual({ reactors: 1, maps: 0 });
      // The run is still stalled (nothing consumes), but its recovery job is pending: BullMQ adds none.
      expect(await client.sweepOnce()).toEqual({ reactors: 0, maps: 0 });
      expect(app.get(ReactorSweeper).lastSweep?.result).toEqual({ reactors: 0, maps: 0 });
      expect(await runtime.dispatcher.pending()).toBe(1);

      // Once that job is gone (consumed, or removed here), the next sweep adds one again and says so.
      const [job] = await runtime.dispatcher.queue.getJobs(['waiting']);
      expect(job?.data.runId).toBe(stalled);
      await job!.remove();
      expect(await client.sweepOnce()).toEqual({ reactors: 1, maps: 0 });
      expect(await runtime.dispatcher.pending()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('runs waiting for a retry scheduled later do not hide a stalled run from the sweep', async () => {
    const { app, client } = await createRedisApp(prefix('sweep-due'), { sweeper: { enabled: false } });
    const storage = app.get<ReactorStorage>(REACTOR_STORAGE);
    const def = app.get(ReactorEngine).definition('e2e-bg-all');
    try {
      // 300 runs idle for ten minutes, each waiting for a retry due in ten more (older than the stalled run).
      await Promise.all(
        Array.from({ length: 300 }, async () => {
          const state = newRunState(def, `waiting-${randomUUID()}`, { word: 'w' }, Date.now() - 2 * TEN_MINUTES);
          state.status = 'running';
          state.retryAt = { b: Date.now() + TEN_MINUTES };
          await storage.save(state, { createOnly: true });
        }),
      );
      const stalled = await storeStalledRun(app, TEN_MINUTES, 'abc');
      // A sweep reads the oldest idle runs, 1,000 at most in production; 50 here: the waiting ones are not among them.
      expect(await app.get(ReactorEngine).recoverStalled({ limit: 50, graceMs: 60_000 })).toBe(1);
      const done = await client.wait(stalled, WAIT);
      expect(done.status).toBe('completed');
    } finally {
      await app.close();
    }
  });

  it('a scheduled sweep claims its window: the cron firing twice, or on two replicas, sweeps once', async () => {
    const p = prefix('sweep-guard');
    // An hourly interval: both calls below fall in the same window.
    const options = { sweeper: { enabled: false, intervalMs: 3_600_000 } };
    const one = await createRedisApp(p, options);
    const two = await createRedisApp(p, options);
    try {
      const stalled = await storeStalledRun(one.app, TEN_MINUTES);
      const sweepOnce = jest.spyOn(one.app.get(ReactorSweeper), 'sweepOnce');

      const first = await one.app.get(SweeperScheduler).tick();
      const again = await one.app.get(SweeperScheduler).tick();
      const otherReplica = await two.app.get(SweeperScheduler).tick();

      expect(first).toEqual({ reactors: 1, maps: 0 });
      expect(again).toBeUndefined();
      expect(otherReplica).toBeUndefined();
      expect(sweepOnce).toHaveBeenCalledTimes(1);
      expect((await one.client.wait(stalled, WAIT)).status).toBe('completed');
    } finally {
      await one.app.close();
      await two.app.close();
    }
  });

  it('is scheduled at bootstrap from sweeper.intervalMs when the app imports ScheduleModule', async () => {
    const p = prefix('sweep-cron');
    const logger = new CapturingLogger();
    // ReactorModule first: its hooks still run after @nestjs/schedule mounted the cron job.
    const app = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot({ redis: { url: redisUrl() }, prefix: p, sweeper: { intervalMs: 1_000 } }),
        ScheduleModule.forRoot(),
      ],
      providers: E2E_PROVIDERS,
    })
      .setLogger(logger)
      .compile();
    await app.init();
    const job = app.get(SchedulerRegistry).getCronJob(REACTOR_SWEEPER_CRON);
    try {
      expect(job.isActive).toBe(true);
      expect(job.cronTime.source).toBe('*/1 * * * * *');
      expect(logger.messages('log')).toContainEqual(
        "Recovery sweeper scheduled every 1000 ms (cron '*/1 * * * * *', UTC).",
      );

      // Nobody calls sweepOnce: the cron finds the stalled run and a worker finishes it.
      const stalled = await storeStalledRun(app, TEN_MINUTES);
      expect((await app.get(ReactorClient).wait(stalled, WAIT)).status).toBe('completed');
    } finally {
      await app.close();
    }
    expect(job.isActive).toBe(false);
  });

  it('is not scheduled with enabled: false (the cron job stays stopped)', async () => {
    const { app, logger } = await createRedisApp(
      prefix('sweep-off'),
      { sweeper: { enabled: false } },
      { imports: [ScheduleModule.forRoot()] },
    );
    try {
      expect(app.get(SchedulerRegistry).getCronJob(REACTOR_SWEEPER_CRON).isActive).toBe(false);
      expect(logger.messages('warn').filter((m) => m.includes('sweeper'))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('warns at boot, saying how to fix it, when ScheduleModule is not imported', async () => {
    const { app, logger } = await createRedisApp(prefix('sweep-noschedule'));
    try {
      expect(logger.messages('warn')).toContainEqual(
        'The recovery sweeper is not scheduled: ScheduleModule from @nestjs/schedule is not imported, so stalled ' +
          'runs (whose worker died) are not recovered. Import ScheduleModule.forRoot() once in your application ' +
          'module, or set sweeper: { enabled: false } and call ReactorClient.sweepOnce() from your own cron.',
      );
    } finally {
      await app.close();
    }
  });

  it('sweepOnce works on the embedded runtime too', async () => {
    const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers: E2E_PROVIDERS })
      .setLogger(new CapturingLogger())
      .compile();
    await app.init();
    try {
      const client = app.get(ReactorClient);
      expect(await client.sweepOnce()).toEqual({ reactors: 0, maps: 0 });
      const stalled = await storeStalledRun(app, TEN_MINUTES);
      expect(await client.sweepOnce()).toEqual({ reactors: 1, maps: 0 });
      expect((await client.wait(stalled, WAIT)).status).toBe('completed');
    } finally {
      await app.close();
    }
  });
});
