/**
 * The worker process of the lock-stall chaos test: the ReactorModule on Redis (workers on, sweeper
 * off) with the lock-stall fixtures. Started by `lock-stall.spec.ts`:
 *
 *   node -r ts-node/register/transpile-only test/chaos/lock-stall.worker.ts
 *
 * Environment: REDIS_URL (or, in the cluster run, REDIS_CLUSTER_NODES), CHAOS_PREFIX, BLOCK_FILE,
 * LEASE_TTL_MS. Prints `ready` once consuming.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { reactorRedisOption } from '../setup/redis';
import { stallProviders } from './lock-stall.fixtures';
import { createWorkerContext, runWorker } from './worker-bootstrap';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`lock-stall worker: environment variable ${name} is required`);
  return value;
}

runWorker('lock-stall worker', async () => {
  const prefix = required('CHAOS_PREFIX');
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: reactorRedisOption().redis,
        prefix,
        leaseTtlMs: Number(required('LEASE_TTL_MS')),
        sweeper: { enabled: false },
      }),
    ],
    providers: stallProviders({ prefix, blockFile: required('BLOCK_FILE') }),
  })
  class LockStallWorkerModule {}

  await createWorkerContext(LockStallWorkerModule, ['log', 'warn', 'error']);
  process.stdout.write('ready\n');
});
