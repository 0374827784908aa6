/** Options of {@link RedisKeys}. */
export interface RedisKeysOptions {
  /**
   * First segment of every key. Must not contain `{` or `}` (they would move the hash tag).
   * @default 'reactor'
   */
  prefix?: string;
  /**
   * Number of shards runs are spread over. Fixed per deployment: changing it moves every run to
   * another key, so existing runs become unreachable.
   * @default 16
   */
  shards?: number;
}

/** Logical lease name the engine uses for a run's liveness lease. */
const RUN_LEASE_PATTERN = /^run:(.+)$/s;

/**
 * The only place Redis keys are built.
 *
 * ## Layout (cluster-ready by sharding)
 *
 * A checkpoint must update the run's record, its lease and an index of non-terminal runs in one
 * Lua script, so on Redis Cluster those keys must live in one hash slot. A single global index
 * cannot share a slot with every run, and one index per run is no index. So runs are spread over
 * `shards` (default 16) shards, `shard = fnv1a32(runId) mod shards`, and everything a run's scripts
 * touch carries the shard's hash tag `{<prefix>:s<shard>}`:
 *
 * ```
 * <prefix>:{<prefix>:s<shard>}:run:<runId>     HASH  state (JSON), status, terminal ("1"/"0"), broken
 * <prefix>:{<prefix>:s<shard>}:lease:<runId>   STRING lease token, PX = lease TTL
 * <prefix>:{<prefix>:s<shard>}:active          ZSET  non-terminal run ids, score = updatedAt (ms)
 * ```
 *
 * Sweepers read the `shards` indexes ({@link allActiveIndexKeys}) and merge them: O(in-flight),
 * never a keyspace scan. Sixteen shards spread the indexes over up to sixteen cluster nodes; a
 * run's keys never straddle slots.
 *
 * Coordination keys are tagged by their own name, `<prefix>:{<kind>:<name>}[:<part>]`, so the
 * keys of one lock / semaphore / rate limit share a slot independently of any run. Sweep guards:
 * `<prefix>:{sweep:<name>}:guard`.
 *
 * NOTE: the hash is FNV-1a (32-bit) over the UTF-8 bytes of the run id: stable across processes,
 * Node versions and platforms. Never change it or `shards` under live data.
 */
export class RedisKeys {
  /** First segment of every key. */
  readonly prefix: string;
  /** Number of run shards. */
  readonly shards: number;

  constructor(options: RedisKeysOptions = {}) {
    const prefix = options.prefix ?? 'reactor';
    const shards = options.shards ?? 16;
    if (prefix === '' || /[{}]/.test(prefix)) {
      throw new RangeError(`RedisKeys prefix must be non-empty and contain no '{' or '}', got '${prefix}'.`);
    }
    if (!Number.isInteger(shards) || shards < 1 || shards > 16384) {
      throw new RangeError(`RedisKeys shards must be an integer from 1 to 16384, got ${String(shards)}.`);
    }
    this.prefix = prefix;
    this.shards = shards;
  }

  /** The shard of `runId`: FNV-1a 32-bit of its UTF-8 bytes, modulo {@link shards}. */
  shardOf(runId: string): number {
    let hash = 0x811c9dc5;
    for (const byte of Buffer.from(runId, 'utf8')) {
      hash ^= byte;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash % this.shards;
  }

  /** Hash-tagged base of shard `shard`: `<prefix>:{<prefix>:s<shard>}`. */
  shardBase(shard: number): string {
    return `${this.prefix}:{${this.prefix}:s${shard}}`;
  }

  /** The run's record (HASH). */
  runKey(runId: string): string {
    return `${this.shardBase(this.shardOf(runId))}:run:${runId}`;
  }

  /** The run's liveness lease (STRING token with PX), in the run's slot. */
  leaseKey(runId: string): string {
    return `${this.shardBase(this.shardOf(runId))}:lease:${runId}`;
  }

  /** Index of the non-terminal runs of `shard` (ZSET, score = updatedAt ms). */
  activeIndexKey(shard: number): string {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.shards) {
      throw new RangeError(`Shard ${shard} is out of range 0..${this.shards - 1}.`);
    }
    return `${this.shardBase(shard)}:active`;
  }

  /** The active index of the shard `runId` lives in. */
  activeIndexKeyOf(runId: string): string {
    return this.activeIndexKey(this.shardOf(runId));
  }

  /** Every shard's active index, shard 0 first. */
  allActiveIndexKeys(): string[] {
    return Array.from({ length: this.shards }, (_, shard) => this.activeIndexKey(shard));
  }

  /**
   * A further key of run `runId` (map metadata, step records, ...), in the run's slot:
   * `<shardBase>:run:<runId>:<part>[:<part>...]`.
   */
  runScopedKey(runId: string, ...parts: string[]): string {
    return [this.runKey(runId), ...parts].join(':');
  }

  /**
   * A coordination key, tagged by its own name: `<prefix>:{<kind>:<name>}[:<part>...]`. All parts
   * of one primitive (a semaphore's list and held set, ...) share a slot.
   */
  coordinationKey(kind: string, name: string, ...parts: string[]): string {
    return [`${this.prefix}:{${kind}:${name}}`, ...parts].join(':');
  }

  /** A generic lock / lease: `<prefix>:{lock:<name>}`. */
  lockKey(name: string): string {
    return this.coordinationKey('lock', name);
  }

  /** The guard that makes one replica sweep per interval: `<prefix>:{sweep:<name>}:guard`. */
  sweepGuardKey(name: string): string {
    return this.coordinationKey('sweep', name, 'guard');
  }

  /**
   * Physical key of a logical lease name given to the LockManager. The run lease `run:<runId>`
   * maps to {@link leaseKey} so that `checkpoint-3.lua` can check it in the run's slot; any other
   * name maps to {@link lockKey}.
   */
  physicalLeaseKey(logicalKey: string): string {
    const run = RUN_LEASE_PATTERN.exec(logicalKey);
    return run ? this.leaseKey(run[1]) : this.lockKey(logicalKey);
  }
}
