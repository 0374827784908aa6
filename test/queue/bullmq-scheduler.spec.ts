/**
 * The Redis runtime's tick worker (queue `nest-reactor.schedules`): a worker holds a tick job for
 * `leaseTtlMs`, clamped to 1 to 30 s, before another may take it over (BullMQ `lockDuration`, and
 * `stalledInterval`, how often a stalled tick is looked for). README "Schedules", DD-schedule-1.
 */
import 'reflect-metadata';
import type { Worker } from 'bullmq';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import type { BullMqScheduleTicker } from '../../lib/queue/bullmq-scheduler';
import { SCHEDULE_QUEUE_NAME } from '../../lib/queue/bullmq-scheduler';
import { createRedisApp, useRedisPrefixes } from '../e2e/e2e.fixtures';

const { prefix } = useRedisPrefixes();

describe('the tick worker of the Redis runtime', () => {
  it.each([
    [200, 1_000], // below 1 s: 1 s
    [5_000, 5_000], // within: leaseTtlMs
    [120_000, 30_000], // above 30 s: 30 s
  ])('with leaseTtlMs %i holds a tick job for %i ms before another worker may take it over', async (lease, held) => {
    const { app } = await createRedisApp(prefix('schlock'), { leaseTtlMs: lease });
    try {
      const ticker = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).schedules.ticker as BullMqScheduleTicker;
      // NOTE: the worker is private; its options are what BullMQ acts on.
      const worker = (ticker as unknown as { worker?: Worker }).worker;
      expect(worker?.name).toBe(SCHEDULE_QUEUE_NAME);
      expect(worker?.opts).toMatchObject({ lockDuration: held, stalledInterval: held });
    } finally {
      await app.close();
    }
  });

  it('a producer (workers: false) starts no tick worker', async () => {
    const { app } = await createRedisApp(prefix('schlock'), { workers: false });
    try {
      const ticker = app.get<RedisReactorRuntime>(REACTOR_RUNTIME).schedules.ticker as BullMqScheduleTicker;
      expect((ticker as unknown as { worker?: Worker }).worker).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
