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
 * {flow:}:reactors              SET    every reactor whose runs ever entered a concurrency key
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
 * ## Round trips, time and the three slots
 *
 * Each operation is one script (`flowEnter-3.lua`, `flowLeave-3.lua`, `flowInspect-2.lua`,
 * `flowReserve-1.lua`, `flowGather-4.lua`, `flowTake-4.lua`), which reads the time with `TIME`,
 * so every process agrees on windows and due times whatever its clock; {@link now} is one `TIME`.
 * Every key a script touches is declared in its KEYS.
 *
 * The key index and the reactor set are on slots of their own, so they are kept by separate
 * commands, sent in the same round trip as the key's script (DD-flow24-9):
 * - {@link enter} and {@link leave} send `flowTouch-1.lua` (`ZADD` of the key to the index, scored
 *   with Redis time) and then their script without waiting for the first answer: both are in
 *   flight at once, one round trip in all. The touch is written first, on every call whatever the
 *   script answers, so on one connection (a standalone Redis, or a cluster node holding both
 *   slots) the index lists the key before the script can put a run in it: a process dying between
 *   the two writes leaves at worst a listed key without runs, which {@link prune} drops. (The
 *   commands go to the nodes of their slots, so on a cluster whose nodes differ the two may run in
 *   either order; both are written before either answer is read.) A failed touch fails the call.
 * - The first {@link enter} of a reactor by this store also sends `SADD` of the reactor to the
 *   reactor set, first of the three, and this store remembers it once it succeeded: the set lists a
 *   reactor before any of its keys holds a run. {@link reactors} is one `SMEMBERS`; the engine's
 *   sweep reads it once per sweep to find the keys of reactors that no longer declare
 *   concurrency, instead of one `ZRANGE` per reactor (DD-flow24-10). Reactors are never removed
 *   (the set is bounded by the reactor names): a process of the previous deploy may enter a run
 *   at any time and lists its reactor only once.
 * - {@link prune} checks that the key holds no live and no queued run (`EXISTS live queue`, on the
 *   key's slot), then `flowPrune-1.lua` drops it from the index only if its score is more than
 *   `idleMs` old. An enter landing between the two has touched the index just before its script:
 *   the touch comes either after the drop (the key is listed again) or before it (the score is
 *   fresh, so the key is kept). The race accepted: when `idleMs` is shorter than the time between
 *   that touch and the drop (a prune with `idleMs` 0 or a few ms), a key that just took a run may
 *   be dropped; it is listed again at its next enter or leave. The engine's sweep prunes with a
 *   grace time (a lease TTL by default), far longer than a round trip.
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
  /** The flow reactor set: `<prefix>:{flow:}:reactors`. */
  private readonly reactorsKey: string;
  /** Reactors this store has listed in the reactor set (it lists each once). */
  private readonly listedReactors = new Set<string>();

  constructor(
    private readonly redis: RedisConnection,
    options: RedisFlowStoreOptions,
  ) {
    this.redisKeys = options.keys;
    // The tag `{flow:}` is no reactor's index tag (a reactor name is never empty) nor a key's tag.
    this.reactorsKey = this.redisKeys.coordinationKey('flow', '', 'reactors');
    defineScripts(redis);
  }

  /** Redis `TIME`, in whole ms. */
  async now(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /**
   * `flowEnter-3.lua` on the key's slot, sent right after `flowTouch-1.lua` on the reactor's index
   * (and, the first time this store enters a run of the reactor, `SADD` of the reactor to the
   * reactor set) without waiting for it: one round trip (see the class comment).
   */
  async enter(reactor: string, key: string, runId: string, limit: number, maxQueued: number): Promise<FlowEntry> {
    runIdOf(runId);
    positiveInteger(limit, 'limit');
    positiveInteger(maxQueued, 'maxQueued');
    const listed = this.list(reactor, key, true);
    const entered = this.script(
      'flowEnter',
      this.concurrencyKeys(reactor, key),
      [runId, limit, maxQueued],
      reactor,
      key,
    );
    const [, reply] = await Promise.all([listed, entered]);
    if (reply[0] === 1) return { state: 'admitted' };
    if (reply[0] === 2) return { state: 'queued', position: Number(reply[2]) };
    if (reply[0] === 3) return { state: 'full', queued: Number(reply[2]) };
    throw refused('flowEnter', reply, reactor, key);
  }

  /** `flowLeave-3.lua`, sent right after `flowTouch-1.lua` on the reactor's index, without waiting for it. */
  async leave(reactor: string, key: string, runId: string, limit: number): Promise<string[]> {
    runIdOf(runId);
    positiveInteger(limit, 'limit');
    const listed = this.list(reactor, key, false);
    const left = this.script('flowLeave', this.concurrencyKeys(reactor, key), [runId, limit], reactor, key);
    const [, reply] = await Promise.all([listed, left]);
    if (reply[0] === 0) return [];
    if (reply[0] !== 1 || !Array.isArray(reply[2])) throw refused('flowLeave', reply, reactor, key);
    return reply[2].map(String);
  }

  /** One `SMEMBERS` of the flow reactor set. */
  async reactors(): Promise<string[]> {
    return (await this.redis.smembers(this.reactorsKey)).sort();
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

  /**
   * Send (without waiting) what lists `key` before `enter` or `leave` changes it: `flowTouch-1.lua`
   * on the reactor's index and, for an enter of a reactor this store has not listed yet, `SADD` to
   * the reactor set first. Each is sent at once, in this order, on the connection of its slot; the
   * caller sends its script right after, so all of them travel in one round trip. The reactor is
   * remembered as listed only once its `SADD` succeeded.
   */
  private list(reactor: string, key: string, entering: boolean): Promise<unknown> {
    const sent: Array<Promise<unknown>> = [];
    if (entering && !this.listedReactors.has(reactor)) {
      sent.push(this.redis.sadd(this.reactorsKey, reactor).then(() => this.listedReactors.add(reactor)));
    }
    // Sent as this call runs (before its first await), so it goes out ahead of the caller's script.
    sent.push(runScript(this.redis, 'flowTouch', [this.redisKeys.flowIndexKey(reactor)], [key]));
    return Promise.all(sent);
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
