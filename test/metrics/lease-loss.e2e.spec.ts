/**
 * `reactor_lease_losses_total` on the Redis runtime (issue 25): a worker executing a run finds its
 * lease taken by another holder (the test overwrites the lease key, as a second worker would after
 * an expiry); the execution stops (its step's signal aborted) and the loss is counted by reactor.
 */
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorMetricsModule } from '../../lib/metrics';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { REACTOR_RUNTIME } from '../../lib/config';
import { pollUntil, useRedisPrefixes } from '../e2e/e2e.fixtures';
import { reactorRedisOption } from '../setup/redis';
import { seriesOf } from './metrics.fixtures';

/** Holds until its signal is aborted (the lease lost), at most 10 s. */
@Reactor('metrics-lease')
class HoldingReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step(
      'hold',
      async (_args: object, ctx: StepContext) => {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return success('held');
      },
      {},
    );
  }
}

describe('ReactorMetricsModule: lease losses on the Redis runtime', () => {
  const { prefix, redis } = useRedisPrefixes();
  let app: INestApplication;
  let close: () => Promise<void>;
  const registry = new Registry();

  beforeAll(async () => {
    const connection = reactorRedisOption();
    close = () => connection.close();
    const module = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot({
          redis: connection.redis,
          prefix: prefix('metrics25-lease'),
          leaseTtlMs: 300,
          sweeper: { enabled: false },
        }),
        ReactorMetricsModule.forRoot({ registry }),
      ],
      providers: [HoldingReactor],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await close?.();
  });

  it('counts the execution that found its lease taken, by reactor', async () => {
    const client = app.get(ReactorClient);
    const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
    const { runId } = await client.start(HoldingReactor, {});
    const leaseKey = runtime.keys.leaseKey(runId);
    await pollUntil(
      async () => (await client.get(runId))?.status === 'running' && (await redis().exists(leaseKey)) === 1,
      5_000,
    );
    // Another holder takes the run: the next extension (every 100 ms) finds the lease gone.
    await redis().set(leaseKey, 'another-holder', 'PX', 10_000);
    await pollUntil(
      async () => (await seriesOf(registry, 'reactor_lease_losses_total'))['reactor=metrics-lease'] === 1,
      5_000,
    );
    expect(await seriesOf(registry, 'reactor_lease_losses_total')).toEqual({ 'reactor=metrics-lease': 1 });
    expect(await seriesOf(registry, 'reactor_runs_finished_total')).toEqual({});
    await redis().del(leaseKey);
  });
});
