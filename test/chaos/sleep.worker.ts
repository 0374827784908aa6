/**
 * A worker process of the sleep restart test: a Nest application context with the ReactorModule on
 * Redis (workers on) and the reactor of sleep.fixtures.ts. Started by
 * test/chaos/sleep-restart.spec.ts through `WorkerProcess.start(..., 'test/chaos/sleep.worker.ts')`.
 *
 * Environment: REDIS_URL (or REDIS_CLUSTER_NODES), CHAOS_PREFIX, WORKER_ID, LEASE_TTL_MS (default
 * 1500) and SWEEPER_INTERVAL_MS (unset: no sweeper; set: `ScheduleModule.forRoot()` is imported and
 * the recovery sweeper runs on that interval). Prints `ready` once consuming; the test SIGKILLs it.
 */
import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { reactorRedisOption } from '../setup/redis';
import { ChaosFixturesModule, ChaosProbe, chaosConfigFromEnv } from './chaos.fixtures';
import { CHAOS_SLEEP_PROVIDERS } from './sleep.fixtures';

@Module({})
class SleepWorkerModule {}

async function main(): Promise<void> {
  const config = chaosConfigFromEnv();
  const workerId = process.env.WORKER_ID ?? String(process.pid);
  const sweepIntervalMs = process.env.SWEEPER_INTERVAL_MS ? Number(process.env.SWEEPER_INTERVAL_MS) : undefined;
  const root: DynamicModule = {
    module: SleepWorkerModule,
    imports: [
      ...(sweepIntervalMs !== undefined ? [ScheduleModule.forRoot()] : []),
      ReactorModule.forRoot({
        redis: reactorRedisOption().redis,
        prefix: config.prefix,
        leaseTtlMs: Number(process.env.LEASE_TTL_MS ?? 1500),
        sweeper: sweepIntervalMs !== undefined ? { enabled: true, intervalMs: sweepIntervalMs } : { enabled: false },
      }),
      ChaosFixturesModule.forRoot(config),
    ],
    providers: CHAOS_SLEEP_PROVIDERS,
  };
  const app = await NestFactory.createApplicationContext(root, { logger: ['warn', 'error'], abortOnError: false });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.get(ChaosProbe).redis.set(app.get(ChaosProbe).keys.ready(workerId), String(process.pid));
  process.stdout.write('ready\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`sleep.worker failed: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
