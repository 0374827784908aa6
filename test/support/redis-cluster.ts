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

/** A single-node client of `node` (the caller disconnects it). */
function nodeClient(node: ClusterNodeAddress): Redis {
  return new Redis({ host: node.host, port: node.port, maxRetriesPerRequest: 1 });
}

/** The master serving each slot range, from `CLUSTER SLOTS` on `node`. */
export async function slotOwners(
  node: ClusterNodeAddress,
): Promise<Array<{ from: number; to: number; master: ClusterNodeAddress; id: string }>> {
  const client = nodeClient(node);
  try {
    const slots = (await client.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
    return slots.map(([from, to, [host, port, id]]) => ({ from, to, master: { host, port }, id }));
  } finally {
    client.disconnect();
  }
}

/** The master serving `slot`, by `CLUSTER SLOTS` on `node`. */
export async function ownerOfSlot(
  node: ClusterNodeAddress,
  slot: number,
): Promise<ClusterNodeAddress & { id: string }> {
  const owner = (await slotOwners(node)).find((range) => slot >= range.from && slot <= range.to);
  if (!owner) throw new Error(`slot ${slot} has no owner`);
  return { ...owner.master, id: owner.id };
}

/** `CLUSTER KEYSLOT key`. */
export async function keySlotOf(node: ClusterNodeAddress, key: string): Promise<number> {
  const client = nodeClient(node);
  try {
    return Number(await client.call('CLUSTER', 'KEYSLOT', key));
  } finally {
    client.disconnect();
  }
}

/** Options of {@link moveSlot}. */
export interface MoveSlotOptions {
  /**
   * Called once half of the slot's keys are on the target (the slot MIGRATING on the source,
   * IMPORTING on the target): multi-key commands on keys split between the two get `TRYAGAIN`,
   * commands on keys already moved get `ASK`. The move goes on when it resolves.
   */
  midway?: () => Promise<void>;
  /** Keys per MIGRATE. @default 20 */
  batch?: number;
}

/**
 * Move `slot` from its master to `target` (a master of the cluster `masters`), the way
 * `redis-cli --cluster reshard` does: SETSLOT IMPORTING on the target, SETSLOT MIGRATING on the
 * source, MIGRATE its keys in batches (until none are left: clients may still write keys that
 * exist on the source), then SETSLOT NODE on the target, the source and every other master.
 * Returns the number of keys moved (0 when the slot is already on `target`).
 */
export async function moveSlot(
  masters: readonly ClusterNodeAddress[],
  slot: number,
  target: ClusterNodeAddress,
  options: MoveSlotOptions = {},
): Promise<number> {
  const batch = options.batch ?? 20;
  const source = await ownerOfSlot(target, slot);
  if (source.port === target.port && source.host === target.host) return 0;
  const clients = new Map(masters.map((node) => [node.port, nodeClient(node)]));
  const client = (node: ClusterNodeAddress) => {
    const found = clients.get(node.port);
    if (!found) throw new Error(`moveSlot: ${node.host}:${node.port} is not one of the masters given`);
    return found;
  };
  try {
    const targetId = String(await client(target).call('CLUSTER', 'MYID'));
    await client(target).call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id);
    await client(source).call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId);
    let moved = 0;
    const migrate = async (limit: number): Promise<number> => {
      const keys = (await client(source).call('CLUSTER', 'GETKEYSINSLOT', slot, limit)) as string[];
      if (keys.length === 0) return 0;
      // IOERR: the source's cached connection to the target timed out or was closed under load
      // (Redis drops the cached socket on it). Sent again with REPLACE, since the target may hold
      // keys of the batch already; the source stays authoritative while the slot is MIGRATING.
      // Up to 6 attempts, a growing pause between them: three in a row failed once in a CI run
      // on a loaded 2-core machine.
      for (let attempt = 1; ; attempt++) {
        try {
          const replace = attempt > 1 ? ['REPLACE'] : [];
          await client(source).call('MIGRATE', target.host, target.port, '', 0, 10_000, ...replace, 'KEYS', ...keys);
          break;
        } catch (error) {
          if (attempt >= 6 || !String((error as Error).message).startsWith('IOERR')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        }
      }
      moved += keys.length;
      return keys.length;
    };
    const count = Number(await client(source).call('CLUSTER', 'COUNTKEYSINSLOT', slot));
    for (let left = Math.floor(count / 2); left > 0;) {
      const done = await migrate(Math.min(batch, left));
      if (done === 0) break;
      left -= done;
    }
    await options.midway?.();
    while ((await migrate(batch)) > 0);
    await client(target).call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
    await client(source).call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
    for (const node of masters) {
      if (node.port === target.port || node.port === source.port) continue;
      await client(node).call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
    }
    return moved;
  } finally {
    for (const c of clients.values()) c.disconnect();
  }
}
