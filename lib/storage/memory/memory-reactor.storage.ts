import {
  ENGINE_DEFAULTS,
  ReactorError,
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
import { decodeRecord, encodeDelta, HEADER_FIELD, TAGS, type RecordDelta, type Written } from '../run-record.codec';
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
import { normalizeTtlMs } from '../lease-ttl';
import { comesAfter, newestFirst } from '../run-position';
import { CheckpointResult, StorageErrorCode, storageError } from '../storage-error-codes';
import type { MemoryLockManager } from './memory-lock.manager';

/** Options of {@link MemoryReactorStorage}. */
export interface MemoryReactorStorageOptions {
  /**
   * The lock manager whose leases fence `save({ lease })`. Without it a fenced save throws, since
   * it could not be checked.
   */
  locks?: MemoryLockManager;
  /** Size limit of one serialized run, in UTF-8 bytes. @default 16 MiB */
  maxContextBytes?: number;
  /** Time source for `markBroken` timestamps. @default the lock manager's clock, else systemClock */
  clock?: Clock; /**
   * Encrypts the stored inputs of runs marked `encryptInputs` (reactors declaring it, and their
   * children). Without it such runs are refused, and a record holding encrypted fields cannot be read.
   */
  inputCipher?: InputCipher;
  /**
   * Retention of a live run's record after its last write, on the storage's clock, as on Redis
   * (a run due at a later time is kept until then plus this). Without it (nor `retention`), records
   * are kept until {@link MemoryReactorStorage.clear}.
   */
  contextTtlMs?: number;
  /** Retention of a finished run's record per status, as on Redis. @default contextTtlMs each */
  retention?: RetentionOptions;
}

/** What an unlimited retention is on this adapter: records are kept until `clear`. */
const KEPT = Number.POSITIVE_INFINITY;

/** Saves between two purges of the records whose retention passed (a read drops an expired one at once). */
const PURGE_EVERY = 1024;

interface StoredRun {
  /** The run's fields, as Redis stores them: every load parses a fresh copy, nothing is shared by reference. */
  fields: Map<string, string>;
  status: RunStatus;
  terminal: boolean;
  /** Its place in the index of live runs: last write, or when its scheduled retry is due. */
  updatedAt: number;
  /** Set by markBroken, cleared by the next successful save. */
  broken: boolean;
  /** A cancel request's reason (see `requestCancel`). */
  cancel?: string;
  /** When its retention ends (storage clock, ms), like a Redis key's TTL; `Infinity`: kept. */
  expiresAt: number;
}

/**
 * In-process {@link ReactorStorage} for the embedded runtime and tests. Not durable: runs live in
 * this process's memory, kept for the same retention as on Redis when `contextTtlMs` or `retention`
 * is given (expired on the storage's clock: a read drops an expired record, and saves purge them
 * now and then), else until `clear`. It follows the same contract as
 * `RedisReactorStorage` (both pass `test/conformance/storage.conformance.ts`):
 *
 * - runs are stored serialized, in the same fields and by the same deltas as on Redis
 *   (`run-record.codec.ts`), so a loaded run is a deep copy and JSON rules apply (`undefined`
 *   fields vanish, `Date`s become strings);
 * - `save({ lease })` succeeds only while `lease` is held in {@link MemoryReactorStorageOptions.locks},
 *   and refreshes it to `leaseTtlMs`; a lost lease throws `LeaseLostError` and writes nothing;
 * - a terminal record is never replaced by a non-terminal state: such a save writes nothing and
 *   returns `false` (the writer is stale and must stop), unless `reopen` is set;
 * - `listActive` lists non-terminal runs (paused included), oldest `updatedAt` first.
 *
 * @example
 * const { storage, locks } = createMemoryAdapters();
 */
export class MemoryReactorStorage implements ReactorStorage {
  private readonly runs = new Map<string, StoredRun>();
  private readonly locks?: MemoryLockManager;
  private readonly maxContextBytes: number;
  private readonly sealer: Sealer;
  /** Whether runs marked `encryptInputs` can be stored (an `inputCipher` was given). */
  readonly encryptsInputs: boolean;
  private readonly clock: Clock;
  /** What is stored of each state object this adapter loaded or saved. */
  private readonly written = new WeakMap<RunState, Written>();
  /** The cancel request the last save or load of each state object found. */
  private readonly cancels = new WeakMap<RunState, string>();
  /** Each reactor's runs and their creation times (the index `listRuns` reads). */
  private readonly byReactor = new Map<string, Map<string, number>>();
  /** Each reactor's runs by tag (`[reactor, key, value]` as JSON) and their creation times (`list({ tag })`). */
  private readonly byTag = new Map<string, Map<string, number>>();
  /** Idempotency keys (reactor and key, as JSON) and the run each is bound to, until it expires. */
  private readonly idempotency = new Map<string, { runId: string; expiresAt: number }>();
  /** How long records are kept (`Infinity` each without `contextTtlMs` and `retention`). */
  readonly retention: RecordRetention;
  /** How long a reactor's runs stay in its index after their creation: the longest retention. */
  private readonly listWindowMs: number;
  private saves = 0;

  constructor(options: MemoryReactorStorageOptions = {}) {
    this.locks = options.locks;
    this.maxContextBytes = options.maxContextBytes ?? DEFAULT_MAX_CONTEXT_BYTES;
    this.sealer = new Sealer(options.inputCipher);
    this.encryptsInputs = this.sealer.available;
    this.clock = options.clock ?? options.locks?.clock ?? systemClock;
    const limited = options.contextTtlMs !== undefined || options.retention !== undefined;
    this.retention = recordRetention(
      limited ? normalizeTtlMs(options.contextTtlMs ?? ENGINE_DEFAULTS.interruptRetentionMs, 'contextTtlMs') : KEPT,
      options.retention,
      normalizeTtlMs,
    );
    this.listWindowMs = longestRetentionMs(this.retention);
    const locks = options.locks;
    if (locks) {
      this.extendRunLease = async (runId, lease, ttlMs) => {
        if (!locks.refresh(lease, ttlMs)) return { held: false };
        const stored = this.stored(runId);
        const cancel = stored && !stored.terminal ? stored.cancel : undefined;
        return cancel !== undefined ? { held: true, cancel } : { held: true };
      };
    }
  }

  /**
   * Write the run. Returns `true` when written, `false` when nothing was written because
   * `createOnly` found an existing record or because the stored record is terminal and `state`
   * is not (see the class comment).
   */
  async save(state: RunState, options: SaveOptions = {}): Promise<boolean> {
    const delta = encodeDelta(
      state,
      options.createOnly ? undefined : this.written.get(state),
      this.maxContextBytes,
      this.sealer,
    );
    if (options.leaseTtlMs !== undefined) normalizeTtlMs(options.leaseTtlMs, 'leaseTtlMs');
    const result = this.checkpoint(state, delta, options);
    if (result < 0) throw storageError(result, { runId: state.runId, operation: 'save' });
    if (result !== CheckpointResult.Written && result !== CheckpointResult.WrittenCancelRequested) return false;
    this.written.set(state, delta.commit());
    const cancel = this.stored(state.runId)?.cancel;
    if (result === CheckpointResult.WrittenCancelRequested && cancel !== undefined) this.cancels.set(state, cancel);
    return true;
  }

  async requestCancel(runId: string, reason: string): Promise<RunStatus | undefined> {
    const stored = this.stored(runId);
    if (!stored) return undefined;
    if (!stored.terminal && stored.status !== 'rolling_back') stored.cancel = reason;
    return stored.status;
  }

  cancelRequest(state: RunState): string | undefined {
    return this.cancels.get(state);
  }

  /** Whether run `runId` has a cancel request stored (a map store stops its map's elements then). */
  hasCancelRequest(runId: string): boolean {
    const stored = this.stored(runId);
    return stored !== undefined && !stored.terminal && stored.cancel !== undefined;
  }

  /**
   * Extend a run's lease in the shared lease table and read its cancel request. Only when this
   * storage shares the lock manager's leases (`locks` given); otherwise the engine extends through
   * its lock manager.
   */
  readonly extendRunLease?: (runId: string, lease: Lease, ttlMs: number) => Promise<{ held: boolean; cancel?: string }>;

  async listRuns(query: ListRunsQuery): Promise<{ runs: RunSummary[]; next?: RunPosition }> {
    const { tag } = query;
    const index = tag
      ? this.byTag.get(JSON.stringify([query.reactorName, tag.key, tag.value]))
      : this.byReactor.get(query.reactorName);
    const ordered = [...(index ?? [])]
      .map(([runId, createdAt]) => ({ runId, createdAt }))
      .filter((p) => (query.since === undefined || p.createdAt >= query.since) && comesAfter(p, query.before))
      .sort(newestFirst);
    const runs: RunSummary[] = [];
    for (let i = 0; i < ordered.length; i++) {
      const p = ordered[i];
      const stored = this.stored(p.runId);
      if (!stored || (query.status && stored.status !== query.status)) continue;
      // A tag set again to another value leaves the old value's entry: the record decides.
      if (tag && !hasTag(stored.fields.get(TAGS), tag)) continue;
      runs.push(Object.assign({}, p, { reactorName: query.reactorName, status: stored.status }));
      if (runs.length === query.limit) return i + 1 < ordered.length ? { runs, next: p } : { runs };
    }
    return { runs };
  }

  async claimIdempotencyKey(reactorName: string, key: string, runId: string, ttlMs: number): Promise<string> {
    const name = JSON.stringify([reactorName, key]);
    const now = this.clock.now();
    const bound = this.idempotency.get(name);
    if (bound && bound.expiresAt > now) return bound.runId;
    this.idempotency.set(name, { runId, expiresAt: now + normalizeTtlMs(ttlMs, 'idempotencyWindowMs') });
    return runId;
  }

  async releaseIdempotencyKey(reactorName: string, key: string, runId: string): Promise<void> {
    const name = JSON.stringify([reactorName, key]);
    if (this.idempotency.get(name)?.runId === runId) this.idempotency.delete(name);
  }

  async load(runId: string): Promise<RunState | undefined> {
    const stored = this.stored(runId);
    if (!stored) return undefined;
    const { state, written } = decodeRecord(runId, Object.fromEntries(stored.fields), this.sealer);
    if (written) this.written.set(state, written);
    if (stored.cancel !== undefined && !stored.terminal) this.cancels.set(state, stored.cancel);
    return state;
  }

  async acquireAndLoad(runId: string, lease: Lease, ttlMs: number): Promise<ClaimResult> {
    if (!this.locks) {
      throw new ReactorError(
        'INTERNAL',
        `MemoryReactorStorage cannot lease run '${runId}': it was created without a lock manager.`,
      );
    }
    if (!this.locks.take(lease.key, ttlMs, lease.token)) return { acquired: false };
    return { acquired: true, state: await this.load(runId) };
  }

  async listActive(limit: number, updatedBefore = Infinity): Promise<string[]> {
    if (!(limit > 0)) return [];
    const active: Array<[string, number]> = [];
    const now = this.clock.now();
    for (const [runId, run] of this.runs)
      if (!run.terminal && run.updatedAt < updatedBefore && run.expiresAt > now) active.push([runId, run.updatedAt]);
    // Same order as a Redis sorted set: by score, then by member.
    active.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return active.slice(0, Math.floor(limit)).map(([runId]) => runId);
  }

  /**
   * Replace the run with a minimal failed record carrying `reason` (see `brokenRunState`), and
   * drop it from the active index. The first call wins: while the record stays broken, later
   * calls change nothing. A missing run is left missing.
   */
  /** The size of the stored record of `state`, when this adapter wrote or read it. */
  sizeOf(state: RunState): number | undefined {
    return this.written.get(state)?.bytes;
  }

  async markBroken(runId: string, reactorName: string | undefined, reason: BrokenReason): Promise<void> {
    const stored = this.stored(runId);
    if (!stored || stored.broken) return;
    const previous = Object.fromEntries(stored.fields);
    const broken = brokenRunState(runId, reactorName, reason, previous[HEADER_FIELD], this.clock.now());
    const state = salvageRecord(broken, previous, this.sealer);
    const record = encodeBroken(state, this.sealer);
    const fields = new Map<string, string>();
    for (let i = 0; i < record.length; i += 2) fields.set(record[i], record[i + 1]);
    this.runs.set(runId, {
      fields,
      status: state.status,
      terminal: true,
      updatedAt: state.updatedAt,
      broken: true,
      expiresAt: this.clock.now() + this.retention.failed,
    });
  }

  /**
   * Testing aid: store `raw` as the record of `runId` verbatim (corrupt JSON, another schema
   * version), the way a damaged Redis record would look. It is indexed as active.
   * @internal
   */
  writeRaw(runId: string, raw: string, status: RunStatus = 'running', updatedAt = this.clock.now()): void {
    this.runs.set(runId, {
      fields: new Map([[HEADER_FIELD, raw]]),
      status,
      terminal: isTerminal(status),
      updatedAt,
      broken: false,
      expiresAt: this.clock.now() + this.retention.contextTtlMs,
    });
  }

  /**
   * Testing aid: the stored fields of `runId` as they are (sealed fields sealed), like `HGETALL`.
   * @internal
   */
  readRaw(runId: string): Record<string, string> {
    return Object.fromEntries(this.stored(runId)?.fields ?? []);
  }

  /**
   * Adapter aid (for `MemoryInterruptStore`): the stored status of `runId` and whether its record
   * is terminal, as the Lua scripts read the record's `status` and `terminal` fields; `undefined`
   * when there is no run.
   * @internal
   */
  statusOf(runId: string): { status: RunStatus; terminal: boolean } | undefined {
    const stored = this.stored(runId);
    return stored ? { status: stored.status, terminal: stored.terminal } : undefined;
  }

  /**
   * Adapter aid (for `MemoryInterruptStore`): move an existing non-terminal run to `score` in the
   * index of live runs (what `listActive` orders by), like `ZADD XX` on Redis. Nothing else of the
   * run changes; a missing or terminal run is left alone. Returns whether the run was moved.
   * @internal
   */
  touchActive(runId: string, score: number): boolean {
    const stored = this.stored(runId);
    if (!stored || stored.terminal) return false;
    stored.updatedAt = score;
    return true;
  }

  /** Drop every run (tests). */
  clear(): void {
    this.runs.clear();
    this.byReactor.clear();
    this.byTag.clear();
  }

  /**
   * Testing aid: how long the record of `runId` is still kept (ms, on the storage's clock), like
   * Redis `PTTL`: `-2` when there is none, `-1` when it is kept until `clear`.
   * @internal
   */
  ttlOf(runId: string): number {
    const stored = this.stored(runId);
    if (!stored) return -2;
    return stored.expiresAt === KEPT ? -1 : stored.expiresAt - this.clock.now();
  }

  /** The stored run `runId`, unless its retention has passed (then it is dropped, as Redis expires a key). */
  private stored(runId: string): StoredRun | undefined {
    const stored = this.runs.get(runId);
    // A record kept without a retention asks no time.
    if (stored === undefined || stored.expiresAt === KEPT || stored.expiresAt > this.clock.now()) return stored;
    this.runs.delete(runId);
    return undefined;
  }

  /** Drop the records whose retention has passed, and the reactors' index entries of runs no longer stored. */
  private purge(): void {
    const now = this.clock.now();
    for (const [runId, stored] of this.runs) if (stored.expiresAt <= now) this.runs.delete(runId);
    for (const [reactor, index] of this.byReactor) {
      for (const runId of index.keys()) if (!this.runs.has(runId)) index.delete(runId);
      if (index.size === 0) this.byReactor.delete(reactor);
    }
    for (const [name, index] of this.byTag) {
      for (const runId of index.keys()) if (!this.runs.has(runId)) index.delete(runId);
      if (index.size === 0) this.byTag.delete(name);
    }
  }

  /** Mirror of `checkpoint-n.lua`, in the same order of checks. */
  private checkpoint(state: RunState, delta: RecordDelta, options: SaveOptions): number {
    const { lease } = options;
    if (lease && options.acquireLease) {
      if (!this.locks) {
        throw new ReactorError(
          'INTERNAL',
          `MemoryReactorStorage cannot lease run '${state.runId}': it was created without a lock manager.`,
        );
      }
      if (options.createOnly && this.stored(state.runId) !== undefined) return CheckpointResult.Exists;
      if (!this.locks.take(lease.key, options.leaseTtlMs ?? ENGINE_DEFAULTS.leaseTtlMs, lease.token))
        return StorageErrorCode.LeaseLost;
    } else if (lease) {
      if (!this.locks) {
        throw new ReactorError(
          'INTERNAL',
          `MemoryReactorStorage cannot fence the save of run '${state.runId}': it was created without a lock manager. Use createMemoryAdapters().`,
        );
      }
      if (!this.locks.holds(lease)) return StorageErrorCode.LeaseLost;
    }
    const existing = this.stored(state.runId);
    const terminal = isTerminal(state.status);
    if (options.createOnly) {
      if (existing) return CheckpointResult.Exists;
    } else if (existing?.terminal && !terminal && !options.reopen) {
      return CheckpointResult.TerminalKept;
    }
    const fields = delta.full || !existing ? new Map<string, string>() : existing.fields;
    for (let i = 0; i < delta.set.length; i += 2) fields.set(delta.set[i], delta.set[i + 1]);
    for (const field of delta.del) fields.delete(field);
    if (options.createOnly) {
      const index = this.byReactor.get(state.reactorName) ?? new Map<string, number>();
      index.set(state.runId, state.createdAt); // listed by creation time (the index score may differ: flow control)
      // Trimmed like the Redis index: of runs created longer than the longest retention before this one.
      if (this.listWindowMs !== KEPT)
        for (const [runId, createdAt] of index)
          if (createdAt < state.createdAt - this.listWindowMs) index.delete(runId);
      this.byReactor.set(state.reactorName, index);
    }
    // The tags this write sets, indexed like the reactor's runs (the Redis script does it in the same call).
    if (delta.tags) {
      for (const [key, value] of delta.tags) {
        const name = JSON.stringify([state.reactorName, key, value]);
        const index = this.byTag.get(name) ?? new Map<string, number>();
        index.set(state.runId, state.createdAt);
        if (this.listWindowMs !== KEPT)
          for (const [runId, createdAt] of index)
            if (createdAt < state.createdAt - this.listWindowMs) index.delete(runId);
        this.byTag.set(name, index);
      }
    }
    // A cancel request outlives every write but the run's last (a full write keeps it too).
    const cancel = terminal || options.createOnly ? undefined : existing?.cancel;
    const score = indexScore(state);
    const now = this.clock.now();
    // Built field by field, the cancel request last when there is one (DD-speed22-11: a property after
    // a spread is V8's slow path on Node 20).
    const stored: StoredRun = {
      fields,
      status: state.status,
      terminal,
      updatedAt: score,
      broken: false,
      expiresAt: now + recordTtlMs(state.status, score, now, this.retention),
    };
    if (cancel !== undefined) stored.cancel = cancel;
    this.runs.set(state.runId, stored);
    if (++this.saves % PURGE_EVERY === 0 && this.retention.contextTtlMs !== KEPT) this.purge();
    if (lease && options.releaseLease) void this.locks?.release(lease);
    else if (lease && options.leaseTtlMs !== undefined) this.locks?.refresh(lease, options.leaseTtlMs);
    return cancel !== undefined ? CheckpointResult.WrittenCancelRequested : CheckpointResult.Written;
  }
}

/** Whether a record's `tags` field holds `tag`. */
function hasTag(json: string | undefined, tag: { key: string; value: string }): boolean {
  if (json === undefined) return false;
  try {
    return (JSON.parse(json) as Record<string, unknown>)[tag.key] === tag.value;
  } catch {
    return false;
  }
}
