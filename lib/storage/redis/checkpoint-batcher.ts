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
 * Most runs one `checkpoint-n.lua` call carries. A full call is sent at once, before the turn ends,
 * so Redis writes it while Node runs the next runs' steps: one call of every run in the turn made
 * the two take turns (Node idle a third of the time at 50 runs in flight), and 8 measured best at
 * 50 and 100 runs in flight (`npm run bench -- user`: about 1.7x the steps/s of 128 at 50).
 */
export const MAX_RUNS_PER_COMMIT = 8;

/**
 * Fewest runs a call is sent at once with. A call is full, and sent at once, when it holds a third
 * of the runs whose calls are in flight (unanswered), at least this many and at most
 * {@link MAX_RUNS_PER_COMMIT}; runs left in a call that is not full go when the turn's microtasks
 * are done. With few runs in flight, calls of 8 made Redis and Node take turns as one call did at
 * 50 (Node idle a quarter of the time at 10 runs in flight); smaller calls while little is in
 * flight keep both busy: 10-40% more steps/s at 5 and 10 runs in flight, the same at 20 to 100
 * (DD-speed22-16).
 */
export const MIN_RUNS_PER_COMMIT = 2;

/** A call is full at this share of the runs in flight (a third: a half and a quarter measured worse). */
const IN_FLIGHT_SHARE = 3;

/**
 * Group commit of run checkpoints. The checkpoints submitted in one turn of the event loop (the
 * runs whose steps finished together, typically because one socket read resolved their previous
 * writes) are sent together, up to {@link MAX_RUNS_PER_COMMIT} per `checkpoint-n.lua` call (a call
 * sent at once when full, as {@link MIN_RUNS_PER_COMMIT} says; the rest after the current
 * microtasks), instead of one call each: one command to build, one socket write and one reply to
 * parse for several of them. Each run is still fenced and written on its own inside the script, and
 * each caller gets its own run's answer (or error); a failure of the call itself (the connection)
 * fails every run in it.
 *
 * Groups: on a standalone server every run can share a call; on a cluster only the runs of one
 * shard (one hash slot) can, so the caller groups by shard.
 */
export class CheckpointBatcher {
  private batches = new Map<number, Batch>();
  private scheduled = false;
  /** Runs in calls sent and not answered yet. */
  private inFlight = 0;

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
      if (batch.waiters.length >= this.fullAt()) {
        // Full: sent now, so Redis writes it while the next runs' steps run here.
        this.batches.delete(group);
        this.send(batch);
      } else if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(this.flush);
      }
    });
  }

  /** How many runs make a call full (see {@link MIN_RUNS_PER_COMMIT}). */
  private fullAt(): number {
    return Math.min(MAX_RUNS_PER_COMMIT, Math.max(MIN_RUNS_PER_COMMIT, Math.ceil(this.inFlight / IN_FLIGHT_SHARE)));
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batches = this.batches;
    this.batches = new Map();
    for (const batch of batches.values()) this.send(batch);
  };

  private send(batch: Batch): void {
    const { waiters } = batch;
    const runs = waiters.length;
    batch.args[1] = runs;
    this.inFlight += runs;
    runScript(this.redis, 'checkpoint', batch.keys, batch.args).then(
      (reply) => {
        this.inFlight -= runs;
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
        this.inFlight -= runs;
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }
}
