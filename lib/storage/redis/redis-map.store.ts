import {
  elementLeaseKey,
  elementRunId,
  systemClock,
  type Clock,
  type ElementClaim,
  type ElementRecord,
  type ElementSettled,
  type ElementSettlement,
  type ElementsSettled,
  type ElementToClaim,
  type Lease,
  type MapMeta,
  type MapProgress,
  type MapRollbackProgress,
  type MapStore,
  type RollbackFailure,
  type InputCipher,
  type RunState,
  type StoredInputsOptions,
} from '../../core';
import { ElementCodec } from '../element-codec';
import { normalizeTtlMs } from '../lease-ttl';
import { Sealer } from '../sealing';
import { isErrorCode, storageError, StorageErrorCode } from '../storage-error-codes';
import type { RedisKeys } from './redis.keys';
import { DEFAULT_CONTEXT_TTL_MS } from './redis-reactor.storage';
import {
  defineScripts,
  runIntegerScript,
  runScript,
  SCRIPT_FILES,
  type RedisConnection,
  type ScriptName,
} from './redis-scripts';

/** Options of {@link RedisMapStore}. */
export interface RedisMapStoreOptions {
  /** Key builder; the same instance (prefix and shard count) as the storage's and the lock manager's. */
  keys: RedisKeys;
  /** Retention of a map's keys after its last write, in ms. @default 24 h */
  contextTtlMs?: number;
  /**
   * Time source. @default systemClock
   *
   * NOTE: every time a map stores comes from its {@link MapMeta} (`createdAt`), so the bundled
   * scripts do not read the clock; it is accepted for symmetry with the other Redis adapters.
   */
  clock?: Clock;
  /**
   * Encrypts the element inputs and states of maps marked `encryptInputs` (the same cipher as the
   * storage's). Without it such maps are refused.
   */
  inputCipher?: InputCipher;
}

/** Indices one `mapStalled-2` / `mapStalledRollback-3` call looks at. */
const SCAN_PAGE = 1000;

type Reply = number | Array<string | number | null>;

/**
 * {@link MapStore} on Redis: the fan-out maps of the Redis runtime. Behaves exactly as
 * `MemoryMapStore` (both pass `test/conformance/map-store.conformance.ts`).
 *
 * ## Keys (all in the slot of the run holding the map, i.e. of its root run; see {@link RedisKeys})
 *
 * ```
 * map:<mapId>:meta               STRING MapMeta (JSON)
 * map:<mapId>:counters           HASH   total, atomic ("1"/"0"), createdAt, offset (next index to
 *                                       reserve), low (first index without a record), succeeded,
 *                                       failed, halted, skipped (records by status); set once:
 *                                       settledFrom, failedIndex (first failure of an atomic map),
 *                                       signalled (owner signal claimed)
 * map:<mapId>:inputs             HASH   index -> element inputs (JSON)
 * map:<mapId>:records            HASH   index -> ElementRecord (JSON); HLEN = settled
 * map:<mapId>:statuses           HASH   index -> record status (Lua reads it without decoding JSON)
 * map:<mapId>:states             HASH   index -> element RunState (JSON): between attempts, and
 *                                       after completion when the element has something to undo
 * map:<mapId>:rollback           HASH   total, offset (positions reserved), signalled
 * map:<mapId>:rollback-order     LIST   element indices to undo, highest first
 * map:<mapId>:rollback-outcomes  HASH   index -> RollbackFailure[] (JSON), first outcome wins
 * mapel:<mapId>:<index>          STRING element lease token, PX = lease TTL
 * maps:open                      ZSET   (per shard) open map ids, score = createdAt
 * ```
 *
 * Every key of a map carries the retention TTL (`contextTtlMs`), re-stamped by every write
 * script on every key it is given (inputs, written before the map is created, are re-stamped by
 * `create`). The open index is shared and has no TTL; {@link meta} drops an entry whose map expired.
 *
 * ## Round trips
 *
 * One command each (`EVALSHA`; `EVAL` the first time on a connection): `create`, `putInputs`,
 * `reserve`, `claimElement`, `putElementState`, `settleElement`, `records`, `progress`,
 * `claimSignal`, `startRollback`, `settleRollback`, `rollbackProgress`, and `close` (`ZREM`),
 * `elementState` (`HGET`), `meta` (`GET`, plus one script when the map is missing).
 * `listOpen` sends one `ZRANGE` per shard together. `stalled` and `stalledRollback` send one script
 * that finds dispatched elements without a record (from `low`, so O(in flight)), then one
 * pipeline of `EXISTS` on their leases, repeating while candidates were all held.
 *
 * The client is the caller's: this class never closes it.
 *
 * @example
 * const keys = new RedisKeys({ prefix: 'reactor' });
 * const maps = new RedisMapStore(redis, { keys });
 * const locks = new RedisLockManager(redis, { keys }); // element leases land in the map's slot
 */
export class RedisMapStore implements MapStore {
  private readonly keys: RedisKeys;
  private readonly contextTtlMs: number;
  /** Time source (see {@link RedisMapStoreOptions.clock}). */
  readonly clock: Clock;
  /** Whether maps marked `encryptInputs` can be stored (an `inputCipher` was given). */
  readonly encryptsInputs: boolean;
  private readonly elements: ElementCodec;

  constructor(
    private readonly redis: RedisConnection,
    options: RedisMapStoreOptions,
  ) {
    this.keys = options.keys;
    this.contextTtlMs = normalizeTtlMs(options.contextTtlMs ?? DEFAULT_CONTEXT_TTL_MS, 'contextTtlMs');
    this.clock = options.clock ?? systemClock;
    this.elements = new ElementCodec(new Sealer(options.inputCipher));
    this.encryptsInputs = this.elements.sealer.available;
    defineScripts(redis);
  }

  /** Create the map and add it to its shard's open index: `mapCreate-7.lua`. */
  async create(meta: MapMeta): Promise<boolean> {
    const { mapId } = meta;
    const result = await this.integer(
      'mapCreate',
      [...this.elementKeys(mapId), this.keys.openMapsIndexKeyOf(mapId)],
      [
        mapId,
        JSON.stringify(meta),
        meta.total,
        meta.atomic ? '1' : '0',
        meta.createdAt,
        this.contextTtlMs,
        meta.batchSize,
        meta.elementsPerJob ?? 1,
      ],
      mapId,
    );
    return result === 1;
  }

  /**
   * The map's metadata: one `GET`. A missing map is dropped from the open index (one more
   * command, `forgetIfMissing-2.lua`), so entries of expired maps heal as the sweeper reads them.
   */
  async meta(mapId: string): Promise<MapMeta | undefined> {
    const metaKey = this.keys.mapKey(mapId, 'meta');
    const raw = await this.redis.get(metaKey);
    if (raw !== null) return JSON.parse(raw) as MapMeta;
    const missing = await runIntegerScript(
      this.redis,
      'forgetIfMissing',
      [metaKey, this.keys.openMapsIndexKeyOf(mapId)],
      [mapId],
    );
    if (missing === 1) return undefined;
    const created = await this.redis.get(metaKey); // created between the two commands
    return created === null ? undefined : (JSON.parse(created) as MapMeta);
  }

  /** Store inputs by index in one command (`mapPutInputs-1.lua`); works before `create`. */
  async putInputs(
    mapId: string,
    start: number,
    inputs: Array<Record<string, unknown>>,
    options?: StoredInputsOptions,
  ): Promise<void> {
    if (inputs.length === 0) return;
    const encrypt = options?.encrypt === true;
    await this.integer(
      'mapPutInputs',
      [this.keys.mapKey(mapId, 'inputs')],
      [start, this.contextTtlMs, ...inputs.map((input, i) => this.elements.input(mapId, start + i, input, encrypt))],
      mapId,
    );
  }

  /** Reserve up to `count` indices: `mapReserve-6.lua`. */
  async reserve(mapId: string, count: number): Promise<number[]> {
    const reply = await this.script('mapReserve', this.elementKeys(mapId), [count, this.contextTtlMs], mapId);
    return reply.map(Number);
  }

  /** {@link claimElements} of one element. */
  async claimElement(mapId: string, index: number, lease: Lease, ttlMs: number): Promise<ElementClaim> {
    const [claim] = await this.claimElements(mapId, [{ index, lease }], ttlMs);
    return claim;
  }

  /**
   * Take each element's lease and read its input, state and the skip flag: `mapClaimElements-n.lua`.
   * Once the map's run has a cancel stored, an element that has not started is skipped and the
   * dispatch stops (the script reads the run's record, in the map's slot).
   */
  async claimElements(mapId: string, elements: readonly ElementToClaim[], ttlMs: number): Promise<ElementClaim[]> {
    const ttl = normalizeTtlMs(ttlMs, 'ttlMs');
    if (elements.length === 0) return [];
    const token = elements[0].lease.token;
    // One token per call: the script takes every lease with it.
    if (elements.some((e) => e.lease.token !== token)) {
      const claims: ElementClaim[] = [];
      for (const element of elements) claims.push(...(await this.claimElements(mapId, [element], ttlMs)));
      return claims;
    }
    const reply = (await this.script(
      'mapClaimElements',
      [
        this.keys.mapKey(mapId, 'counters'),
        this.keys.mapKey(mapId, 'records'),
        this.keys.mapKey(mapId, 'inputs'),
        this.keys.mapKey(mapId, 'states'),
        // The map's top-level run (its root shares the map's slot): a stored cancel stops the map.
        this.keys.runKey(this.keys.rootRunId(this.keys.mapRunIdOf(mapId))),
        ...elements.map((e) => this.keys.physicalLeaseKey(e.lease.key)),
      ],
      [token, ttl, ...elements.map((e) => e.index)],
      mapId,
    )) as unknown as Array<[number, (string | null)?, (string | null)?, number?]>;
    return reply.map(([code, input, state, skip], i): ElementClaim => {
      if (code === 0) return { acquired: false };
      if (code === 1) return { acquired: true, done: true };
      const index = elements[i].index;
      return {
        acquired: true,
        done: false,
        input: this.elements.readInput(mapId, index, input),
        state: this.elements.readState(mapId, index, state),
        skip: skip === 1,
      };
    });
  }

  /**
   * Save the element's state between attempts: `mapPutElementState-7.lua`.
   * @throws LeaseLostError when `lease` no longer holds the element (nothing written).
   */
  async putElementState(mapId: string, index: number, state: RunState, lease: Lease): Promise<void> {
    await this.integer(
      'mapPutElementState',
      [...this.elementKeys(mapId), this.keys.physicalLeaseKey(lease.key)],
      [index, lease.token, this.elements.state(mapId, index, state), this.contextTtlMs],
      mapId,
      index,
    );
  }

  /**
   * {@link settleElements} of one element.
   * @throws LeaseLostError when `lease` no longer holds the element (nothing written).
   */
  async settleElement(
    mapId: string,
    index: number,
    record: ElementRecord,
    state: RunState | undefined,
    lease: Lease,
  ): Promise<ElementSettled> {
    const { lost, ...settled } = await this.settleElements(mapId, [{ index, record, state, lease }]);
    if (lost.length > 0) throw this.error(StorageErrorCode.LeaseLost, 'mapSettleElements', mapId, index);
    return settled;
  }

  /**
   * Store each element's record (and state) and release its lease, then refill the window and
   * claim the owner signal when done, in one command: `mapSettleElements-n.lua`.
   */
  async settleElements(mapId: string, settlements: readonly ElementSettlement[]): Promise<ElementsSettled> {
    const args: Array<string | number> = [this.contextTtlMs];
    for (const s of settlements) {
      args.push(
        s.index,
        s.lease.token,
        JSON.stringify(s.record),
        s.record.status,
        s.state ? this.elements.state(mapId, s.index, s.state) : '',
      );
    }
    const reply = (await this.script(
      'mapSettleElements',
      [...this.elementKeys(mapId), ...settlements.map((s) => this.keys.physicalLeaseKey(s.lease.key))],
      args,
      mapId,
    )) as unknown as [number, Array<string | number | null>, number[], number[]];
    return {
      signalOwner: reply[0] === 1,
      progress: decodeProgress(reply[1]),
      lost: reply[2].map(Number),
      next: reply[3].map(Number),
    };
  }

  /** Records of `from ..< to` in one command (`mapRecords-2.lua`, `HMGET` in slices). */
  async records(mapId: string, from: number, to: number): Promise<Array<ElementRecord | undefined>> {
    const reply = await this.script(
      'mapRecords',
      [this.keys.mapKey(mapId, 'counters'), this.keys.mapKey(mapId, 'records')],
      [from, to],
      mapId,
    );
    const settledFrom = Number(reply[0]);
    return reply.slice(1).map((raw, i) => {
      if (typeof raw === 'string') return JSON.parse(raw) as ElementRecord;
      return settledFrom >= 0 && from + i >= settledFrom ? { status: 'skipped' } : undefined;
    });
  }

  /** Counts of the map in one command: `mapProgress-2.lua`. */
  async progress(mapId: string): Promise<MapProgress> {
    return decodeProgress(
      await this.script(
        'mapProgress',
        [this.keys.mapKey(mapId, 'counters'), this.keys.mapKey(mapId, 'records')],
        [],
        mapId,
      ),
    );
  }

  /**
   * Dispatched indices with no record and no live lease, ascending: `mapStalled-2.lua` finds
   * candidates, one pipeline of `EXISTS` drops those whose lease is held.
   *
   * NOTE: an element may settle between the two: it is then reported although it just settled.
   * Harmless for the sweeper: its re-dispatched job finds the record and does nothing.
   */
  async stalled(mapId: string, limit: number): Promise<number[]> {
    return this.unleased(mapId, limit, 'mapStalled', [
      this.keys.mapKey(mapId, 'counters'),
      this.keys.mapKey(mapId, 'records'),
    ]);
  }

  /** Claim the owner signal of a done map: `mapClaimSignal-6.lua`. */
  async claimSignal(mapId: string): Promise<boolean> {
    return (await this.integer('mapClaimSignal', this.elementKeys(mapId), [this.contextTtlMs], mapId)) === 1;
  }

  /** Open maps, oldest `createdAt` first (ties by id), merged across the shards' open indexes. */
  async listOpen(limit: number): Promise<string[]> {
    if (!(limit > 0)) return [];
    const n = Math.floor(limit);
    // One ZRANGE per shard, issued together (shards may sit on different cluster nodes).
    const replies = await Promise.all(
      this.keys.allOpenMapsIndexKeys().map((key) => this.redis.zrange(key, 0, n - 1, 'WITHSCORES')),
    );
    const entries: Array<[string, number]> = [];
    for (const reply of replies) {
      for (let i = 0; i + 1 < reply.length; i += 2) entries.push([reply[i], Number(reply[i + 1])]);
    }
    entries.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return entries.slice(0, n).map(([mapId]) => mapId);
  }

  /** Drop the map from its shard's open index: one `ZREM` (its records stay). */
  async close(mapId: string): Promise<void> {
    await this.redis.zrem(this.keys.openMapsIndexKeyOf(mapId), mapId);
  }

  /** The element's stored state: one `HGET`. */
  async elementState(mapId: string, index: number): Promise<RunState | undefined> {
    const raw = await this.redis.hget(this.keys.mapKey(mapId, 'states'), String(index));
    return this.elements.readState(mapId, index, raw);
  }

  /** Start the rollback once and reserve its first batch: `mapStartRollback-10.lua`. */
  async startRollback(mapId: string, batchSize: number): Promise<number[]> {
    const reply = await this.script(
      'mapStartRollback',
      [...this.allKeys(mapId), this.keys.openMapsIndexKeyOf(mapId)],
      [mapId, batchSize, this.contextTtlMs],
      mapId,
    );
    return reply.map(Number);
  }

  /** Record an element's rollback outcome (first wins) in one command: `mapSettleRollback-10.lua`. */
  async settleRollback(
    mapId: string,
    index: number,
    failures: RollbackFailure[],
    lease: Lease | undefined,
  ): Promise<{ next: number[]; signalOwner: boolean }> {
    const reply = await this.script(
      'mapSettleRollback',
      [
        ...this.allKeys(mapId),
        lease ? this.keys.physicalLeaseKey(lease.key) : this.keys.physicalLeaseKey(elementLeaseKey(mapId, index)),
      ],
      [index, JSON.stringify(failures), lease?.token ?? '', this.contextTtlMs],
      mapId,
      index,
    );
    return { signalOwner: reply[0] === 1, next: reply.slice(1).map(Number) };
  }

  /** Rollback bookkeeping in one command (`mapRollbackProgress-2.lua`); failures highest index first. */
  async rollbackProgress(mapId: string): Promise<MapRollbackProgress | undefined> {
    const reply = await this.script(
      'mapRollbackProgress',
      [this.keys.mapKey(mapId, 'rollback'), this.keys.mapKey(mapId, 'rollback-outcomes')],
      [],
      mapId,
    );
    if (reply.length === 0) return undefined;
    const reported: Array<[number, RollbackFailure[]]> = [];
    for (let i = 2; i + 1 < reply.length; i += 2) {
      reported.push([Number(reply[i]), JSON.parse(String(reply[i + 1])) as RollbackFailure[]]);
    }
    reported.sort((a, b) => b[0] - a[0]);
    return { total: Number(reply[0]), reported: Number(reply[1]), failures: reported.flatMap(([, f]) => f) };
  }

  /**
   * Rollback positions reserved but not reported whose element holds no live lease, in rollback
   * order: `mapStalledRollback-3.lua`, then one pipeline of `EXISTS` (see the NOTE on {@link stalled}).
   */
  async stalledRollback(mapId: string, limit: number): Promise<number[]> {
    return this.unleased(mapId, limit, 'mapStalledRollback', [
      this.keys.mapKey(mapId, 'rollback'),
      this.keys.mapKey(mapId, 'rollback-order'),
      this.keys.mapKey(mapId, 'rollback-outcomes'),
    ]);
  }

  /** The keys every element-phase write script takes, in script order (`KEYS[1..6]`). */
  private elementKeys(mapId: string): string[] {
    return (['meta', 'counters', 'inputs', 'records', 'statuses', 'states'] as const).map((part) =>
      this.keys.mapKey(mapId, part),
    );
  }

  /** Every data key of the map, in script order (`KEYS[1..9]` of the rollback scripts). */
  private allKeys(mapId: string): string[] {
    return [
      ...this.elementKeys(mapId),
      this.keys.mapKey(mapId, 'rollback'),
      this.keys.mapKey(mapId, 'rollback-order'),
      this.keys.mapKey(mapId, 'rollback-outcomes'),
    ];
  }

  /**
   * Page through a candidates script (`{nextCursor, end, index...}`) and keep the indices whose
   * element lease is not held, until `limit` are found or the scan reaches the end.
   */
  private async unleased(mapId: string, limit: number, name: ScriptName, keys: string[]): Promise<number[]> {
    const out: number[] = [];
    let cursor = 0;
    for (;;) {
      // Ask for more candidates than still needed: the ones in flight hold their lease.
      const wanted = Math.min(SCAN_PAGE, 2 * Math.max(0, limit - out.length) + 32);
      const reply = await this.script(name, keys, [cursor, SCAN_PAGE, wanted], mapId);
      const [next, end] = [Number(reply[0]), Number(reply[1])];
      const candidates = reply.slice(2).map(Number);
      if (candidates.length > 0) {
        const pipeline = this.redis.pipeline();
        for (const index of candidates) pipeline.exists(this.keys.mapElementLeaseKey(mapId, index));
        const held = (await pipeline.exec()) ?? [];
        candidates.forEach((index, i) => {
          const [error, exists] = held[i] ?? [null, 1];
          if (error) throw error;
          if (exists === 0 && out.length < limit) out.push(index);
        });
      }
      if (out.length >= limit || next >= end || next <= cursor) return out;
      cursor = next;
    }
  }

  /** Run a script that answers an array, turning a negative integer into its error. */
  private async script(
    name: ScriptName,
    keys: string[],
    args: Array<string | number>,
    mapId: string,
    index?: number,
  ): Promise<Array<string | number | null>> {
    const reply = (await runScript(this.redis, name, keys, args)) as Reply;
    if (typeof reply === 'number') throw this.error(reply, name, mapId, index);
    return reply;
  }

  /** Run a script that answers an integer, turning a negative one into its error. */
  private async integer(
    name: ScriptName,
    keys: string[],
    args: Array<string | number>,
    mapId: string,
    index?: number,
  ): Promise<number> {
    const result = await runIntegerScript(this.redis, name, keys, args);
    if (isErrorCode(result)) throw this.error(result, name, mapId, index);
    return result;
  }

  private error(code: number, name: ScriptName, mapId: string, index: number | undefined): Error {
    const runId = index === undefined || code !== StorageErrorCode.LeaseLost ? mapId : elementRunId(mapId, index);
    return storageError(code, { runId, mapId, operation: `${name} (${SCRIPT_FILES[name]})` });
  }
}

/** Decode `{total, dispatched, settled, succeeded, failed, halted, skipped, failedIndex, done}`. */
function decodeProgress(reply: Array<string | number | null>): MapProgress {
  const [total, dispatched, settled, succeeded, failed, halted, skipped, failedIndex, done] = reply.map(Number);
  return {
    total,
    dispatched,
    settled,
    succeeded,
    failed,
    halted,
    skipped,
    failedIndex: failedIndex >= 0 ? failedIndex : undefined,
    done: done === 1,
  };
}
