/**
 * Schedules (issue 23) on Redis + BullMQ: ticks come from BullMQ job schedulers on queue
 * `nest-reactor.schedules`; each starts one run, `<schedule id>@<due ms>`; pause removes the job
 * scheduler and keeps the definition (in Redis), resume upserts it again; a tick job delivered
 * twice starts one run; after downtime (no worker) one late tick runs and the missed ones are not
 * made up. The embedded runtime's side is test/core/schedules.spec.ts.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { scheduledRunId } from '../../lib/core/engine/schedules';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import type { BullMqScheduleTicker } from '../../lib/queue/bullmq-scheduler';
import { SCHEDULE_TICK_JOB } from '../../lib/queue/bullmq-scheduler';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const WAIT_MS = 20_000;

@Reactor('sche2e-tick')
class TickReactor implements ReactorBlueprint<{ tenant: string }> {
  build(r: ReactorBuilder<{ tenant: string }>) {
    const tenant = r.input('tenant', { type: 'string' });
    return r.step('work', ({ tenant: t }: { tenant: string }) => success(`done ${t}`), { tenant });
  }
}

@Reactor('sche2e-declared', { schedule: { cron: '0 3 * * *', tz: 'America/New_York', input: { tenant: 'all' } } })
class DeclaredReactor implements ReactorBlueprint<{ tenant: string }> {
  build(r: ReactorBuilder<{ tenant: string }>) {
    const tenant = r.input('tenant', { type: 'string' });
    return r.step('work', ({ tenant: t }: { tenant: string }) => success(t), { tenant });
  }
}

/** Waits at an interrupt: a live run until the test answers it. */
@Reactor('sche2e-wait')
class WaitReactor implements ReactorBlueprint<Record<string, never>> {
  build(r: ReactorBuilder<Record<string, never>>) {
    return r.interrupt('go');
  }
}

/** Its step runs until the test opens the gate: a `running` run for as long as the test likes. */
const gate = { entered: 0, open: () => undefined as void, opened: Promise.resolve() };
@Reactor('sche2e-slow')
class SlowReactor implements ReactorBlueprint<Record<string, never>> {
  build(r: ReactorBuilder<Record<string, never>>) {
    return r.step(
      'work',
      async () => {
        gate.entered++;
        await gate.opened;
        return success('done');
      },
      {},
    );
  }
}

const PROVIDERS = [TickReactor, DeclaredReactor, WaitReactor, SlowReactor];
const { prefix } = useRedisPrefixes();

/** The due times of the runs of schedule `id`, sorted (from their run ids). */
async function ticksOf(client: ReactorClient, id: string): Promise<number[]> {
  const { runs } = await client.list({ reactor: 'sche2e-tick', limit: 1000 });
  const head = `${encodeURIComponent(id)}@`;
  return runs
    .filter((run) => run.runId.startsWith(head))
    .map((run) => Number(run.runId.slice(head.length)))
    .sort((a, b) => a - b);
}

describe('schedules on the Redis runtime', () => {
  let app: TestingModule;
  let client: ReactorClient;
  let ticker: BullMqScheduleTicker;

  beforeAll(async () => {
    ({ app, client } = await createRedisApp(prefix('sch'), {}, { providers: PROVIDERS }));
    ticker = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).schedules.ticker as BullMqScheduleTicker;
  });
  afterAll(async () => {
    await app?.close();
  });

  it('a declared schedule is a BullMQ job scheduler with its cron and time zone, listed with its next tick', async () => {
    const [view] = (await client.schedules.list()).filter((s) => s.id === 'sche2e-declared');
    expect(view).toMatchObject({ reactor: 'sche2e-declared', declared: true, tz: 'America/New_York' });
    const schedulers = await ticker.queue.getJobSchedulers();
    const scheduler = schedulers.find((s) => s.key === 'sche2e-declared');
    expect(scheduler).toMatchObject({ pattern: '0 3 * * *', tz: 'America/New_York', next: view.nextTickAt });
    // 03:00 in New York, the next one: 07:00 or 08:00 UTC.
    expect([7, 8]).toContain(new Date(view.nextTickAt!).getUTCHours());
  });

  it('an everyMs schedule starts one run per tick; pause removes its job scheduler and keeps it, resume upserts it again', async () => {
    await client.schedules.upsert({ id: 'acme:ping', reactor: TickReactor, everyMs: 200, input: { tenant: 'acme' } });
    await pollUntil(async () => (await ticksOf(client, 'acme:ping')).length >= 3, WAIT_MS);
    const ticks = await ticksOf(client, 'acme:ping');
    // Due times on the interval's grid, each started once.
    for (let i = 1; i < ticks.length; i++) expect((ticks[i] - ticks[0]) % 200).toBe(0);
    expect(new Set(ticks).size).toBe(ticks.length);
    const firstRun = scheduledRunId('acme:ping', ticks[0]);
    expect(await client.wait(firstRun, { timeoutMs: WAIT_MS })).toMatchObject({
      status: 'completed',
      value: 'done acme',
    });
    expect(await client.schedules.get('acme:ping')).toMatchObject({
      everyMs: 200,
      paused: false,
      nextTickAt: expect.any(Number),
      lastRun: { runId: expect.stringMatching(/^acme%3Aping@\d+$/) },
    });

    const paused = await client.schedules.pause('acme:ping');
    expect(paused).toMatchObject({ paused: true });
    expect(paused.nextTickAt).toBeUndefined();
    expect((await ticker.queue.getJobSchedulers()).map((s) => s.key)).not.toContain('acme:ping');
    const pending = await ticker.queue.getJobs(['delayed', 'wait']);
    expect(pending.filter((job) => job.id?.startsWith('repeat:acme:ping:'))).toEqual([]);

    const resumed = await client.schedules.resume('acme:ping');
    expect(resumed.nextTickAt).toEqual(expect.any(Number));
    expect((await ticker.queue.getJobSchedulers()).map((s) => s.key)).toContain('acme:ping');
    const count = (await ticksOf(client, 'acme:ping')).length;
    await pollUntil(async () => (await ticksOf(client, 'acme:ping')).length > count, WAIT_MS);
    expect(await client.schedules.remove('acme:ping')).toBe(true);
    expect((await ticker.queue.getJobSchedulers()).map((s) => s.key)).not.toContain('acme:ping');
  });

  it('a tick job delivered twice (two jobs for one due time) starts one run', async () => {
    await client.schedules.upsert({ id: 'dup', reactor: 'sche2e-tick', cron: '0 0 1 1 *', input: { tenant: 'dup' } });
    const at = Date.UTC(2030, 0, 1);
    const jobs = await Promise.all(
      // Jobs of one due time (BullMQ refuses a custom id with `:`, so the due time is their timestamp).
      ['a', 'b'].map(() => ticker.queue.add(SCHEDULE_TICK_JOB, { scheduleId: 'dup' }, { timestamp: at })),
    );
    // Handled: completed (and removed, as the module's jobs are).
    const done = (state: string) => state === 'completed' || state === 'unknown';
    await pollUntil(async () => (await Promise.all(jobs.map((job) => job.getState()))).every(done), WAIT_MS);
    expect(await ticksOf(client, 'dup')).toEqual([at]);
    expect(await client.wait(scheduledRunId('dup', at), { timeoutMs: WAIT_MS })).toMatchObject({ status: 'completed' });
    await client.schedules.remove('dup');
  });
});

/** One reactor name, declared by two deploys with other schedules. */
@Reactor('sche2e-sync', { schedule: { cron: '0 1 * * *', input: { tenant: 'v1' } } })
class SyncV1 implements ReactorBlueprint<{ tenant: string }> {
  build(r: ReactorBuilder<{ tenant: string }>) {
    return r.input('tenant', { type: 'string' });
  }
}
@Reactor('sche2e-sync', { schedule: { cron: '0 4 * * 1', tz: 'Asia/Tokyo', input: { tenant: 'v2' } } })
class SyncV2 implements ReactorBlueprint<{ tenant: string }> {
  build(r: ReactorBuilder<{ tenant: string }>) {
    return r.input('tenant', { type: 'string' });
  }
}

describe('declared schedules across deploys (Redis)', () => {
  it('a boot updates a changed declaration (a paused schedule stays paused) and removes one no longer declared', async () => {
    const p = prefix('schsync');
    const boot = (providers: unknown[]) => createRedisApp(p, {}, { providers: providers as never });
    const v1 = await boot([SyncV1]);
    try {
      expect(await v1.client.schedules.get('sche2e-sync')).toMatchObject({ cron: '0 1 * * *', paused: false });
      await v1.client.schedules.pause('sche2e-sync');
    } finally {
      await v1.app.close();
    }
    const v2 = await boot([SyncV2]);
    try {
      const view = await v2.client.schedules.get('sche2e-sync');
      expect(view).toMatchObject({ cron: '0 4 * * 1', tz: 'Asia/Tokyo', input: { tenant: 'v2' }, paused: true });
      const schedulers = await (
        v2.app.get<RedisReactorRuntime>(REACTOR_RUNTIME).schedules.ticker as BullMqScheduleTicker
      ).queue.getJobSchedulers();
      expect(schedulers.map((sc) => sc.key)).not.toContain('sche2e-sync');
      await v2.client.schedules.resume('sche2e-sync');
    } finally {
      await v2.app.close();
    }
    const v3 = await boot([TickReactor]);
    try {
      expect(await v3.client.schedules.get('sche2e-sync')).toBeUndefined();
      const schedulers = await (
        v3.app.get<RedisReactorRuntime>(REACTOR_RUNTIME).schedules.ticker as BullMqScheduleTicker
      ).queue.getJobSchedulers();
      expect(schedulers.map((sc) => sc.key)).not.toContain('sche2e-sync');

      // A schedule upserted in code under a name a reactor then declares: that boot fails, saying so.
      await v3.client.schedules.upsert({
        id: 'sche2e-sync',
        reactor: TickReactor,
        cron: '0 0 1 1 *',
        input: { tenant: 'x' },
      });
    } finally {
      await v3.app.close();
    }
    await expect(boot([SyncV1])).rejects.toMatchObject({
      code: 'CONFIGURATION_INVALID',
      message: expect.stringContaining("client.schedules.remove('sche2e-sync')"),
    });
  });
});

describe('schedules on the Redis runtime: overlap', () => {
  it("overlap 'skip': ticks are dropped while the last run is live, and one starts once it finished; trigger follows the rule", async () => {
    const { app, client } = await createRedisApp(prefix('schov'), {}, { providers: PROVIDERS });
    try {
      await client.schedules.upsert({ id: 'ov', reactor: WaitReactor, everyMs: 200 });
      await pollUntil(async () => (await client.schedules.get('ov'))?.lastTick?.skipped === 'overlap', WAIT_MS);
      const { runs } = await client.list({ reactor: 'sche2e-wait', limit: 100 });
      expect(runs).toHaveLength(1);
      const live = runs[0].runId;
      expect(await client.schedules.get('ov')).toMatchObject({ lastRun: { runId: live, status: 'paused' } });
      expect(await client.schedules.trigger('ov')).toEqual({ status: 'skipped', reason: 'overlap', runId: live });

      await client.continue(live, 'go', 'ok', { wait: true });
      await pollUntil(
        async () => (await client.list({ reactor: 'sche2e-wait', limit: 100 })).runs.length === 2,
        WAIT_MS,
      );
      await client.schedules.remove('ov');
    } finally {
      await app.close();
    }
  });
});

describe('schedules on the Redis runtime: overlap with a running run', () => {
  it("overlap 'skip': a tick handled while the last run is running (a step in flight) is dropped", async () => {
    gate.entered = 0;
    gate.opened = new Promise<void>((resolve) => (gate.open = resolve));
    const { app, client } = await createRedisApp(prefix('schrun'), {}, { providers: PROVIDERS });
    const ticker = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).schedules.ticker as BullMqScheduleTicker;
    /** A tick job due at `at`, handled by the tick worker as BullMQ's own are. */
    const tickAt = (at: number) => ticker.queue.add(SCHEDULE_TICK_JOB, { scheduleId: 'slow' }, { timestamp: at });
    try {
      // Ticks at once (its run's step then waits for the gate), the next one an hour later.
      await client.schedules.upsert({ id: 'slow', reactor: SlowReactor, everyMs: 3_600_000 });
      await pollUntil(
        async () => gate.entered === 1 && (await client.schedules.get('slow'))?.lastRun !== undefined,
        WAIT_MS,
      );
      const live = (await client.schedules.get('slow'))!.lastRun!.runId;
      const at = Date.now() + 1;
      await tickAt(at);
      await pollUntil(async () => (await client.schedules.get('slow'))?.lastTick?.at === at, WAIT_MS);
      expect(await client.schedules.get('slow')).toMatchObject({
        lastTick: { at, skipped: 'overlap', runId: live },
        lastRun: { runId: live, status: 'running' },
      });
      expect(await client.schedules.trigger('slow')).toEqual({ status: 'skipped', reason: 'overlap', runId: live });
      expect((await client.list({ reactor: 'sche2e-slow', limit: 100 })).runs.map((r) => r.runId)).toEqual([live]);
      expect(gate.entered).toBe(1);

      gate.open();
      expect(await client.wait(live, { timeoutMs: WAIT_MS })).toMatchObject({ status: 'completed' });
      const later = at + 1;
      await tickAt(later);
      await pollUntil(
        async () => (await client.schedules.get('slow'))?.lastRun?.runId === scheduledRunId('slow', later),
        WAIT_MS,
      );
      await client.schedules.remove('slow');
    } finally {
      gate.open();
      await app.close();
    }
  });
});

describe('schedules on the Redis runtime after downtime', () => {
  it('the tick due while no worker ran is handled once when one comes back; the ticks missed meanwhile are not made up', async () => {
    const p = prefix('schdown');
    // A producer (no workers) upserts: the first tick (due at once) waits in the queue.
    const producer = await createRedisApp(p, { workers: false }, { providers: PROVIDERS });
    let worker: Awaited<ReturnType<typeof createRedisApp>> | undefined;
    try {
      const view = await producer.client.schedules.upsert({
        id: 'down',
        reactor: 'sche2e-tick',
        everyMs: 200,
        input: { tenant: 'down' },
      });
      const firstDue = view.nextTickAt!;
      // Downtime: five intervals pass with no worker.
      await pollUntil(() => Date.now() >= firstDue + 1_000, WAIT_MS);
      const restartAt = Date.now();
      worker = await createRedisApp(p, {}, { providers: PROVIDERS });
      await pollUntil(async () => (await ticksOf(worker!.client, 'down')).length >= 3, WAIT_MS);
      const ticks = await ticksOf(worker.client, 'down');
      // One late tick (the one that was due), then ticks due after the restart only.
      expect(ticks[0]).toBe(firstDue);
      expect(ticks.filter((at) => at < restartAt)).toEqual([firstDue]);
      await worker.client.schedules.remove('down');
    } finally {
      await worker?.app.close();
      await producer.app.close();
    }
  });
});
