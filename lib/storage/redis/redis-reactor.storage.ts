import { Buffer } from 'node:buffer';
import {
  CorruptRecordError,
  isTerminal,
  systemClock,
  type BrokenReason,
  type ClaimResult,
  type Clock,
  type InputCipher,
  type Lease,
  type ListRunsQuery,
  type ReactorStorage,
  type RunPosition,
  type RunSummary,
  type RunState,
  type RunStatus,
  type SaveOptions,
} from '../../core';
import { normalizeTtlMs } from '../lease-ttl';
import { comesAfter, newestFirst } from '../run-position';
import { decodeRecord, encodeDelta, HEADER_FIELD, TAGS, type Written } from '../run-record.codec';
import { encodeBroken, salvageRecord } from '../broken-record';
import { Sealer } from '../sealing';
import {
  brokenRunState,
  DEFAULT_MAX_CONTEXT_BYTES,
  indexScore,
  longestRetentionMs,
  recordRetention,
  recordTtlMs,
  type RecordRetention,
  type RetentionOptions,
} from '../run-state.codec';
import { CheckpointResult, isErrorCode, storageError } from '../storage-error-codes';
import type { RedisKeys } from './redis.keys';
import { CheckpointBatcher } from './checkpoint-batcher';
import { defineScripts, runIntegerScript, runScript, type RedisConnection } from './redis-scripts';

/** Default retention of a run record: 24 hours, re-stamped on every write. */
export const DEFAULT_CONTEXT_TTL_MS = 24 * 60 * 60 * 1000;

/** Options of {@link RedisReactorStorage}. */
export interface RedisReactorStorageOptions {
  /** Key builder; must be the same instance (same prefix and shard count) as the lock manager's. */
  keys: RedisKeys;
  /**
   * Retention of a live run's record after its last write, in ms (a run due at a later time, such
   * as a paused run's interrupt deadline or a sleeping run's wake-up, is kept until then plus this).
   * @default 24 h
   */
  contextTtlMs?: number;
  /**
   * Retention of a finished run's record after its last write, per status, in ms: the write that
   * finishes the run (or undoes it: `completed` then `cancelled`) stamps its status's.
   * @default contextTtlMs each
   */
  retention?: RetentionOptions;
  /** Size limit of one serialized run, in UTF-8 bytes. @default 16 MiB */
  maxContextBytes?: number;
  /** Time source for `markBroken` timestamps. @default systemClock */
  clock?: Clock; /**
   * Encrypts the stored inputs of runs marked `encryptInputs` (reactors declaring it, and their
   * children). Without it such runs are refused, and a record holding encrypted fields cannot be read.
   */
  inputCipher?: InputCipher;
}

/**
 * {@link ReactorStorage} on Redis. Each run is a HASH in its shard's slot: a small header, the
 * inputs, a field per step result, undo entry, trace entry and attempt count (a step's plain trace
 * entries and an attempt count of 1 are folded into its result's field), and `status`,
 * `terminal` and `broken` beside them (see `run-record.codec.ts` and {@link RedisKeys}). A save
 * writes only the fields that changed since this adapter last wrote or read the same state
 * object, so its cost does not grow with the length of the run.
 *
 * Round trips:
 * - `save` (fenced or not): one `EVALSHA checkpoint-n` at most, shared with the other saves of the
 *   same event-loop turn (group commit, {@link CheckpointBatcher}; on a cluster, with those of the
 *   same shard). The first use on a connection sends `EVAL` with the body instead; after a
 *   `SCRIPT FLUSH` ioredis retries once.
 * - `load`: one `HGETALL`; when the record is missing, one more script drops it from the index.
 * - `listActive`: one `ZRANGE` per shard, sent together.
 * - `markBroken`: an `HGET` (to keep what can be kept) and one script.
 *
 * A save that would replace a terminal record with a non-terminal state writes nothing and
 * returns `false` (the writer is stale and must stop), unless `reopen` is set.
 *
 * The client is the caller's: this class never closes it.
 *
 * @example
 * const keys = new RedisKeys({ prefix: 'reactor' });
 * const storage = new RedisReactorStorage(redis, { keys });
 * const locks = new RedisLockManager(redis, { keys });
 */
export class RedisReactorStorage implements ReactorStorage {
  private readonly keys: RedisKeys;
  /** How long records are kept: `contextTtlMs` and each finished status's retention. */
  readonly retention: RecordRetention;
  private readonly maxContextBytes: number;
  private readonly sealer: Sealer;
  /** Whether runs marked `encryptInputs` can be stored (an `inputCipher` was given). */
  readonly encryptsInputs: boolean;
  private readonly clock: Clock;
  /** What is stored of each state object this adapter loaded or saved. */
  private readonly written = new WeakMap<RunState, Written>();
  /** The cancel request the last save or load of each state object found. */
  private readonly cancels = new WeakMap<RunState, string>();
  /** Whether the connection is a cluster client (group commits per shard). */
  private readonly cluster: boolean;
  /** Sends the checkpoints of one event-loop turn together (see {@link CheckpointBatcher}). */
  private readonly batcher: CheckpointBatcher;
  /**
   * A save of a settled run (terminal or paused) publishes its wake-up (`RunEventBus.signal`'s
   * `settled`, on the run's channel) in the same script, so the engine sends no `PUBLISH` of its
   * own. Off when the connection has an ioredis `keyPrefix`: the script's keys carry it, the
   * channels the bus subscribes to do not.
   */
  readonly announcesSettled: boolean;
  /** Numbers this adapter's fenced writes, so each has a stamp of its own (see checkpoint-n.lua). */
  private writes = 0;
  private readonly runKeys = new WeakMap<
    RunState,
    {
      runId: string;
      /** The run id's length in UTF-8 bytes (the script reads the id off the end of the record key). */
      idBytes: number;
      reactorName: string;
      record: string;
      index: string;
      runs: string;
      lease?: [string, string];
    }
  >();

  constructor(
    private readonly redis: RedisConnection,
    options: RedisReactorStorageOptions,
  ) {
    this.keys = options.keys;
    const contextTtlMs = normalizeTtlMs(options.contextTtlMs ?? DEFAULT_CONTEXT_TTL_MS, 'contextTtlMs');
    this.retention = recordRetention(contextTtlMs, options.retention, normalizeTtlMs);
    this.maxContextBytes = options.maxContextBytes ?? DEFAULT_MAX_CONTEXT_BYTES;
    this.sealer = new Sealer(options.inputCipher);
    this.encryptsInputs = this.sealer.available;
    this.clock = options.clock ?? systemClock;
    defineScripts(redis);
    this.cluster = (redis as { isCluster?: boolean }).isCluster === true;
    const connection = (redis as { options?: { keyPrefix?: string; redisOptions?: { keyPrefix?: string } } }).options;
    this.announcesSettled = !connection?.keyPrefix && !connection?.redisOptions?.keyPrefix;
    // The reactors' runs indexes keep a run as long as any record can be kept (`list` must not lose a stored run).
    this.batcher = new CheckpointBatcher(redis, longestRetentionMs(this.retention));
  }

  /**
   * Write the run in one round trip. Returns `true` when written, `false` when nothing was
   * written (`createOnly` found a record, or a terminal record was kept).
   * @throws LeaseLostError when fenced by a lease this token no longer holds (nothing written).
   * @throws ContextTooLargeError over `maxContextBytes` (checked before sending).
   */
  async save(state: RunState, options: SaveOptions = {}): Promise<boolean> {
    const written = options.createOnly ? undefined : this.written.get(state);
    const delta = encodeDelta(state, written, this.maxContextBytes, this.sealer);
    const { lease } = options;
    const leaseTtl = lease && options.leaseTtlMs !== undefined ? normalizeTtlMs(options.leaseTtlMs, 'leaseTtlMs') : 0;
    const runId = state.runId;
    const keys = this.keysOf(state, lease, options.createOnly === true);
    // Tags this write sets: their indexes' keys follow (written in the same call, in the run's slot).
    if (delta.tags) for (const [key, value] of delta.tags) keys.push(this.tagKeyOf(state, key, value));
    const token = lease?.token ?? '';
    const terminal = isTerminal(state.status);
    const score = indexScore(state);
    const fixed = [
      keys.length,
      // The run id is the end of its record key (keys[0]): the script reads it there (its UTF-8 length).
      this.runKeys.get(state)!.idBytes,
      state.status,
      // A create (and a write that tags the run) lists it by its creation time, given apart when
      // the index score differs.
      (options.createOnly || delta.tags) && score !== state.createdAt ? `${score}:${state.createdAt}` : score,
      token,
      leaseTtl,
      flag(terminal) +
        flag(options.createOnly) +
        flag(options.reopen) +
        flag(options.releaseLease) +
        flag(options.acquireLease) +
        flag(delta.full) +
        flag(this.announcesSettled && (terminal || state.status === 'paused')),
      lease ? ++this.writes : 0,
      recordTtlMs(state.status, score, this.clock.now(), this.retention),
      delta.set.length,
      delta.del.length,
    ];
    const result = await this.batcher.submit(
      this.groupOf(runId),
      keys,
      packable(token, delta.set, delta.del)
        ? [packed(fixed, delta.set, delta.del)]
        : fixed.concat(delta.set, delta.del),
    );
    if (isErrorCode(result)) throw storageError(result, { runId, operation: 'save (checkpoint-n.lua)' });
    if (result !== CheckpointResult.Written && result !== CheckpointResult.WrittenCancelRequested) return false;
    // A diffed delta updates the stored view in place: the map is written only for a new one.
    const committed = delta.commit();
    if (committed !== written) this.written.set(state, committed);
    if (result === CheckpointResult.WrittenCancelRequested && !this.cancels.has(state)) {
      // Rare (once per cancelled run): read the reason the checkpoint reported.
      const reason = await this.redis.hget(this.keys.runKey(runId), CANCEL_FIELD);
      if (reason !== null) this.cancels.set(state, reason);
    }
    return true;
  }

  /** Store a cancel request with a non-terminal run: one command (`requestCancel-1.lua`). */
  async requestCancel(runId: string, reason: string): Promise<RunStatus | undefined> {
    const reply = await runScript(this.redis, 'requestCancel', [this.keys.runKey(runId)], [reason]).catch(
      (error: unknown) => wrongType(runId, error),
    );
    return typeof reply === 'string' ? (reply as RunStatus) : undefined;
  }

  cancelRequest(state: RunState): string | undefined {
    return this.cancels.get(state);
  }

  /**
   * The runs of a reactor, newest first: one `ZRANGE BYSCORE REV` per shard on the reactor's runs
   * index (written by the run's create), merged, then each candidate's `status` (one `HGET` each,
   * sent together) to filter and to drop runs whose record expired. Reads at most about ten pages
   * of candidates per call; `next` continues where it stopped. With `tag`, the tag's index
   * (written by the checkpoint that set the tag) instead, and `status` and `tags` of each candidate
   * (one `HMGET`), so a run whose tag was set again to another value is left out.
   */
  async listRuns(query: ListRunsQuery): Promise<{ runs: RunSummary[]; next?: RunPosition }> {
    const { tag } = query;
    // By tag: the tag's index instead of the reactor's runs (same scores, same paging).
    const keys = Array.from({ length: this.keys.shards }, (_, shard) =>
      tag
        ? this.keys.reactorTagKey(shard, query.reactorName, tag.key, tag.value)
        : this.keys.reactorRunsKey(shard, query.reactorName),
    );
    const page = Math.max(50, query.limit * 2);
    const runs: RunSummary[] = [];
    let cursor = query.before;
    for (let scanned = 0; scanned < page * 10;) {
      const max = cursor ? String(cursor.createdAt) : '+inf';
      const min = query.since === undefined ? '-inf' : String(query.since);
      const replies = await Promise.all(
        keys.map((key) => this.redis.zrange(key, max, min, 'BYSCORE', 'REV', 'LIMIT', 0, page, 'WITHSCORES')),
      );
      const candidates: RunPosition[] = [];
      for (const reply of replies) {
        for (let i = 0; i + 1 < reply.length; i += 2) {
          const p = { runId: reply[i], createdAt: Number(reply[i + 1]) };
          if (comesAfter(p, cursor)) candidates.push(p);
        }
      }
      candidates.sort(newestFirst);
      const batch = candidates.slice(0, page);
      if (batch.length === 0) return { runs };
      const statuses = await Promise.all(
        batch.map((p) =>
          tag
            ? this.redis.hmget(this.keys.runKey(p.runId), 'status', TAGS)
            : this.redis.hget(this.keys.runKey(p.runId), 'status'),
        ),
      );
      for (let i = 0; i < batch.length; i++) {
        const read = statuses[i];
        const status = (Array.isArray(read) ? read[0] : read) as RunStatus | null;
        cursor = batch[i];
        if (status === null || (query.status && status !== query.status)) continue;
        // A tag set again to another value leaves the old value's entry: the record decides.
        if (tag && !hasTag(Array.isArray(read) ? read[1] : null, tag)) continue;
        runs.push(Object.assign({}, batch[i], { reactorName: query.reactorName, status }));
        if (runs.length === query.limit) return { runs, next: cursor };
      }
      scanned += batch.length;
    }
    return { runs, next: cursor };
  }

  /**
   * Bind an idempotency key to a run id unless bound: one command (`claimIdempotencyKey-1.lua`) on
   * `<prefix>:{idem:<reactor>:<key>}`, expiring after `ttlMs`.
   */
  async claimIdempotencyKey(reactorName: string, key: string, runId: string, ttlMs: number): Promise<string> {
    const ttl = normalizeTtlMs(ttlMs, 'idempotencyWindowMs');
    const reply = await runScript(
      this.redis,
      'claimIdempotencyKey',
      [this.keys.idempotencyKey(reactorName, key)],
      [runId, ttl],
    );
    return String(reply);
  }

  /** Unbind an idempotency key from `runId` (only from it): one command (`releaseIdempotencyKey-1.lua`). */
  async releaseIdempotencyKey(reactorName: string, key: string, runId: string): Promise<void> {
    await runScript(this.redis, 'releaseIdempotencyKey', [this.keys.idempotencyKey(reactorName, key)], [runId]);
  }

  /**
   * Read the run: one `HGET`. A missing record returns `undefined` and is dropped from the
   * active index (one more command, `forgetIfMissing-2.lua`), so entries whose record outlived
   * its retention TTL while non-terminal heal as sweepers read them.
   * @throws CorruptRecordError for unreadable JSON, a wrong shape, another schema version, or a
   *   record hash without its `state` field.
   */
  async load(runId: string): Promise<RunState | undefined> {
    const runKey = this.keys.runKey(runId);
    const fields = await this.redis.hgetall(runKey).catch((error: unknown) => wrongType(runId, error));
    if (Object.keys(fields).length > 0) return this.decode(runId, fields);
    const missing = await runIntegerScript(
      this.redis,
      'forgetIfMissing',
      [runKey, this.keys.activeIndexKeyOf(runId)],
      [runId],
    );
    if (missing === 1) return undefined;
    throw new CorruptRecordError(`Stored record of run '${runId}' has no 'state' field.`, runId);
  }

  /** Extend a run's lease and read its cancel request, in one round trip (`extendRunLease-2.lua`). */
  async extendRunLease(runId: string, lease: Lease, ttlMs: number): Promise<{ held: boolean; cancel?: string }> {
    const ttl = normalizeTtlMs(ttlMs, 'ttlMs');
    const reply = (await runScript(
      this.redis,
      'extendRunLease',
      [this.keys.physicalLeaseKey(lease.key), this.keys.runKey(runId)],
      [lease.token, ttl],
    ).catch((error: unknown) => wrongType(runId, error))) as number | [number, string?];
    if (typeof reply === 'number')
      throw storageError(reply, { runId, operation: 'extendRunLease (extendRunLease-2.lua)' });
    if (reply[0] !== 1) return { held: false };
    return reply[1] !== undefined ? { held: true, cancel: reply[1] } : { held: true };
  }

  /** Lock, then load, in one round trip (`acquireAndLoad-2.lua`). */
  async acquireAndLoad(runId: string, lease: Lease, ttlMs: number): Promise<ClaimResult> {
    const ttl = normalizeTtlMs(ttlMs, 'ttlMs');
    const reply = (await runScript(
      this.redis,
      'acquireAndLoad',
      [this.keys.physicalLeaseKey(lease.key), this.keys.runKey(runId)],
      [lease.token, ttl],
    ).catch((error: unknown) => wrongType(runId, error))) as number | [number, ...string[]];
    if (typeof reply === 'number')
      throw storageError(reply, { runId, operation: 'acquireAndLoad (acquireAndLoad-2.lua)' });
    if (reply[0] !== 1) return { acquired: false };
    if (reply.length === 1) return { acquired: true, state: undefined };
    const fields: Record<string, string> = {};
    for (let i = 1; i + 1 < reply.length; i += 2) fields[reply[i] as string] = reply[i + 1] as string;
    return { acquired: true, state: this.decode(runId, fields) };
  }

  /** The index key of the runs of `state`'s reactor tagged `key` = `value`, in the run's shard. */
  private tagKeyOf(state: RunState, key: string, value: string): string {
    return this.keys.reactorTagKey(this.keys.shardOf(state.runId), state.reactorName, key, value);
  }

  /** The group commit a run's checkpoint joins: one for all on a standalone server, its shard's on a cluster. */
  private groupOf(runId: string): number {
    return this.cluster ? this.keys.shardOf(runId) : 0;
  }

  /**
   * The keys of a checkpoint of `state` (the reactor's runs index only for a create): its record
   * and index keys are built once per state object.
   */
  private keysOf(state: RunState, lease: Lease | undefined, create: boolean): string[] {
    const runId = state.runId;
    let cached = this.runKeys.get(state);
    if (cached?.runId !== runId || cached.reactorName !== state.reactorName) {
      const shard = this.keys.shardOf(runId);
      cached = {
        runId,
        idBytes: Buffer.byteLength(runId),
        reactorName: state.reactorName,
        record: this.keys.runKey(runId),
        index: this.keys.activeIndexKeyOf(runId),
        runs: this.keys.reactorRunsKey(shard, state.reactorName),
      };
      this.runKeys.set(state, cached);
    }
    // The lease's key, built once per lease (a run keeps one lease from its first save to its last).
    const logical = lease?.key ?? '';
    if (cached.lease?.[0] !== logical)
      cached.lease = [logical, lease ? this.keys.physicalLeaseKey(logical) : this.keys.leaseKey(runId)];
    const leaseKey = cached.lease[1];
    return create ? [cached.record, leaseKey, cached.index, cached.runs] : [cached.record, leaseKey, cached.index];
  }

  private decode(runId: string, fields: Record<string, string>): RunState {
    const { state, written } = decodeRecord(runId, fields, this.sealer);
    if (written) this.written.set(state, written);
    const cancel = fields[CANCEL_FIELD];
    if (cancel !== undefined && fields.terminal !== '1') this.cancels.set(state, cancel);
    return state;
  }

  /** Non-terminal runs, oldest `updatedAt` first (ties by id), merged across all shards. */
  async listActive(limit: number, updatedBefore?: number): Promise<string[]> {
    if (!(limit > 0)) return [];
    const n = Math.floor(limit);
    // One ZRANGE per shard, issued together (each shard may sit on another cluster node, so no
    // cross-slot pipeline/transaction). Each returns its n oldest; the global n oldest are among them.
    // With updatedBefore, by score (exclusive bound; ZRANGE BYSCORE needs Redis 6.2 or later).
    const replies = await Promise.all(
      this.keys
        .allActiveIndexKeys()
        .map((key) =>
          updatedBefore === undefined
            ? this.redis.zrange(key, 0, n - 1, 'WITHSCORES')
            : this.redis.zrange(key, '-inf', `(${updatedBefore}`, 'BYSCORE', 'LIMIT', 0, n, 'WITHSCORES'),
        ),
    );
    const entries: Array<[string, number]> = [];
    for (const reply of replies) {
      for (let i = 0; i + 1 < reply.length; i += 2) entries.push([reply[i], Number(reply[i + 1])]);
    }
    entries.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return entries.slice(0, n).map(([runId]) => runId);
  }

  /**
   * Replace the run with a minimal failed record carrying `reason`, keeping what can be read of
   * the old one, and drop it from the index. Idempotent: the first reason wins while the record
   * stays broken. A missing run stays missing.
   */
  /** The size of the stored record of `state`, when this adapter wrote or read it. */
  sizeOf(state: RunState): number | undefined {
    return this.written.get(state)?.bytes;
  }

  async markBroken(runId: string, reactorName: string | undefined, reason: BrokenReason): Promise<void> {
    const runKey = this.keys.runKey(runId);
    // A key of another type is no run record: nothing of it can be kept.
    const fields = await this.redis.hgetall(runKey).catch(() => ({}) as Record<string, string>);
    const broken = brokenRunState(runId, reactorName, reason, fields[HEADER_FIELD], this.clock.now());
    const state = salvageRecord(broken, fields, this.sealer);
    const record = encodeBroken(state, this.sealer);
    const result = await runIntegerScript(
      this.redis,
      'markBroken',
      [runKey, this.keys.activeIndexKeyOf(runId)],
      [runId, state.status, this.retention.failed, ...record],
    );
    if (isErrorCode(result)) throw storageError(result, { runId, operation: 'markBroken (markBroken-2.lua)' });
  }
}

/** Whether a record's `tags` field holds `tag`. */
function hasTag(json: string | null, tag: { key: string; value: string }): boolean {
  if (json === null) return false;
  try {
    return (JSON.parse(json) as Record<string, unknown>)[tag.key] === tag.value;
  } catch {
    return false;
  }
}

/** The run record's field holding a cancel request's reason. */
const CANCEL_FIELD = 'cancel';

function flag(value: boolean | undefined): string {
  return value ? '1' : '0';
}

/** A run key holding another Redis type (`WRONGTYPE`) is a record that cannot be read. */
function wrongType(runId: string, error: unknown): never {
  if (error instanceof Error && error.message.startsWith('WRONGTYPE')) {
    throw new CorruptRecordError(`Stored record of run '${runId}' is not a hash: ${error.message}`, runId);
  }
  throw error;
}

/** What joins a packed checkpoint block's arguments (see `checkpoint-n.lua`). */
const SEPARATOR = '\0';

/**
 * Whether a checkpoint's arguments can be packed into one string: none holds a NUL. JSON values
 * never do (a NUL in a string is written `\u0000`); names and sealed values (`~...`) are checked.
 */
function packable(token: string, set: readonly string[], del: readonly string[]): boolean {
  if (token.includes(SEPARATOR)) return false;
  for (let i = 0; i < set.length; i += 2) {
    if (set[i].includes(SEPARATOR)) return false;
    const value = set[i + 1];
    if (value.charCodeAt(0) === 126 /* ~ */ && value.includes(SEPARATOR)) return false;
  }
  for (const field of del) if (field.includes(SEPARATOR)) return false;
  return true;
}

/** A block's arguments joined by {@link SEPARATOR}, part by part (no array of them all made to join). */
function packed(fixed: ReadonlyArray<string | number>, set: readonly string[], del: readonly string[]): string {
  let block = fixed.join(SEPARATOR);
  if (set.length > 0) block += SEPARATOR + set.join(SEPARATOR);
  if (del.length > 0) block += SEPARATOR + del.join(SEPARATOR);
  return block;
}
