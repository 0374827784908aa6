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
import { CHAOS_SLEEP_PROVIDERS } from './sleep.fixtures';
import { runWorker, startChaosWorker } from './worker-bootstrap';

runWorker('sleep.worker', async () => {
  await startChaosWorker({ providers: CHAOS_SLEEP_PROVIDERS });
});
