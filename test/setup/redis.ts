/**
 * Redis helpers for tests.
 *
 * The Jest global setup (./global-setup.ts) finds or starts a Redis and exports its URL as
 * `REDIS_URL`. All test files share that one Redis (and its db 0), so each test file should work
 * under its own key prefix and remove its keys afterwards:
 *
 *   const prefix = uniquePrefix('my-feature');
 *   const redis = createTestRedis();
 *   afterAll(async () => {
 *     await cleanupPrefix(redis, prefix);
 *     await redis.quit();
 *   });
 */
import { randomBytes } from 'node:crypto';
import Redis, { type Cluster, type RedisOptions } from 'ioredis';
import { createClusterClient, parseClusterNodes, type ClusterNodeAddress } from '../support/redis-cluster';

/**
 * Env var of the cluster run (`npm run test:cluster`, test/cluster/global-setup.ts): the nodes of
 * the test Redis Cluster, `host:port,host:port,...`. When it is set, the helpers below hand out
 * Cluster clients and the `{ connection }` form of the module's `redis` option.
 */
export const CLUSTER_NODES_ENV = 'REDIS_CLUSTER_NODES';

/** The nodes of the test Redis Cluster in the cluster run, else `undefined`. */
export function clusterNodes(): ClusterNodeAddress[] | undefined {
  const spec = process.env[CLUSTER_NODES_ENV];
  return spec ? parseClusterNodes(spec) : undefined;
}

/** Whether the tests run against a Redis Cluster (`npm run test:cluster`). */
export function onCluster(): boolean {
  return Boolean(process.env[CLUSTER_NODES_ENV]);
}

/** The URL of the test Redis; throws if the Jest global setup did not provide one. */
export function redisUrl(): string {
  if (onCluster()) {
    throw new Error(
      'redisUrl(): this test needs a single-node Redis URL, but it runs against a Redis Cluster ' +
        `(${CLUSTER_NODES_ENV} is set). Use the cluster-aware helpers of test/setup/redis.ts ` +
        '(createTestRedis, reactorRedisOption), or exclude the test from the cluster run in jest.cluster.config.js.',
    );
  }
  const url = process.env.REDIS_URL;
  if (!url) {
    throw new Error(
      'REDIS_URL is not set. It is provided by the Jest global setup (test/setup/global-setup.ts): ' +
        'run the tests with `npm test` / `npx jest`, or set REDIS_URL=redis://host:port yourself.',
    );
  }
  return url;
}

/**
 * A key prefix unique to this call, e.g. `t:my-feature:1a2b3c4d5e6f:`. `name` is reduced to
 * `[A-Za-z0-9_.-]` so the prefix never contains glob characters, hash tags or extra colons.
 */
export function uniquePrefix(name: string): string {
  const safeName = name.replace(/[^A-Za-z0-9_.-]+/g, '-') || 'test';
  return `t:${safeName}:${process.pid.toString(36)}${randomBytes(4).toString('hex')}:`;
}

/**
 * A new client for the test Redis. `maxRetriesPerRequest: null` is what BullMQ requires of the
 * connections it is given. The caller must `quit()` it (e.g. in `afterAll`).
 *
 * In the cluster run it is an ioredis `Cluster` (with `options` as its `redisOptions`), typed as
 * `Redis`: the commands the tests use take one key (or keys of one slot) and route by key; for
 * keyspace-wide reads use {@link scanKeys}, which visits every master.
 */
export function createTestRedis(options: RedisOptions = {}): Redis {
  const nodes = clusterNodes();
  if (nodes) {
    return createClusterClient(nodes, { redisOptions: { maxRetriesPerRequest: null, ...options } }) as unknown as Redis;
  }
  return new Redis(redisUrl(), { maxRetriesPerRequest: null, ...options });
}

/**
 * The module's `redis` option for the test Redis: `{ url }`, or in the cluster run
 * `{ connection: <a new Cluster> }`, which the caller closes after the app (`close()`; a no-op
 * for `{ url }`, whose connections the module owns).
 */
export function reactorRedisOption(): {
  redis: { url: string } | { connection: Cluster };
  close(): Promise<void>;
} {
  const nodes = clusterNodes();
  if (!nodes) return { redis: { url: redisUrl() }, close: async () => undefined };
  const connection = createClusterClient(nodes);
  return {
    redis: { connection },
    close: async () => {
      if (connection.status === 'end') return;
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}

/**
 * A BullMQ `connection` for the test Redis: `{ url }` (BullMQ creates and closes its own
 * connections), or in the cluster run a Cluster, which the caller closes (`close()`) after the
 * BullMQ worker or queue.
 */
export function bullMqConnection(): { connection: { url: string } | Cluster; close(): Promise<void> } {
  const option = reactorRedisOption();
  return { connection: 'url' in option.redis ? option.redis : option.redis.connection, close: option.close };
}

/** The masters of `redis` when it is a Cluster (each a single-node client), else `[redis]`. */
function scanTargets(redis: Redis): Redis[] {
  const cluster = redis as unknown as Partial<Cluster> & { isCluster?: boolean };
  return cluster.isCluster ? (cluster as Cluster).nodes('master') : [redis];
}

/**
 * Every key matching the glob `pattern`: SCAN on the Redis, or on every master of a Cluster.
 */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  if ((redis as { isCluster?: boolean }).isCluster === true) await redis.ping(); // so its masters are known
  const found: string[] = [];
  for (const node of scanTargets(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
  }
  return found;
}

/**
 * Deletes every key that starts with `prefix` (SCAN + UNLINK) and returns how many were deleted.
 * `redis` must not use ioredis's `keyPrefix` option (SCAN results are not prefix-adjusted). On a
 * Cluster every master is scanned and each key unlinked on its own (keys of one node may be in
 * different slots).
 */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<number> {
  if (!prefix) throw new Error('cleanupPrefix: refusing to delete every key (empty prefix)');
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const isCluster = (redis as { isCluster?: boolean }).isCluster === true;
  if (isCluster) await redis.ping(); // connects, so that its masters are known
  let deleted = 0;
  for (const node of scanTargets(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length === 0) continue;
      if (!isCluster) {
        deleted += await node.unlink(...keys);
        continue;
      }
      const pipeline = node.pipeline();
      for (const key of keys) pipeline.unlink(key);
      for (const [error, count] of (await pipeline.exec()) ?? []) {
        if (error) throw error;
        deleted += Number(count);
      }
    } while (cursor !== '0');
  }
  return deleted;
}
