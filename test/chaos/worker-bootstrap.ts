/**
 * The boot and shutdown shared by the chaos worker processes (worker-app.ts, flow.worker.ts,
 * sleep.worker.ts, lock-stall.worker.ts, schedule-worker.ts), which the chaos specs start as real
 * child processes (`node -r ts-node/register/transpile-only test/chaos/<file>`) and stop by signal:
 *
 * - {@link runWorker}: the process's entry; a failure is written to stderr and exits 1;
 * - {@link createWorkerContext}: the Nest application context, closed gracefully on SIGTERM and
 *   SIGINT (`enableShutdownHooks`); a SIGKILL crashes it;
 * - {@link startChaosWorker}: the ReactorModule on Redis (workers on) with the chaos fixtures and
 *   the worker's own providers, ready once its BullMQ workers consume: it then sets
 *   `<prefix>{chaos}:ready:<WORKER_ID>` and prints `ready`.
 */
import 'reflect-metadata';
import { Module, type DynamicModule, type INestApplicationContext, type LogLevel, type Provider } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import type { ReactorModuleOptions } from '../../lib/config';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { reactorRedisOption } from '../setup/redis';
import { ChaosFixturesModule, ChaosProbe, chaosConfigFromEnv, type ChaosConfig } from './chaos.fixtures';

/** Run `main` as the process's entry: on failure, `<name> failed: <stack>` on stderr and exit code 1. */
export function runWorker(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(`${name} failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });
}

/** The environment variable `name` as a number, `undefined` when unset or empty; throws when not a number. */
export function optionalNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`chaos worker: ${name} must be a number, got '${raw}'`);
  return value;
}

/** The application context of `module`, closed gracefully on SIGTERM and SIGINT. */
export async function createWorkerContext(
  module: DynamicModule | (new (...args: never[]) => unknown),
  logger: LogLevel[],
): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(module, { logger, abortOnError: false });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  return app;
}

@Module({})
class ChaosWorkerModule {}

/** Options of {@link startChaosWorker}. */
export interface ChaosWorkerOptions {
  /** The worker's reactors and steps. */
  providers: Provider[];
  /** ReactorModule options over the defaults (redis, prefix, `leaseTtlMs`, `sweeper`). */
  module?: ReactorModuleOptions;
  /** Nest's log levels. @default ['warn', 'error'] */
  logger?: LogLevel[];
  /** Called once ready, before `ready` is printed. */
  beforeReady?(workerId: string): void;
}

/** A started chaos worker. */
export interface ChaosWorker {
  app: INestApplicationContext;
  config: ChaosConfig;
  workerId: string;
  probe: ChaosProbe;
}

/**
 * Boot a chaos worker from its environment: REDIS_URL (or REDIS_CLUSTER_NODES), CHAOS_PREFIX and
 * the misbehaviour switches of `chaosConfigFromEnv`, WORKER_ID (default: the pid), LEASE_TTL_MS
 * (default 1500) and SWEEPER_INTERVAL_MS (unset: no sweeper; set: `ScheduleModule.forRoot()` is
 * imported and the recovery sweeper runs on that interval). Resolves once it printed `ready`.
 */
export async function startChaosWorker(options: ChaosWorkerOptions): Promise<ChaosWorker> {
  const config = chaosConfigFromEnv();
  const workerId = process.env.WORKER_ID ?? String(process.pid);
  const sweepIntervalMs = optionalNumber('SWEEPER_INTERVAL_MS');
  const root: DynamicModule = {
    module: ChaosWorkerModule,
    imports: [
      ...(sweepIntervalMs !== undefined ? [ScheduleModule.forRoot()] : []),
      ReactorModule.forRoot({
        // `{ url }`, or in the cluster run a Cluster connection (the process exits after app.close()).
        redis: reactorRedisOption().redis,
        prefix: config.prefix,
        leaseTtlMs: optionalNumber('LEASE_TTL_MS') ?? 1500,
        sweeper: sweepIntervalMs !== undefined ? { enabled: true, intervalMs: sweepIntervalMs } : { enabled: false },
        ...options.module,
      }),
      ChaosFixturesModule.forRoot(config),
    ],
    providers: options.providers,
  };
  const app = await createWorkerContext(root, options.logger ?? ['warn', 'error']);
  const probe = app.get(ChaosProbe);
  await probe.redis.set(probe.keys.ready(workerId), String(process.pid));
  options.beforeReady?.(workerId);
  process.stdout.write('ready\n');
  return { app, config, workerId, probe };
}
