/** Jest global teardown of the cluster run: stops the cluster test/cluster/global-setup.ts started (by pid). */
import type { PrivateRedisCluster } from '../support/redis-cluster';
import { CLUSTER_NODES_ENV } from '../setup/redis';
import { CLUSTER_GLOBAL } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as Record<string, unknown>;
  const cluster = holder[CLUSTER_GLOBAL] as PrivateRedisCluster | undefined;
  delete holder[CLUSTER_GLOBAL];
  delete process.env[CLUSTER_NODES_ENV];
  await cluster?.stop();
}
