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
import { Logger } from '@nestjs/common';
import { CHAOS_ASYNC_PROVIDERS, CHAOS_COORDINATION_PROVIDERS, CHAOS_INTERRUPT_PROVIDERS } from './chaos.fixtures';
import { optionalNumber, runWorker, startChaosWorker } from './worker-bootstrap';

runWorker('worker-app', async () => {
  await startChaosWorker({
    providers: [...CHAOS_INTERRUPT_PROVIDERS, ...CHAOS_ASYNC_PROVIDERS, ...CHAOS_COORDINATION_PROVIDERS],
    module: {
      workerConcurrency: optionalNumber('WORKER_CONCURRENCY') ?? 10,
      maxContextBytes: optionalNumber('MAX_CONTEXT_BYTES'),
      snoozeDelayMs: optionalNumber('SNOOZE_DELAY_MS'),
      lockSnoozeMaxAttempts: optionalNumber('LOCK_SNOOZE_MAX_ATTEMPTS'),
      shutdownGraceMs: optionalNumber('SHUTDOWN_GRACE_MS'),
    },
    logger: ['log', 'warn', 'error'],
    beforeReady: (workerId) => new Logger('chaos-worker').log(`worker ${workerId} (pid ${process.pid}) bootstrapped`),
  });
});
