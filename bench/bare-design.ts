/**
 * The bare design, with no engine: what nest-reactor's durable path does at its least. One BullMQ
 * job per run (added by the caller after a create script), its steps inline in the job, one fenced
 * delta-checkpoint script per step (lease check or take, HSET of the step's result and a small
 * header, PEXPIRE of the record and the lease, ZADD to the index of active runs) and a final
 * script (status, ZREM, lease released). This is the floor the engine is measured against, in the
 * user's path (bench/user-path.bench.ts) and in worker scaling (bench/scaling.bench.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';
import Redis from 'ioredis';

const BARE_CREATE = `
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("HSET", KEYS[1], "state", ARGV[1], "inputs", ARGV[2], "status", "pending", "terminal", "0")
redis.call("PEXPIRE", KEYS[1], ARGV[3])
redis.call("ZADD", KEYS[2], ARGV[4], ARGV[5])
return 1`;
const BARE_LEASE = `
local holder = redis.call("GET", KEYS[2])
if not holder then
  redis.call("SET", KEYS[2], ARGV[1], "PX", ARGV[2])
elseif holder ~= ARGV[1] then
  return -1
end`;
const BARE_STEP = `${BARE_LEASE}
redis.call("HSET", KEYS[1], ARGV[6], ARGV[7], "state", ARGV[8], "status", "running")
redis.call("PEXPIRE", KEYS[1], ARGV[3])
redis.call("PEXPIRE", KEYS[2], ARGV[2])
redis.call("ZADD", KEYS[3], ARGV[4], ARGV[5])
return 1`;
const BARE_FINAL = `${BARE_LEASE}
redis.call("HSET", KEYS[1], "state", ARGV[6], "status", "completed", "terminal", "1")
redis.call("PEXPIRE", KEYS[1], ARGV[3])
redis.call("ZREM", KEYS[3], ARGV[5])
redis.call("DEL", KEYS[2])
return 1`;

type BareRedis = Redis & {
  bareCreate(...args: (string | number)[]): Promise<number>;
  bareStep(...args: (string | number)[]): Promise<number>;
  bareFinal(...args: (string | number)[]): Promise<number>;
};

/** How long a record is kept, and a lease held. */
const TTL_MS = 24 * 60 * 60 * 1000;
const LEASE_TTL_MS = 30_000;

/** The bare design's store: its scripts on one connection, its keys under `prefix`. */
export class BareStore {
  private readonly redis: BareRedis;
  private readonly index: string;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: null }) as BareRedis;
    this.redis.defineCommand('bareCreate', { numberOfKeys: 2, lua: BARE_CREATE });
    this.redis.defineCommand('bareStep', { numberOfKeys: 3, lua: BARE_STEP });
    this.redis.defineCommand('bareFinal', { numberOfKeys: 3, lua: BARE_FINAL });
    this.index = `${prefix}:bare:active`;
  }

  /** Start a run: its record created, then its job added to `queue` (`data`: `{ run, seed }`). */
  async start(queue: Queue, reactor: string, seed: number): Promise<void> {
    const run = randomUUID();
    const now = Date.now();
    const header = JSON.stringify({ id: run, reactor, status: 'pending', createdAt: now });
    await this.redis.bareCreate(this.record(run), this.index, header, JSON.stringify({ seed }), TTL_MS, now, run);
    await queue.add('run', { run, seed }, { removeOnComplete: true });
  }

  /**
   * A BullMQ processor that executes a run of `length` steps inline: `step(seed, i)` computes step
   * `i`'s result, checkpointed by one fenced script; then the final script.
   */
  processor(length: number, step: (seed: number, i: number) => unknown): (job: Job) => Promise<void> {
    return async (job) => {
      const { run, seed } = job.data as { run: string; seed: number };
      const record = this.record(run);
      const lease = `${record}:lease`;
      const token = randomUUID();
      for (let i = 0; i < length; i++) {
        const result = JSON.stringify(step(seed, i));
        const now = Date.now();
        const header = JSON.stringify({ status: 'running', step: i, updatedAt: now });
        const written = await this.redis.bareStep(
          record,
          lease,
          this.index,
          token,
          LEASE_TTL_MS,
          TTL_MS,
          now,
          run,
          `r:${i}`,
          result,
          header,
        );
        if (written !== 1) throw new Error('lease lost');
      }
      const header = JSON.stringify({ status: 'completed', updatedAt: Date.now() });
      await this.redis.bareFinal(record, lease, this.index, token, LEASE_TTL_MS, TTL_MS, 0, run, header);
    };
  }

  disconnect(): void {
    this.redis.disconnect();
  }

  private record(run: string): string {
    return `${this.prefix}:bare:{${run}}`;
  }
}
