import {
  InternalError,
  type FlowEntry,
  type FlowKeyView,
  type FlowStore,
  type GatherReply,
  type GatherSpec,
  type TakeReply,
} from '../../core';
import { positiveInteger } from '../coordination-args';
import { StorageErrorCode } from '../storage-error-codes';
import type { RedisKeys } from './redis.keys';
import { defineScripts, runScript, SCRIPT_FILES, type RedisConnection, type ScriptName } from './redis-scripts';

/** Options of {@link RedisFlowStore}. */
export interface RedisFlowStoreOptions {
  /** Key builder; the same instance (prefix) as the other adapters'. */
  keys: RedisKeys;
}

type Reply = Array<string | number | null | Reply>;

/**
 * {@link FlowStore} on Redis. Behaves exactly as the memory adapter (both pass
 * `test/conformance/flow-store.conformance.ts`).
 *
 * ## Keys (see {@link RedisKeys.flowKey} and {@link RedisKeys.flowIndexKey})
 *
 * Every structure of one reactor's key carries the hash tag `{flow:<reactor>:<key>}`, both names
 * URI-encoded (braces or colons in them cannot move the tag or run two names together), so each
 * script runs on keys of one slot:
 *
 * ```
 * {flow:<r>:<k>}:live           ZSET   run id -> admitted at (ms); at most `limit` members
 * {flow:<r>:<k>}:queue          ZSET   run id -> sequence number (head first); at most `maxQueued`
 * {flow:<r>:<k>}:seq            STRING the queue's last sequence number; deleted when it empties
 * {flow:<r>:<k>}:window         HASH   window (index), count: the throttle's last window given;
 *                                      PX = one period past that window's end
 * {flow:<r>:<k>}:open           HASH   the open gather: runId, openedAt, dueAt, expireAt (ms);
 *                                      PXAT expireAt (its opening + ttl)
 * {flow:<r>:<k>}:open:items     LIST   its items, oldest first (one for `last`, at most `maxSize`
 *                                      for `all`); PXAT expireAt
 * {flow:<r>:<k>}:closed         HASH   run id -> items (cmsgpack) of each closed gather, until its
 *                                      expireAt; PXAT the latest expireAt it holds
 * {flow:<r>:<k>}:closed:expiry  ZSET   run id -> expireAt of its closed gather (past ones are
 *                                      swept on every close); PXAT as `closed`
 * {flow:<r>}:keys               ZSET   the reactor's concurrency keys -> last enter or leave (ms)
 * ```
 *
 * The concurrency structures have no TTL (a live run holds its slot for as long as it lives; the
 * engine leaves it): Redis deletes a ZSET that empties, and the sequence counter goes with the
 * queue, so an idle key leaves only its index entry, which {@link prune} drops. The queue is a
 * ZSET by sequence number, so `enter` and `leave` are O(log n) in its length (membership by
 * `ZSCORE`/`ZRANK`, a position is `ZRANK + 1`, the head is `ZPOPMIN`), never a scan.
 *
 * The open gather lives in fixed keys, so a start finds it without knowing its run id (and the
 * script declares every key it touches); when it closes (full, or taken when due) its items move
 * to `closed` under its run id, where {@link take} reads them again until its ttl is over, while
 * the next start opens another gather.
 *
 * ## Round trips, time and the two slots
 *
 * Each operation is one script (`flowEnter-3.lua`, `flowLeave-3.lua`, `flowInspect-2.lua`,
 * `flowReserve-1.lua`, `flowGather-4.lua`, `flowTake-4.lua`), which reads the time with `TIME`,
 * so every process agrees on windows and due times whatever its clock; {@link now} is one `TIME`.
 * Every key a script touches is declared in its KEYS.
 *
 * The key index is on a slot of its own, so it is kept by separate commands:
 * - {@link enter} runs its script, then `ZADD`s the key to the index with the script's time (on
 *   every answer: the key is active); {@link leave} does the same when the run was live or queued.
 *   A process that dies between the two leaves the index a step behind (an entered key unlisted
 *   until its next enter or leave).
 * - {@link prune} checks that the key holds no live and no queued run (`EXISTS live queue`, on the
 *   key's slot), then `flowPrune-1.lua` drops it from the index only if its score is more than
 *   `idleMs` old. An enter (or leave) landing between the two refreshes the score after its
 *   script: its `ZADD` comes either after the drop (the key is listed again) or before it (the
 *   score is fresh, so the key is kept). The race accepted: when `idleMs` is shorter than the time
 *   between that `ZADD` and the drop (a prune with `idleMs` 0 or a few ms), a key that just took a
 *   run may be dropped; it is listed again at its next enter or leave. The engine's sweep prunes
 *   with a grace time (a lease TTL by default), far longer than a round trip.
 * - {@link keys} is one `ZRANGE` of the index.
 *
 * Arguments are checked before anything is sent (`RangeError`, as `RedisCoordinationStore`); a
 * script refusing its arguments (-2) is an `InternalError` naming it.
 *
 * The client is the caller's: this class never closes it.
 *
 * @example
 * const flow = new RedisFlowStore(redis, { keys: new RedisKeys({ prefix: 'reactor' }) });
 * const entry = await flow.enter('invoices', 'tenant-7', runId, 3, 100_000);
 */
export class RedisFlowStore implements FlowStore {
  private readonly redisKeys: RedisKeys;

  constructor(
    private readonly redis: RedisConnection,
    options: RedisFlowStoreOptions,
  ) {
    this.redisKeys = options.keys;
    defineScripts(redis);
  }

  /** Redis `TIME`, in whole ms. */
  async now(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** `flowEnter-3.lua`, then `ZADD` of the key to the reactor's index (another slot). */
  async enter(reactor: string, key: string, runId: string, limit: number, maxQueued: number): Promise<FlowEntry> {
    runIdOf(runId);
    positiveInteger(limit, 'limit');
    positiveInteger(maxQueued, 'maxQueued');
    const reply = await this.script(
      'flowEnter',
      this.concurrencyKeys(reactor, key),
      [runId, limit, maxQueued],
      reactor,
      key,
    );
    const now = Number(reply[1]);
    let entry: FlowEntry;
    if (reply[0] === 1) entry = { state: 'admitted' };
    else if (reply[0] === 2) entry = { state: 'queued', position: Number(reply[2]) };
    else if (reply[0] === 3) entry = { state: 'full', queued: Number(reply[2]) };
    else throw refused('flowEnter', reply, reactor, key);
    await this.redis.zadd(this.redisKeys.flowIndexKey(reactor), now, key);
    return entry;
  }

  /** `flowLeave-3.lua`, then (when the run was there) `ZADD` of the key to the reactor's index. */
  async leave(reactor: string, key: string, runId: string, limit: number): Promise<string[]> {
    runIdOf(runId);
    positiveInteger(limit, 'limit');
    const reply = await this.script('flowLeave', this.concurrencyKeys(reactor, key), [runId, limit], reactor, key);
    if (reply[0] === 0) return [];
    if (reply[0] !== 1 || !Array.isArray(reply[2])) throw refused('flowLeave', reply, reactor, key);
    await this.redis.zadd(this.redisKeys.flowIndexKey(reactor), Number(reply[1]), key);
    return reply[2].map(String);
  }

  /** `flowInspect-2.lua`. */
  async inspect(reactor: string, key: string, peek: number): Promise<FlowKeyView> {
    nonNegativeInteger(peek, 'peek');
    const [live, queue] = this.concurrencyKeys(reactor, key);
    const reply = await this.script('flowInspect', [live, queue], [peek], reactor, key);
    const [held, queued, next] = reply as [Reply, number, Reply];
    if (!Array.isArray(held) || !Array.isArray(next)) throw refused('flowInspect', reply, reactor, key);
    const view: FlowKeyView = { key, live: [], queued: Number(queued), next: next.map(String) };
    for (let i = 0; i < held.length; i += 2) view.live.push({ runId: String(held[i]), since: Number(held[i + 1]) });
    return view;
  }

  /** One `ZRANGE` of the reactor's key index, oldest activity first. */
  async keys(reactor: string, limit: number): Promise<string[]> {
    positiveInteger(limit, 'limit');
    return this.redis.zrange(this.redisKeys.flowIndexKey(reactor), 0, limit - 1);
  }

  /** `EXISTS live queue` on the key's slot, then `flowPrune-1.lua` on the index's (see the class comment). */
  async prune(reactor: string, key: string, idleMs: number): Promise<boolean> {
    nonNegativeInteger(idleMs, 'idleMs');
    const [live, queue] = this.concurrencyKeys(reactor, key);
    if ((await this.redis.exists(live, queue)) > 0) return false;
    const reply = await runScript(this.redis, 'flowPrune', [this.redisKeys.flowIndexKey(reactor)], [key, idleMs]);
    if (reply !== 0 && reply !== 1) throw refused('flowPrune', reply, reactor, key);
    return reply === 1;
  }

  /** `flowReserve-1.lua`. */
  async reserveStart(
    reactor: string,
    key: string,
    limit: number,
    periodMs: number,
  ): Promise<{ startAt: number; now: number }> {
    positiveInteger(limit, 'limit');
    positiveInteger(periodMs, 'periodMs');
    const reply = await this.script(
      'flowReserve',
      [this.part(reactor, key, 'window')],
      [limit, periodMs],
      reactor,
      key,
    );
    return { startAt: Number(reply[0]), now: Number(reply[1]) };
  }

  /** `flowGather-4.lua`. */
  async gather(reactor: string, key: string, newRunId: string, item: string, spec: GatherSpec): Promise<GatherReply> {
    runIdOf(newRunId);
    if (typeof item !== 'string') throw new RangeError(`item must be a string, got ${typeof item}.`);
    const args = gatherArgs(spec);
    const reply = await this.script(
      'flowGather',
      this.gatherKeys(reactor, key),
      [newRunId, item, ...args],
      reactor,
      key,
    );
    if (typeof reply[0] !== 'string') throw refused('flowGather', reply, reactor, key);
    return {
      runId: reply[0],
      opened: reply[1] === 1,
      full: reply[2] === 1,
      dueAt: Number(reply[3]),
      size: Number(reply[4]),
      now: Number(reply[5]),
    };
  }

  /** `flowTake-4.lua`. */
  async take(reactor: string, key: string, runId: string): Promise<TakeReply | undefined> {
    runIdOf(runId);
    const reply = await this.script('flowTake', this.gatherKeys(reactor, key), [runId], reactor, key);
    if (reply[0] === 0) return undefined;
    if (reply[0] === 2) return { due: false, dueAt: Number(reply[1]), now: Number(reply[2]) };
    if (reply[0] !== 1 || !Array.isArray(reply[1])) throw refused('flowTake', reply, reactor, key);
    return { due: true, items: reply[1].map(String) };
  }

  private part(reactor: string, key: string, part: string): string {
    return this.redisKeys.flowKey(reactor, key, part);
  }

  /** A key's concurrency structures, in the order the scripts declare them: live, queue, seq. */
  private concurrencyKeys(reactor: string, key: string): [string, string, string] {
    return [this.part(reactor, key, 'live'), this.part(reactor, key, 'queue'), this.part(reactor, key, 'seq')];
  }

  /** A key's gather structures, in the order the scripts declare them: open, open items, closed, closed expiry. */
  private gatherKeys(reactor: string, key: string): [string, string, string, string] {
    return [
      this.part(reactor, key, 'open'),
      this.part(reactor, key, 'open:items'),
      this.part(reactor, key, 'closed'),
      this.part(reactor, key, 'closed:expiry'),
    ];
  }

  /** Run a script that answers an array. */
  private async script(
    script: ScriptName,
    keys: string[],
    args: Array<string | number>,
    reactor: string,
    key: string,
  ): Promise<Reply> {
    const reply = (await runScript(this.redis, script, keys, args)) as number | Reply;
    if (!Array.isArray(reply)) throw refused(script, reply, reactor, key);
    return reply;
  }
}

/** The script arguments of a gather spec after `item`: mode, period, maxWait, maxSize (0: none), ttl. */
function gatherArgs(spec: GatherSpec): Array<string | number> {
  if (spec?.mode !== 'last' && spec?.mode !== 'all') {
    throw new RangeError(`spec.mode must be 'last' or 'all', got ${String(spec?.mode)}.`);
  }
  const maxWait = positiveInteger(spec.maxWaitMs, 'spec.maxWaitMs');
  const ttl = positiveInteger(spec.ttlMs, 'spec.ttlMs');
  if (spec.mode === 'last') return ['last', positiveInteger(spec.periodMs as number, 'spec.periodMs'), maxWait, 0, ttl];
  const maxSize = spec.maxSize === undefined ? 0 : positiveInteger(spec.maxSize, 'spec.maxSize');
  return ['all', 0, maxWait, maxSize, ttl];
}

/** A run id must be a non-empty string (the scripts refuse an empty one). */
function runIdOf(runId: string): string {
  if (typeof runId !== 'string' || runId === '') {
    throw new RangeError(`runId must be a non-empty string, got ${JSON.stringify(runId)}.`);
  }
  return runId;
}

/** A count or duration that may be 0 (a peek, an idle time). @throws RangeError otherwise. */
function nonNegativeInteger(value: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${what} must be a non-negative integer, got ${String(value)}.`);
  }
  return value;
}

function refused(script: ScriptName, reply: unknown, reactor: string, key: string): InternalError {
  const what =
    reply === StorageErrorCode.InvalidArgument ? 'refused its arguments (a bug in nest-reactor)' : 'answered';
  return new InternalError(
    `Script '${script}' (${SCRIPT_FILES[script]}) on flow key '${key}' of reactor '${reactor}' ${what}: ${JSON.stringify(reply)}.`,
  );
}
