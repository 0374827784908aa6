/**
 * A slot move while runs execute, on a private 3-master Redis Cluster (this file starts its own, so
 * moving slots cannot disturb the other files of the cluster run).
 *
 * The slot of the module's BullMQ queue and the slot of one run shard are moved to another master
 * the way `redis-cli --cluster reshard` moves them (IMPORTING / MIGRATING, MIGRATE in batches,
 * SETSLOT NODE everywhere) while every run is between two steps: for 3 s half the keys of each
 * slot are on the new master, so the runs' checkpoints (one Lua script over the shard's keys) and
 * BullMQ's scripts (over the queue's keys) get `ASK` and `TRYAGAIN` answers, which the cluster
 * client's retry options must ride out (the README's: `retryDelayOnTryAgain: 100`,
 * `maxRedirections: 64`, 6.4 s; with ioredis's default of 16 redirections, 1.6 s, jobs are lost
 * and this test's runs stall). No sweeper runs: nothing may be lost for it to recover, and no
 * worker crashes, so every step must execute exactly once.
 */
import { Test, type TestingModule } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
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
  moveSlot,
  ownerOfSlot,
  startRedisCluster,
  type ClusterNodeAddress,
  type PrivateRedisCluster,
} from '../support/redis-cluster';
import { CLUSTER_PROVIDERS, Executions, Hold, MoveReactor, notExactlyOnce } from './cluster.fixtures';

/** Run `part` of the teardown, waiting at most 30 s for it (saying so on stderr when it is slower). */
async function bounded(part: string, run: () => Promise<unknown> | undefined): Promise<void> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), 30_000)));
  const outcome = await Promise.race([Promise.resolve(run()).then(() => 'done' as const), late]);
  clearTimeout(timer);
  const ms = Date.now() - started;
  if (outcome === 'late') process.stderr.write(`[cluster-move] teardown: ${part} not done after ${ms} ms; going on\n`);
  else if (ms > 5_000) process.stderr.write(`[cluster-move] teardown: ${part} took ${ms} ms\n`);
}

/** Runs in the shard whose slot moves, and runs anywhere. */
const IN_MOVED_SHARD = 20;
const ANYWHERE = 20;
/** How long the slots stay half moved, with the runs going on (more than ioredis's default budget of 1.6 s). */
const HALF_MOVED_MS = 3_000;

describe('a Redis Cluster slot move while runs execute', () => {
  const prefix = uniquePrefix('cluster-move');
  let cluster: PrivateRedisCluster;
  let connection: Cluster;
  let app: TestingModule;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
    connection = createClusterClient(cluster.nodes);
    app = await Test.createTestingModule({
      imports: [
        // Every run waits in `hold` at once, so the worker takes them all.
        ReactorModule.forRoot({ redis: { connection }, prefix, sweeper: { enabled: false }, workerConcurrency: 64 }),
      ],
      providers: CLUSTER_PROVIDERS,
    })
      .setLogger(new CapturingLogger())
      .compile();
    await app.init();
  }, 60_000);

  // Closing the app (its BullMQ worker and queues on the cluster), the client and three servers
  // takes about 0.1 s here; twice, in runs on a loaded machine, it did not end within Jest's hook
  // timeout (30 s, then 90 s). Each part is given 30 s and said to stderr when it takes longer,
  // then the next goes on (the servers are stopped whatever the app does), so a hang names its part.
  afterAll(async () => {
    await bounded('app.close()', () => app?.close());
    await bounded('the client quit', () => connection?.quit().catch(() => connection.disconnect()));
    await bounded('the cluster stop', () => cluster?.stop());
  }, 120_000);

  it("moves the queue's slot and a run shard's slot mid-run: every run completes, each step once", async () => {
    const client = app.get(ReactorClient);
    const executions = app.get(Executions);
    const hold = app.get(Hold);
    const keys = new RedisKeys({ prefix, shards: 128 });

    // Run ids: some in one shard (whose slot moves), the others wherever they hash.
    const shard = keys.shardOf('cluster-move-0');
    const runIds: string[] = [];
    for (let i = 0; runIds.length < IN_MOVED_SHARD; i++) {
      if (keys.shardOf(`cluster-move-${i}`) === shard) runIds.push(`cluster-move-${i}`);
    }
    for (let i = 0; i < ANYWHERE; i++) runIds.push(`cluster-anywhere-${i}`);
    const queueSlot = keySlot(`${bullMqPrefix(prefix)}:x`);
    const shardSlot = keySlot(keys.runKey(runIds[0]));
    expect(queueSlot).not.toBe(shardSlot);

    for (const runId of runIds) {
      expect((await client.start(MoveReactor, {}, { runId })).status).toBe('dispatched');
    }
    await pollUntil(() => hold.waiting === runIds.length, 20_000);

    // Each slot goes to a master that does not serve it now.
    const masters = cluster.nodes;
    const elsewhere = async (slot: number): Promise<ClusterNodeAddress> => {
      const owner = await ownerOfSlot(masters[0], slot);
      return masters.find((node) => node.port !== owner.port)!;
    };
    const queueTarget = await elsewhere(queueSlot);
    const shardTarget = await elsewhere(shardSlot);

    // Both moves stop half way; once both are there, the runs go on for HALF_MOVED_MS, then the moves finish.
    let halfway = 0;
    let releaseMoves!: () => void;
    const bothHalfway = new Promise<void>((resolve) => (releaseMoves = resolve));
    const midway = async () => {
      if (++halfway === 2) {
        hold.open();
        await new Promise((resolve) => setTimeout(resolve, HALF_MOVED_MS));
        releaseMoves();
      }
      await bothHalfway;
    };
    const [queueKeysMoved, shardKeysMoved] = await Promise.all([
      moveSlot(masters, queueSlot, queueTarget, { midway, batch: 5 }),
      moveSlot(masters, shardSlot, shardTarget, { midway, batch: 5 }),
    ]);
    expect(queueKeysMoved).toBeGreaterThan(0);
    expect(shardKeysMoved).toBeGreaterThan(0);
    for (const node of masters) {
      expect((await ownerOfSlot(node, queueSlot)).port).toBe(queueTarget.port);
      expect((await ownerOfSlot(node, shardSlot)).port).toBe(shardTarget.port);
    }

    const outcomes = await Promise.all(runIds.map((runId) => client.wait(runId, { timeoutMs: 30_000 })));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(runIds.map(() => 'completed'));
    const notOnce = notExactlyOnce(executions, runIds);
    expect(notOnce).toEqual([]);
  }, 90_000);
});
