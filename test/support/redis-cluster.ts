/**
 * A private Redis Cluster for tests: `masters` (default 3) `redis-server`s started from PATH on
 * free ports with `cluster-enabled yes` (each through {@link startRedisServer}: its own temp dir,
 * no persistence), `replicasPerMaster` more as their replicas, joined by
 * `redis-cli --cluster create ... --cluster-yes`, and ready once every node reports
 * `cluster_state:ok` and knows every other node, and every replica's link to its master is up
 * (CLUSTER INFO / INFO replication polled: a readiness check, not a sleep). Stopped by pid.
 *
 * A detached watchdog kills the nodes if the process that started them dies without stopping them
 * (a `kill -9` of Jest, a Ctrl-C): nodes never outlive the test run.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import Redis, { Cluster, type ClusterOptions } from 'ioredis';
import { startRedisServer, type PrivateRedisServer } from './redis-server';

const execFileAsync = promisify(execFile);

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** Masters the 16384 slots are split over. @default 3 */
  masters?: number;
  /** Replicas of each master. @default 0 */
  replicasPerMaster?: number;
  /** `cluster-node-timeout`: how long a master may be unreachable before a replica takes over. @default 2000 */
  nodeTimeoutMs?: number;
  /** How long the cluster may take to be ready. @default 30000 */
  readyTimeoutMs?: number;
}

/** A node of a running private cluster. */
export interface ClusterNodeAddress {
  readonly host: string;
  readonly port: number;
}

/** A running private cluster. */
export interface PrivateRedisCluster {
  /** Every node (masters first, in the order `redis-cli` was given them). */
  readonly nodes: readonly ClusterNodeAddress[];
  /** `host:port,host:port,...` of every node (the form of `REDIS_CLUSTER_NODES`). */
  readonly spec: string;
  /** The pids of the nodes, in the order of {@link nodes}. */
  readonly pids: readonly number[];
  /** SIGTERM every node still running, wait for them, remove their files. */
  stop(): Promise<void>;
}

/**
 * Options for an ioredis `Cluster` that rides out a short slot move and a failover:
 * `maxRetriesPerRequest: null` (BullMQ needs it), TRYAGAIN retried every 100 ms, up to 64
 * redirections (MOVED/ASK/TRYAGAIN) per command, a MOVED retried right away after the slot map is
 * refreshed, and a command that finds its node down retried after 300 ms (a failover takes about
 * `cluster-node-timeout` plus an election). This is what the README recommends.
 */
export const CLUSTER_CLIENT_OPTIONS: ClusterOptions = {
  redisOptions: { maxRetriesPerRequest: null },
  retryDelayOnTryAgain: 100,
  retryDelayOnMoved: 0,
  retryDelayOnClusterDown: 300,
  retryDelayOnFailover: 300,
  maxRedirections: 64,
};

/** Start a cluster; see the file's comment. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<PrivateRedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 0;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
  const total = masters * (1 + replicas);
  const servers: PrivateRedisServer[] = [];
  const stopAll = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    const started = await Promise.allSettled(
      Array.from({ length: total }, () =>
        startRedisServer([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          // A replica takes over however long its link was down (the test kills masters at will).
          '--cluster-replica-validity-factor',
          '0',
        ]),
      ),
    );
    for (const result of started) if (result.status === 'fulfilled') servers.push(result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    watchdog(servers.map((server) => server.pid));

    const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
    await execFileAsync(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes'],
      { timeout: 30_000 },
    ).catch((error: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(
        `redis-cli --cluster create failed: ${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`,
      );
    });
    await waitUntilClusterReady(
      servers.map((server) => server.port),
      total,
      replicas > 0,
      options.readyTimeoutMs ?? 30_000,
    );
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })),
    spec: servers.map((server) => `127.0.0.1:${server.port}`).join(','),
    pids: servers.map((server) => server.pid),
    stop: stopAll,
  };
}

/**
 * Resolve once every node (by port) says `cluster_state:ok`, knows `total` nodes and has every
 * slot assigned, and (with replicas) every replica's link to its master is up.
 */
export async function waitUntilClusterReady(
  ports: readonly number[],
  total: number,
  withReplicas: boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const clients = ports.map(
    (port) => new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 }),
  );
  let last = '';
  try {
    for (;;) {
      const states = await Promise.all(clients.map((client) => nodeReady(client, total, withReplicas)));
      const notReady = states.filter((state) => state !== 'ok');
      if (notReady.length === 0) return;
      last = notReady.join('; ');
      if (Date.now() > deadline) throw new Error(`Redis Cluster not ready within ${timeoutMs} ms: ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    for (const client of clients) client.disconnect();
  }
}

async function nodeReady(client: Redis, total: number, withReplicas: boolean): Promise<string> {
  const port = client.options.port;
  try {
    const info = String(await client.call('CLUSTER', 'INFO'));
    const field = (name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
    if (field('cluster_state') !== 'ok') return `${port}: cluster_state ${field('cluster_state')}`;
    if (field('cluster_known_nodes') !== String(total)) return `${port}: knows ${field('cluster_known_nodes')} nodes`;
    if (field('cluster_slots_ok') !== '16384') return `${port}: ${field('cluster_slots_ok')} slots ok`;
    if (withReplicas) {
      const replication = await client.info('replication');
      if (/^role:slave/m.test(replication) && !/^master_link_status:up/m.test(replication)) {
        return `${port}: replica link down`;
      }
    }
    return 'ok';
  } catch (error) {
    return `${port}: ${(error as Error).message}`;
  }
}

/** `host:port,host:port` to cluster startup nodes. */
export function parseClusterNodes(spec: string): ClusterNodeAddress[] {
  return spec
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.lastIndexOf(':');
      const port = Number(entry.slice(colon + 1));
      if (colon <= 0 || !Number.isInteger(port)) {
        throw new Error(`REDIS_CLUSTER_NODES: '${entry}' is not host:port (in '${spec}')`);
      }
      return { host: entry.slice(0, colon), port };
    });
}

/** A new ioredis Cluster on `nodes` with {@link CLUSTER_CLIENT_OPTIONS} (plus `options`). */
export function createClusterClient(
  nodes: readonly ClusterNodeAddress[],
  options: Omit<ClusterOptions, 'redisOptions'> & { redisOptions?: ClusterOptions['redisOptions'] } = {},
): Cluster {
  return new Cluster(
    nodes.map((node) => ({ ...node })),
    {
      ...CLUSTER_CLIENT_OPTIONS,
      ...options,
      redisOptions: { ...CLUSTER_CLIENT_OPTIONS.redisOptions, ...options.redisOptions },
    },
  );
}

/**
 * A detached shell that SIGKILLs `pids` once this process is gone (it exits by itself, within
 * ~1 s, once they are all gone). Stopping them normally makes it exit too.
 */
function watchdog(pids: readonly number[]): void {
  const script =
    'parent=$1; shift; ' +
    'alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }; ' +
    'while kill -0 "$parent" 2>/dev/null && alive "$@"; do sleep 1; done; ' +
    'kill -0 "$parent" 2>/dev/null || for p in "$@"; do kill -9 "$p" 2>/dev/null; done; exit 0';
  try {
    const sh = spawn('sh', ['-c', script, 'sh', String(process.pid), ...pids.map(String)], {
      stdio: 'ignore',
      detached: true,
    });
    sh.on('error', () => undefined);
    sh.unref();
  } catch {
    // no `sh`: stop() still stops the nodes on a normal exit
  }
}
