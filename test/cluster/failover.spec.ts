/**
 * A replica takes over a master while runs execute, on a private Redis Cluster of 3 masters with
 * one replica each (this file starts its own).
 *
 * Every run waits between two steps; the master serving the module's BullMQ queue slot (and the
 * shard of half the runs) is then replaced by its replica as the runs go on:
 *
 * - a manual failover (`CLUSTER FAILOVER` on the replica): the master stops taking writes until
 *   the replica has caught up, then they swap roles; nothing is lost, so every step runs once, and
 *   no sweeper is needed.
 * - the master SIGKILLed: its replica is elected after `cluster-node-timeout` (1 s here) plus an
 *   election, about 2 s; meanwhile the commands for its slots wait in the client (the retry
 *   options). Redis replicates asynchronously, so writes the master acknowledged in its last
 *   moments may never reach the replica (a checkpoint, a job added); the runs then repeat a step
 *   (at-least-once) or wait for the sweeper, which recovers them once their lease expires. And a
 *   run whose lease expires during the failover (lease TTL shorter than the failover) is taken
 *   from its execution and its step in flight runs again. With a 5 s lease no step repeated in
 *   our runs (with a 2 s lease, each run of the dead master's shards ran its step in flight twice);
 *   the test asserts every run completed and every step ran at least once, and prints the repeats.
 */
import { Test, type TestingModule } from '@nestjs/testing';
import { ScheduleModule } from '@nestjs/schedule';
import Redis, { type Cluster } from 'ioredis';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { bullMqPrefix } from '../../lib/queue/queue.constants';
import { RedisKeys } from '../../lib/storage/redis/redis.keys';
import { CapturingLogger } from '../nest/fixtures';
import { pollUntil } from '../e2e/e2e.fixtures';
import { uniquePrefix } from '../setup/redis';
import { keySlot } from '../storage/key-slot';
import {
  createClusterClient,
  ownerOfSlot,
  slotOwners,
  startRedisCluster,
  waitUntilClusterReady,
  type PrivateRedisCluster,
} from '../support/redis-cluster';
import { CLUSTER_PROVIDERS, Executions, Hold, MoveReactor, notExactlyOnce, STEPS } from './cluster.fixtures';

const RUNS_IN_SHARD = 15;
const RUNS_ANYWHERE = 15;
const NODE_TIMEOUT_MS = 1_000;

/** An app on a new Cluster connection to `cluster` under `prefix`; `close()` closes both. */
async function startApp(cluster: PrivateRedisCluster, prefix: string, sweeper: boolean) {
  const connection: Cluster = createClusterClient(cluster.nodes);
  const app: TestingModule = await Test.createTestingModule({
    imports: [
      ...(sweeper ? [ScheduleModule.forRoot()] : []),
      ReactorModule.forRoot({
        redis: { connection },
        prefix,
        workerConcurrency: 64,
        // Longer than the failover (about 2 s), so runs keep their lease through it.
        leaseTtlMs: 5_000,
        sweeper: sweeper ? { enabled: true, intervalMs: 1_000 } : { enabled: false },
      }),
    ],
    providers: CLUSTER_PROVIDERS,
  })
    .setLogger(new CapturingLogger())
    .compile();
  await app.init();
  return {
    app,
    client: app.get(ReactorClient),
    executions: app.get(Executions),
    hold: app.get(Hold),
    close: async () => {
      await app.close();
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}

/**
 * Run ids: `inShard` in a shard served by the master at `masterPort` (so their checkpoints see
 * the failover too), `anywhere` more wherever they hash.
 */
async function runIdsOn(
  cluster: PrivateRedisCluster,
  keys: RedisKeys,
  masterPort: number,
  tag: string,
  inShard: number,
  anywhere: number,
): Promise<string[]> {
  const owners = await slotOwners(cluster.nodes[0]);
  const portOf = (slot: number) => owners.find((range) => slot >= range.from && slot <= range.to)?.master.port;
  const shard = Array.from({ length: keys.shards }, (_, s) => s).find(
    (s) => portOf(keySlot(keys.shardBase(s))) === masterPort,
  );
  if (shard === undefined) throw new Error(`no shard on the master at port ${masterPort}`);
  const ids: string[] = [];
  for (let i = 0; ids.length < inShard; i++) if (keys.shardOf(`${tag}-${i}`) === shard) ids.push(`${tag}-${i}`);
  for (let i = 0; i < anywhere; i++) ids.push(`${tag}-anywhere-${i}`);
  return ids;
}

/**
 * The replica of the master at `port`, by `CLUSTER REPLICAS` on that master. After a failover the
 * former master rejoins as the new master's replica a moment later: asked again until it is listed.
 */
async function replicaOf(port: number, timeoutMs = 15_000): Promise<{ host: string; port: number }> {
  const master = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  try {
    const id = String(await master.call('CLUSTER', 'MYID'));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [line] = (await master.call('CLUSTER', 'REPLICAS', id)) as string[];
      const address = /^\S+ ([^:\s]+):(\d+)/.exec(line ?? '');
      if (address) return { host: address[1], port: Number(address[2]) };
      if (Date.now() > deadline) throw new Error(`no replica of the master at port ${port}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    master.disconnect();
  }
}

describe('a Redis Cluster failover while runs execute', () => {
  let cluster: PrivateRedisCluster;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('manual failover (CLUSTER FAILOVER on the replica): every run completes, each step once', async () => {
    const prefix = uniquePrefix('cluster-failover');
    const { client, executions, hold, close } = await startApp(cluster, prefix, false);
    try {
      const keys = new RedisKeys({ prefix, shards: 128 });
      const queueSlot = keySlot(`${bullMqPrefix(prefix)}:x`);
      const master = await ownerOfSlot(cluster.nodes[0], queueSlot);
      const runIds = await runIdsOn(cluster, keys, master.port, 'manual', RUNS_IN_SHARD, RUNS_ANYWHERE);
      for (const runId of runIds) await client.start(MoveReactor, {}, { runId });
      await pollUntil(() => hold.waiting === runIds.length, 20_000);

      const replica = await replicaOf(master.port);
      const promoted = new Redis({ ...replica, maxRetriesPerRequest: 1 });
      try {
        hold.open();
        expect(await promoted.call('CLUSTER', 'FAILOVER')).toBe('OK');
        await pollUntil(async () => /^role:master/m.test(await promoted.info('replication')), 20_000);
      } finally {
        promoted.disconnect();
      }
      const outcomes = await Promise.all(runIds.map((runId) => client.wait(runId, { timeoutMs: 30_000 })));
      expect(outcomes.map((outcome) => outcome.status)).toEqual(runIds.map(() => 'completed'));
      expect(notExactlyOnce(executions, runIds)).toEqual([]);
      // The other nodes learn of the new master by gossip.
      // (While it spreads, a node may list the slot with no owner for a moment: asked again.)
      await pollUntil(
        async () => (await ownerOfSlot(cluster.nodes[0], queueSlot).catch(() => undefined))?.port === replica.port,
        10_000,
      );
    } finally {
      await close();
    }
  }, 90_000);

  it('master killed (SIGKILL): its replica takes over; every run completes, every step at least once', async () => {
    const prefix = uniquePrefix('cluster-kill');
    const { client, executions, hold, close } = await startApp(cluster, prefix, true);
    try {
      const keys = new RedisKeys({ prefix, shards: 128 });
      const queueSlot = keySlot(`${bullMqPrefix(prefix)}:x`);
      const master = await ownerOfSlot(cluster.nodes[0], queueSlot);
      const runIds = await runIdsOn(cluster, keys, master.port, 'kill', RUNS_IN_SHARD, RUNS_ANYWHERE);
      for (const runId of runIds) await client.start(MoveReactor, {}, { runId });
      await pollUntil(() => hold.waiting === runIds.length, 20_000);

      const replica = await replicaOf(master.port);
      // The runs' records are on the replica before the master dies (replication is asynchronous:
      // what it had not received yet is what a failover loses, see README "Redis Cluster"). After the
      // first test the former master may still be syncing as this one's replica.
      const direct = new Redis({ host: '127.0.0.1', port: master.port, maxRetriesPerRequest: 1 });
      try {
        // WAIT counts the replicas that have this client's last write, so write once (in a slot of
        // this master): the replication stream is in order, so they have every earlier write too.
        await direct.set(`${bullMqPrefix(prefix)}:x`, 'sync');
        await pollUntil(async () => Number(await direct.call('WAIT', 1, 1_000)) >= 1, 20_000);
      } finally {
        direct.disconnect();
      }
      const pid = cluster.pids[cluster.nodes.findIndex((node) => node.port === master.port)];
      hold.open();
      process.kill(pid, 'SIGKILL');
      // The survivors elect the replica once the master has been unreachable for cluster-node-timeout.
      const survivors = cluster.nodes.filter((node) => node.port !== master.port).map((node) => node.port);
      await pollUntil(
        async () => (await ownerOfSlot(replica, queueSlot).catch(() => undefined))?.port === replica.port,
        20_000,
      );
      await waitUntilClusterReadyOrDegraded(survivors);

      const outcomes = await Promise.all(runIds.map((runId) => client.wait(runId, { timeoutMs: 45_000 })));
      expect(outcomes.map((outcome) => outcome.status)).toEqual(runIds.map(() => 'completed'));
      const repeated = notExactlyOnce(executions, runIds);
      expect(repeated.filter(([, count]) => count === 0)).toEqual([]);
      process.stderr.write(
        `[failover] master ${master.port} killed, replica ${replica.port} promoted: ${runIds.length} runs ` +
          `completed; steps executed more than once: ${repeated.length} of ${runIds.length * STEPS.length}` +
          (repeated.length ? ` (${repeated.map(([key, count]) => `${key} x${count}`).join(', ')})` : '') +
          '\n',
      );
    } finally {
      await close();
    }
  }, 120_000);
});

/**
 * The surviving nodes say `cluster_state:ok` (every slot served again). The dead master still
 * counts among the known nodes, so {@link waitUntilClusterReady}'s node count is the survivors'
 * plus one.
 */
async function waitUntilClusterReadyOrDegraded(ports: readonly number[]): Promise<void> {
  await waitUntilClusterReady(ports, ports.length + 1, false, 20_000);
}
