/**
 * Jest global setup of the cluster run (`npm run test:cluster`, jest.cluster.config.js): start a
 * private 3-master Redis Cluster (test/support/redis-cluster.ts: `redis-server`s on free ports,
 * joined with `redis-cli --cluster create`, ready once every node says `cluster_state:ok`) and
 * export its nodes as `REDIS_CLUSTER_NODES`, which the test workers (and the chaos tests' worker
 * processes) inherit; test/setup/redis.ts then hands out Cluster clients. `REDIS_URL` is removed,
 * so a test that asks for a single-node URL fails with a message that says so.
 *
 * The cluster is kept for the teardown on `globalThis` (Jest runs both hooks in its parent process,
 * and documents that globals set in the setup are visible in the teardown); a watchdog stops the
 * nodes if Jest dies without a teardown.
 */
import { startRedisCluster, type PrivateRedisCluster } from '../support/redis-cluster';
import { CLUSTER_NODES_ENV } from '../setup/redis';

/** Where the setup leaves the cluster for the teardown. */
export const CLUSTER_GLOBAL = '__nestReactorTestCluster';

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const cluster = await startRedisCluster({ masters: 3 });
  (globalThis as Record<string, unknown>)[CLUSTER_GLOBAL] = cluster satisfies PrivateRedisCluster;
  process.env[CLUSTER_NODES_ENV] = cluster.spec;
  delete process.env.REDIS_URL;
  process.stderr.write(
    `\n[test redis] started a 3-master Redis Cluster at ${cluster.spec} (pids ${cluster.pids.join(', ')}) ` +
      `in ${Date.now() - started} ms\n`,
  );
}
