import { runScript, type RedisConnection } from './redis-scripts';

/** A caller waiting for its run's answer in a group commit. */
interface Pending {
  resolve(result: number): void;
  reject(error: unknown): void;
}

interface Batch {
  keys: string[];
  args: Array<string | number>;
  waiters: Pending[];
}

/**
 * Most runs one `checkpoint-n.lua` call carries. A full batch is sent at once, before the turn
 * ends, so Redis writes it while Node runs the next runs' steps: one batch of every run in the turn
 * made the two take turns (Node idle a third of the time at 50 runs in flight), and 8 measured best
 * (`npm run bench -- user`: about 1.7x the steps/s of 128 at worker concurrency 50).
 */
export const MAX_RUNS_PER_COMMIT = 8;

/**
 * Group commit of run checkpoints. The checkpoints submitted in one turn of the event loop (the
 * runs whose steps finished together, typically because one socket read resolved their previous
 * writes) are sent together, up to {@link MAX_RUNS_PER_COMMIT} per `checkpoint-n.lua` call (a full
 * batch at once, the rest after the current microtasks), instead of one call each: one command to
 * build, one socket write and one reply to parse for several of them. Each run is still fenced and written on its own inside the script, and each caller gets its
 * own run's answer (or error); a failure of the call itself (the connection) fails every run in it.
 *
 * Groups: on a standalone server every run can share a call; on a cluster only the runs of one
 * shard (one hash slot) can, so the caller groups by shard.
 */
export class CheckpointBatcher {
  private batches = new Map<number, Batch>();
  private scheduled = false;

  constructor(
    private readonly redis: RedisConnection,
    /** ARGV[1] of every call: how long the reactors' runs indexes keep a run (see `checkpoint-n.lua`). */
    private readonly windowMs: number,
  ) {}

  /**
   * Queue one run's checkpoint in `group`: its `keys` (3, or 4 for a create) and its block of
   * arguments (see `checkpoint-n.lua`: one packed string, or the arguments one by one). Resolves
   * with the script's answer for this run; rejects with its error.
   */
  submit(group: number, keys: readonly string[], block: ReadonlyArray<string | number>): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let batch = this.batches.get(group);
      if (batch === undefined) {
        batch = { keys: [], args: [this.windowMs, 0], waiters: [] };
        this.batches.set(group, batch);
      }
      for (let i = 0; i < keys.length; i++) batch.keys.push(keys[i]);
      for (let i = 0; i < block.length; i++) batch.args.push(block[i]);
      batch.waiters.push({ resolve, reject });
      if (batch.waiters.length >= MAX_RUNS_PER_COMMIT) {
        // Full: sent now, so Redis writes it while the next runs' steps run here.
        this.batches.delete(group);
        this.send(batch);
      } else if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(this.flush);
      }
    });
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batches = this.batches;
    this.batches = new Map();
    for (const batch of batches.values()) this.send(batch);
  };

  private send(batch: Batch): void {
    const { waiters } = batch;
    batch.args[1] = waiters.length;
    runScript(this.redis, 'checkpoint', batch.keys, batch.args).then(
      (reply) => {
        const answers = reply as unknown[];
        for (let i = 0; i < waiters.length; i++) {
          const answer = Array.isArray(answers) ? answers[i] : answers;
          if (typeof answer === 'number') waiters[i].resolve(answer);
          else
            waiters[i].reject(
              answer instanceof Error ? answer : new Error(`checkpoint-n.lua answered ${String(answer)}`),
            );
        }
      },
      (error: unknown) => {
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }
}
