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
   * @default 128 ({@link DEFAULT_SHARDS})
   */
  shards?: number;
}

/**
 * Default number of run shards: 128 hash tags spread runs evenly over the masters of a Redis
 * Cluster (16 left one master of three with up to 56% of runs), and the sweepers' index reads stay
 * one pipelined round trip.
 */
export const DEFAULT_SHARDS = 128;

/** Logical lease name the engine uses for a run's liveness lease. */
const RUN_LEASE_PATTERN = /^run:(.+)$/s;
/** Logical lease name of a map element: `mapel:<mapId>:<index>` (see `elementLeaseKey`). */
const ELEMENT_LEASE_PATTERN = /^mapel:(.+):(\d+)$/s;

/** `<reactor>:<id>`, each URI-encoded (no `{`, `}` or `:` left in either). */
function reactorScopedName(reactorName: string, id: string): string {
  return `${encodeURIComponent(reactorName)}:${encodeURIComponent(id)}`;
}

/**
 * The keys of one fan-out map, by part (see {@link RedisKeys.mapKey} and `RedisMapStore` for
 * what each holds).
 */
export type MapKeyPart =
  | 'meta'
  | 'counters'
  | 'inputs'
  | 'records'
  | 'statuses'
  | 'states'
  | 'rollback'
  | 'rollback-order'
  | 'rollback-outcomes';

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
 * <prefix>:{<prefix>:s<shard>}:run:<runId>          HASH  state (JSON), status, terminal ("1"/"0"), broken
 * <prefix>:{<prefix>:s<shard>}:lease:<runId>        STRING lease token, PX = lease TTL
 * <prefix>:{<prefix>:s<shard>}:active               ZSET  non-terminal run ids, score = updatedAt (ms)
 * <prefix>:{<prefix>:s<shard>}:map:<mapId>:<part>   a fan-out map's keys (see `RedisMapStore`)
 * <prefix>:{<prefix>:s<shard>}:mapel:<mapId>:<i>    STRING lease of map element i, PX = lease TTL
 * <prefix>:{<prefix>:s<shard>}:maps:open            ZSET  open map ids, score = createdAt (ms)
 * <prefix>:{<prefix>:s<shard>}:run:<root>:resume    HASH  resume claims of a run's interrupts
 * <prefix>:{<prefix>:s<shard>}:run:<runId>:events   STREAM live events of a run (pub/sub channel of the same name)
 * <prefix>:{<prefix>:s<shard>}:tag:<reactor>:<k>=<v> ZSET  a reactor's runs tagged k=v, score = createdAt (ms)
 * ```
 *
 * A run is sharded by its ROOT ({@link rootRunId}): a composed child `<root>/<step>` lives in its
 * root's slot. A map `<runId>:<step>` ({@link mapRunIdOf}) lives in the slot of the run holding
 * it, hence of that run's root (the owner the map resumes), and so do its element leases: every
 * key a map script touches, and the owner's run record, share one hash tag.
 *
 * Sweepers read the `shards` indexes ({@link allActiveIndexKeys}, {@link allOpenMapsIndexKeys})
 * and merge them: O(in-flight), never a keyspace scan. The shards (128 by default) spread the runs
 * and their indexes over the cluster's masters; a run's keys never straddle slots. The shard count
 * a deployment was made with is kept in {@link shardsKey} and checked at boot.
 *
 * Coordination keys are tagged by their own name, `<prefix>:{<kind>:<name>}[:<part>]`, so the
 * keys of one lock / semaphore / rate limit share a slot independently of any run. Sweep guards:
 * `<prefix>:{sweep:<name>}:guard`.
 *
 * Flow control (`RedisFlowStore`): every structure of one reactor's key is tagged by both names,
 * `<prefix>:{flow:<reactor>:<key>}:<part>` ({@link flowKey}); the reactor's index of its keys has
 * a tag of its own, `<prefix>:{flow:<reactor>}:keys` ({@link flowIndexKey}).
 *
 * Interrupts: a run's resume claims ({@link resumeKey}) are one HASH in its top-level run's slot,
 * `c:<path>` (the claim, JSON), `exp:<path>` (expiry of an early claim, ms) and `n:<path>` (invalid
 * payloads counted), kept for the retention TTL after each write; the claim scripts read the run
 * record and move the run in its shard's `active` index in the same slot. A correlation id binds to
 * one run at a time in `<prefix>:{corr:<reactor>:<id>}` ({@link correlationKey}, STRING run id,
 * PX = retention), and resumes mailed to an id no run holds yet wait in
 * `<prefix>:{corr:<reactor>:<id>}:mailbox` ({@link correlationMailboxKey}, HASH interrupt path ->
 * claim JSON, one TTL for the mailbox); reactor and id are URI-encoded, so both keys share a slot
 * whatever braces they hold.
 *
 * NOTE: the hash is FNV-1a (32-bit) over the UTF-8 bytes of the root run id: stable across
 * processes, Node versions and platforms. Never change it or `shards` under live data.
 */
export class RedisKeys {
  /** First segment of every key. */
  readonly prefix: string;
  /** Number of run shards. */
  readonly shards: number;

  constructor(options: RedisKeysOptions = {}) {
    const prefix = options.prefix ?? 'reactor';
    const shards = options.shards ?? DEFAULT_SHARDS;
    if (prefix === '' || /[{}]/.test(prefix)) {
      throw new RangeError(`RedisKeys prefix must be non-empty and contain no '{' or '}', got '${prefix}'.`);
    }
    if (!Number.isInteger(shards) || shards < 1 || shards > 16384) {
      throw new RangeError(`RedisKeys shards must be an integer from 1 to 16384, got ${String(shards)}.`);
    }
    this.prefix = prefix;
    this.shards = shards;
  }

  /**
   * The root of a run id: the part before the first `/` (composed children are `<root>/<step>`),
   * or the whole id.
   */
  rootRunId(runId: string): string {
    const slash = runId.indexOf('/');
    return slash === -1 ? runId : runId.slice(0, slash);
  }

  /**
   * The run (or composed child) holding map `mapId` (`<runId>:<step>`): the part before the last
   * `:`, or the whole id when it has none.
   *
   * NOTE: a step name containing `:` cannot be told from a run id containing one. Such a map still
   * keeps all its keys (and its element leases) in one slot, since they all derive from the map id
   * the same way, but that slot may not be its owner run's.
   */
  mapRunIdOf(mapId: string): string {
    const colon = mapId.lastIndexOf(':');
    return colon === -1 ? mapId : mapId.slice(0, colon);
  }

  /**
   * The shard of `runId`: FNV-1a 32-bit of the UTF-8 bytes of its root ({@link rootRunId}),
   * modulo {@link shards}. A composed child shares its root's shard.
   */
  shardOf(runId: string): number {
    const root = this.rootRunId(runId);
    // FNV-1a over the id's UTF-8 bytes. An ASCII id's bytes are its char codes: read without a
    // Buffer (a run's keys ask for it several times per run).
    const bytes: string | Buffer = /[^\p{ASCII}]/u.test(root) ? Buffer.from(root, 'utf8') : root;
    let hash = 0x811c9dc5;
    for (let i = 0; i < bytes.length; i++) {
      hash ^= typeof bytes === 'string' ? bytes.charCodeAt(i) : bytes[i];
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash % this.shards;
  }

  /** Where a deployment keeps the shard count it was made with: `<prefix>:{<prefix>:deployment}:shards`. */
  shardsKey(): string {
    return `${this.prefix}:{${this.prefix}:deployment}:shards`;
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
    this.checkShard(shard);
    return `${this.shardBase(shard)}:active`;
  }

  /** The active index of the shard `runId` lives in. */
  activeIndexKeyOf(runId: string): string {
    return this.activeIndexKey(this.shardOf(runId));
  }

  /**
   * The runs of reactor `reactorName` in shard `shard` (ZSET, score = creation time ms), for
   * `list`: `<shard base>:runs:<reactor>` (the name URI-encoded, so it cannot move the hash tag).
   */
  reactorRunsKey(shard: number, reactorName: string): string {
    this.checkShard(shard);
    return `${this.shardBase(shard)}:runs:${encodeURIComponent(reactorName)}`;
  }

  /**
   * The runs of reactor `reactorName` tagged `key` = `value` in shard `shard` (ZSET, score =
   * creation time ms), for `list({ tag })` (issue 25): `<shard base>:tag:<reactor>:<key>=<value>`
   * (each part URI-encoded). Written by the checkpoint that sets the tag, in the run's slot.
   */
  reactorTagKey(shard: number, reactorName: string, key: string, value: string): string {
    this.checkShard(shard);
    return `${this.shardBase(shard)}:tag:${encodeURIComponent(reactorName)}:${encodeURIComponent(key)}=${encodeURIComponent(value)}`;
  }

  /** Every shard's active index, shard 0 first. */
  allActiveIndexKeys(): string[] {
    return Array.from({ length: this.shards }, (_, shard) => this.activeIndexKey(shard));
  }

  /** The shard of map `mapId`: the shard of the run holding it ({@link mapRunIdOf}). */
  mapShardOf(mapId: string): number {
    return this.shardOf(this.mapRunIdOf(mapId));
  }

  /** Key `part` of map `mapId`, in its run's slot: `<shardBase>:map:<mapId>:<part>`. */
  mapKey(mapId: string, part: MapKeyPart): string {
    return `${this.shardBase(this.mapShardOf(mapId))}:map:${mapId}:${part}`;
  }

  /**
   * The lease of element `index` of map `mapId` (STRING token with PX), in the map's slot:
   * `<shardBase>:mapel:<mapId>:<index>`. The logical lease `mapel:<mapId>:<index>` maps here.
   */
  mapElementLeaseKey(mapId: string, index: number | string): string {
    return `${this.shardBase(this.mapShardOf(mapId))}:mapel:${mapId}:${index}`;
  }

  /** Index of the open (not yet adopted) maps of `shard` (ZSET, score = createdAt ms). */
  openMapsIndexKey(shard: number): string {
    this.checkShard(shard);
    return `${this.shardBase(shard)}:maps:open`;
  }

  /** The open-maps index of the shard map `mapId` lives in. */
  openMapsIndexKeyOf(mapId: string): string {
    return this.openMapsIndexKey(this.mapShardOf(mapId));
  }

  /** Every shard's open-maps index, shard 0 first. */
  allOpenMapsIndexKeys(): string[] {
    return Array.from({ length: this.shards }, (_, shard) => this.openMapsIndexKey(shard));
  }

  /**
   * A further key of run `runId` (map metadata, step records, ...), in the run's slot:
   * `<shardBase>:run:<runId>:<part>[:<part>...]`.
   */
  runScopedKey(runId: string, ...parts: string[]): string {
    return [this.runKey(runId), ...parts].join(':');
  }

  /**
   * The resume claims of the interrupts of run `runId` (HASH: `c:<path>` claim JSON, `exp:<path>`
   * expiry of an early claim, `n:<path>` invalid payloads counted), in its top-level run's slot:
   * `<shardBase>:run:<root>:resume`. A composed child's interrupts are kept with its root's.
   */
  resumeKey(runId: string): string {
    return this.runScopedKey(this.rootRunId(runId), 'resume');
  }

  /**
   * The live events of run `runId` (STREAM, one field `e` holding the event's JSON; trimmed to
   * about the newest entries, kept for the retention after the last one), in the run's slot:
   * `<shardBase>:run:<runId>:events`. A composed child has a log of its own.
   */
  runEventsKey(runId: string): string {
    return this.runScopedKey(runId, 'events');
  }

  /**
   * The pub/sub channel waking the watchers and waiters of run `runId`: the name of its
   * {@link runEventsKey} (so a sharded channel would live in the run's slot too).
   */
  runEventsChannel(runId: string): string {
    return this.runEventsKey(runId);
  }

  /**
   * The run correlation id `correlationId` of reactor `reactorName` is bound to (STRING):
   * `<prefix>:{corr:<reactor>:<id>}`, both URI-encoded so that braces or colons in them cannot move
   * the hash tag or run two names together.
   */
  correlationKey(reactorName: string, correlationId: string): string {
    return this.coordinationKey('corr', reactorScopedName(reactorName, correlationId));
  }

  /**
   * The resumes mailed to correlation id `correlationId` of reactor `reactorName` before a run
   * bound it (HASH: interrupt path -> claim JSON), in the binding's slot:
   * `<prefix>:{corr:<reactor>:<id>}:mailbox`.
   */
  correlationMailboxKey(reactorName: string, correlationId: string): string {
    return this.coordinationKey('corr', reactorScopedName(reactorName, correlationId), 'mailbox');
  }

  /**
   * The runs waiting at interrupts answered by event `event` without a correlation id (SET of
   * `<root run id>:<interrupt path>`), tagged by the event's name: `<prefix>:{event:<name>}:waiting`
   * (URI-encoded, as in {@link correlationKey}).
   */
  eventWaitingKey(event: string): string {
    return this.coordinationKey('event', encodeURIComponent(event), 'waiting');
  }

  /**
   * The run idempotency key `key` of reactor `reactorName` is bound to (STRING):
   * `<prefix>:{idem:<reactor>:<key>}`, both URI-encoded as in {@link correlationKey}.
   */
  idempotencyKey(reactorName: string, key: string): string {
    return this.coordinationKey('idem', reactorScopedName(reactorName, key));
  }

  /**
   * Structure `part` of flow key `key` of reactor `reactorName` (see `RedisFlowStore`):
   * `<prefix>:{flow:<reactor>:<key>}:<part>`, both URI-encoded as in {@link correlationKey}, so that
   * every structure of one (reactor, key) shares a slot whatever braces or colons the names hold.
   */
  flowKey(reactorName: string, key: string, part: string): string {
    return this.coordinationKey('flow', reactorScopedName(reactorName, key), part);
  }

  /**
   * The flow keys of reactor `reactorName` that hold (or lately held) runs (ZSET, key -> last
   * activity ms), tagged by the reactor alone: `<prefix>:{flow:<reactor>}:keys` (URI-encoded). Its
   * tag is never a key's tag (which holds a second `:`-separated name), so scripts never assume it
   * shares a key's slot.
   */
  flowIndexKey(reactorName: string): string {
    return this.coordinationKey('flow', encodeURIComponent(reactorName), 'keys');
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
   * maps to {@link leaseKey} so that `checkpoint-n.lua` can check it in the run's slot; a map
   * element's lease `mapel:<mapId>:<index>` maps to {@link mapElementLeaseKey} so that the map
   * scripts can check it in the map's slot; any other name maps to {@link lockKey}.
   */
  physicalLeaseKey(logicalKey: string): string {
    const run = RUN_LEASE_PATTERN.exec(logicalKey);
    if (run) return this.leaseKey(run[1]);
    const element = ELEMENT_LEASE_PATTERN.exec(logicalKey);
    if (element) return this.mapElementLeaseKey(element[1], element[2]);
    return this.lockKey(logicalKey);
  }

  private checkShard(shard: number): void {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.shards) {
      throw new RangeError(`Shard ${shard} is out of range 0..${this.shards - 1}.`);
    }
  }
}
