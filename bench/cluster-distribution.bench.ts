/**
 * How evenly runs spread over the masters of a Redis Cluster (issue 15), computed from the key
 * layout: each run's shard hash tag -> its slot (`cluster-key-slot`, the CRC16 ioredis uses) -> the
 * master holding it in the slot split `redis-cli --cluster create` makes for 3 masters
 * (0-5460, 5461-10922, 10923-16383). No Redis needed: the placement is a pure function of the keys.
 *
 * `npm run bench -- cluster`
 */
import { randomUUID } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { RedisKeys } from '../lib/storage/redis/redis.keys';
import { bullMqPrefix } from '../lib/queue/queue.constants';

const RUNS = 10_000;
const MASTERS = [5460, 10922, 16383]; // last slot of each master

function masterOf(slot: number): number {
  return MASTERS.findIndex((last) => slot <= last);
}

export interface DistributionRow {
  shards: number;
  prefix: string;
  shardsPerMaster: number[];
  busiestShare: number;
}

export function clusterDistribution(): DistributionRow[] {
  const ids = Array.from({ length: RUNS }, () => randomUUID());
  const rows: DistributionRow[] = [];
  for (const shards of [16, 128]) {
    for (const prefix of ['reactor', 'app', 'orders']) {
      const keys = new RedisKeys({ prefix, shards });
      const shardsPerMaster = [0, 0, 0];
      for (let s = 0; s < shards; s++) shardsPerMaster[masterOf(calculateSlot(keys.activeIndexKey(s)))]++;
      const runsPerMaster = [0, 0, 0];
      for (const id of ids) runsPerMaster[masterOf(calculateSlot(keys.runKey(id)))]++;
      rows.push({ shards, prefix, shardsPerMaster, busiestShare: Math.max(...runsPerMaster) / RUNS });
    }
  }
  return rows;
}

export function printClusterDistribution(rows: DistributionRow[]): void {
  console.log(`\n## Runs over the 3 masters of a Redis Cluster (${RUNS} random run ids per row)\n`);
  console.log('| shards | prefix | shards per master | busiest master, share of runs |');
  console.log('| --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(
      `| ${r.shards} | ${r.prefix} | ${r.shardsPerMaster.join(' / ')} | ${(r.busiestShare * 100).toFixed(1)}% |`,
    );
  }
  const queues = ['default', 'imports', 'mail', 'billing'];
  const slots = queues.map((q) => calculateSlot(`${bullMqPrefix('reactor', q === 'default' ? undefined : q)}:x`));
  console.log(
    `\nBullMQ queues (prefix 'reactor'): ${queues.map((q, i) => `${q} -> slot ${slots[i]} (master ${masterOf(slots[i]) + 1})`).join(', ')}.`,
  );
}
