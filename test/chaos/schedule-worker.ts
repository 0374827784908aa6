/**
 * A worker process of the schedule chaos test: a Nest application context with the ReactorModule
 * on Redis (workers on, sweeper on) and the scheduled reactor of schedule.fixtures.ts. Started by
 * test/chaos/schedule-replicas.spec.ts as a child process through `WorkerProcess.start`.
 *
 * Environment: REDIS_URL (or REDIS_CLUSTER_NODES), CHAOS_PREFIX, WORKER_ID, LEASE_TTL_MS, and
 * CRASH_AT_TICK=n: on the n-th tick this process handles, it SIGKILLs itself after the tick's run
 * was started and before the tick's job is acknowledged (mid-tick), so BullMQ gives the job to
 * another worker once its lock expires.
 *
 * Every tick is recorded when taken (its due time in the probe's `taken` set) and once handled: in
 * `ticks` when it started (or found) its run, in `skipped` with the reason when it did not; every
 * delivery that found its run already started (`replayed`) is counted, and each worker counts the
 * ticks it is handling in `handling` (the killed tick's handling ends before the kill: its run was
 * started).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Schedules } from '../../lib/core/engine/schedules';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { createTestRedis, reactorRedisOption } from '../setup/redis';
import { RecordTick, SCHEDULE_PROBE_REDIS, ScheduledTickReactor, scheduleProbeKeys } from './schedule.fixtures';
import { createWorkerContext, runWorker } from './worker-bootstrap';

runWorker('schedule-worker', async () => {
  const prefix = process.env.CHAOS_PREFIX!;
  const workerId = process.env.WORKER_ID ?? String(process.pid);
  const crashAt = process.env.CRASH_AT_TICK ? Number(process.env.CRASH_AT_TICK) : undefined;
  const probe = { redis: createTestRedis(), prefix };
  const keys = scheduleProbeKeys(prefix);

  let handled = 0;
  const tick = Schedules.prototype.tick;
  Schedules.prototype.tick = async function (this: Schedules, due) {
    await probe.redis.hincrby(keys.handling, workerId, 1);
    await probe.redis.sadd(keys.taken, String(due.at));
    let result: Awaited<ReturnType<typeof tick>>;
    try {
      result = await tick.call(this, due);
      // Recorded once handled: a tick the test's pause reached first starts no run (skipped).
      if (result.status === 'started') {
        await probe.redis.sadd(keys.ticks, String(due.at));
        if (result.replayed) await probe.redis.incr(keys.replays);
      } else {
        await probe.redis.sadd(keys.skipped, `${due.at}:${result.reason}`);
      }
    } finally {
      await probe.redis.hincrby(keys.handling, workerId, -1);
    }
    handled++;
    if (handled === crashAt) {
      process.stdout.write(`crashing mid-tick at ${due.at}\n`);
      process.kill(process.pid, 'SIGKILL');
      await new Promise(() => undefined);
    }
    return result;
  };

  @Module({
    imports: [
      ScheduleModule.forRoot(),
      ReactorModule.forRoot({
        redis: reactorRedisOption().redis,
        prefix,
        leaseTtlMs: Number(process.env.LEASE_TTL_MS ?? 1500),
        sweeper: { enabled: true, intervalMs: 1_000 },
      }),
    ],
    providers: [{ provide: SCHEDULE_PROBE_REDIS, useValue: probe }, RecordTick, ScheduledTickReactor],
  })
  class ScheduleWorkerModule {}

  await createWorkerContext(ScheduleWorkerModule, ['warn', 'error']);
  process.stdout.write(`worker ${workerId} ready\nready\n`);
});
