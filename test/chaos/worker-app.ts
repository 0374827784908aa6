/**
 * A worker process for the chaos tests: a Nest application context with the ReactorModule on
 * Redis (workers on, sweeper off) and the chaos fixtures. Started by the tests as a child process:
 *
 *   node -r ts-node/register/transpile-only test/chaos/worker-app.ts
 *
 * Environment: REDIS_URL (or, in the cluster run, REDIS_CLUSTER_NODES), CHAOS_PREFIX (key prefix of the test file, also the module prefix),
 * WORKER_ID, and optionally LEASE_TTL_MS (default 1500), WORKER_CONCURRENCY (default 10),
 * MAX_CONTEXT_BYTES, SNOOZE_DELAY_MS, LOCK_SNOOZE_MAX_ATTEMPTS, SHUTDOWN_GRACE_MS (module default),
 * SWEEPER_INTERVAL_MS (unset: no sweeper; set: `ScheduleModule.forRoot()` is imported and the
 * recovery sweeper runs on that interval), plus the misbehaviour switches of `chaosConfigFromEnv`
 * (CRASH_AT_STEP, CRASH_FROM_ELEMENT, BLOCK_AT_STEP + BLOCK_FILE, GATE_AT_STEP, SLOW_AT_STEP,
 * SLOW_FROM_ELEMENT, SLOW_MS) and of `coordinationChaosConfigFromEnv` (CRASH_AT_SEQ).
 *
 * Once bootstrapped (its BullMQ worker consuming) it sets `<prefix>{chaos}:ready:<WORKER_ID>` and
 * prints `ready`. SIGTERM closes it gracefully (`enableShutdownHooks`); the tests SIGKILL it to
 * crash it.
 */
import 'reflect-metadata';
import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { ReactorModule } from '../../lib/nest/reactor.module';
import {
  CHAOS_ASYNC_PROVIDERS,
  CHAOS_COORDINATION_PROVIDERS,
  CHAOS_INTERRUPT_PROVIDERS,
  ChaosFixturesModule,
  ChaosProbe,
  chaosConfigFromEnv,
} from './chaos.fixtures';
import { reactorRedisOption } from '../setup/redis';

@Module({})
class ChaosWorkerAppModule {}

function optionalNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`worker-app: ${name} must be a number, got '${raw}'`);
  return value;
}

async function main(): Promise<void> {
  const config = chaosConfigFromEnv();
  const workerId = process.env.WORKER_ID ?? String(process.pid);
  const sweepIntervalMs = optionalNumber('SWEEPER_INTERVAL_MS');
  const root: DynamicModule = {
    module: ChaosWorkerAppModule,
    imports: [
      ...(sweepIntervalMs !== undefined ? [ScheduleModule.forRoot()] : []),
      ReactorModule.forRoot({
        // `{ url }`, or in the cluster run a Cluster connection (the process exits after app.close()).
        redis: reactorRedisOption().redis,
        prefix: config.prefix,
        leaseTtlMs: optionalNumber('LEASE_TTL_MS') ?? 1500,
        workerConcurrency: optionalNumber('WORKER_CONCURRENCY') ?? 10,
        maxContextBytes: optionalNumber('MAX_CONTEXT_BYTES'),
        snoozeDelayMs: optionalNumber('SNOOZE_DELAY_MS'),
        lockSnoozeMaxAttempts: optionalNumber('LOCK_SNOOZE_MAX_ATTEMPTS'),
        shutdownGraceMs: optionalNumber('SHUTDOWN_GRACE_MS'),
        sweeper: sweepIntervalMs !== undefined ? { enabled: true, intervalMs: sweepIntervalMs } : { enabled: false },
      }),
      ChaosFixturesModule.forRoot(config),
    ],
    providers: [...CHAOS_INTERRUPT_PROVIDERS, ...CHAOS_ASYNC_PROVIDERS, ...CHAOS_COORDINATION_PROVIDERS],
  };
  const app = await NestFactory.createApplicationContext(root, {
    logger: ['log', 'warn', 'error'],
    abortOnError: false,
  });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.get(ChaosProbe).redis.set(app.get(ChaosProbe).keys.ready(workerId), String(process.pid));
  new Logger('chaos-worker').log(`worker ${workerId} (pid ${process.pid}) bootstrapped`);
  process.stdout.write('ready\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`worker-app failed: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
