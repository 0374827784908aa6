import {
  InternalError,
  type CoordinationStore,
  type LockReply,
  type OrderTurn,
  type RateReply,
  type RateWindow,
  type SemaphoreReply,
} from '../../core';
import { checkRateWindows, COORDINATION_COUNTER_TTL_MS, positiveInteger } from '../coordination-args';
import { normalizeTtlMs } from '../lease-ttl';
import { StorageErrorCode } from '../storage-error-codes';
import type { RedisKeys } from './redis.keys';
import { defineScripts, runScript, SCRIPT_FILES, type RedisConnection, type ScriptName } from './redis-scripts';

/** Options of {@link RedisCoordinationStore}. */
export interface RedisCoordinationStoreOptions {
  /** Key builder; the same instance (prefix) as the other adapters'. */
  keys: RedisKeys;
}

type Reply = Array<string | number | null>;

const TURN_STATES: ReadonlySet<string> = new Set<OrderTurn['state']>([
  'go',
  'poison_advance',
  'wait',
  'stale',
  'drained',
]);

/**
 * {@link CoordinationStore} on Redis. Behaves exactly as `MemoryCoordinationStore` (both pass
 * `test/conformance/coordination-store.conformance.ts`).
 *
 * ## Keys (see {@link RedisKeys.coordinationKey})
 *
 * Every key of one primitive and name carries the hash tag `{<kind>:<name>}`, the name URI-encoded
 * (braces in it cannot move the tag), so each script runs on keys of one slot:
 *
 * ```
 * {lock:<name>}:held          HASH   owner, count (takes), fence; PX = the lock's TTL
 * {lock:<name>}:fence         STRING the last fence given; PX = max(30 days, TTL), refreshed on
 *                                    every take and extend, so that fences never restart at 1
 * {sem:<name>}                ZSET   holder -> expiry of its lease (ms); PX = the longest lease
 * {rate:<name>}:<w>:<index>   STRING uses in window `index` of length `w` ms; PX = 2 * w
 * {period:<name>}:<bucket>    STRING "1"; PX = the mark's TTL
 * {order:<name>}:next         STRING the last nonce assigned               PX = ttl (on assign)
 * {order:<name>}:last         STRING the last nonce completed (0: none)    same
 * {order:<name>}:assigned     HASH   nonce -> heartbeat (ms), until done   same
 * {order:<name>}:failed       STRING the smallest failed nonce             same
 * {order:<name>}:epoch        STRING the batch's epoch; outlives a drain   PX = max(30 days, ttl)
 * ```
 *
 * A lock's hash is `{lock:<name>}:held` rather than `{lock:<name>}`, which is where the
 * `RedisLockManager` keeps its leases (a STRING): a lock and a lease of the same name never meet.
 *
 * ## Round trips and time
 *
 * Every operation is one command: a script for each lock, semaphore, rate and ordered-lock
 * operation (`lockAcquire-2.lua`, `semaphoreAcquire-1.lua`, `rateConsume-n.lua`,
 * `orderTurn-5.lua`, ...), `EXISTS` / `SET PX` for periods (one command each needs no script),
 * and `TIME` for {@link now}. The scripts read the time with `TIME` and expiries are Redis's own,
 * so every process agrees on windows and leases whatever its clock. Every key a script touches is
 * declared in its KEYS: a rate limit's counters are named here, as candidates around this
 * process's estimate of Redis's time, and `rateConsume-n.lua` picks the current one by TIME (a
 * miss teaches the estimate and is sent again).
 *
 * The client is the caller's: this class never closes it.
 *
 * @example
 * const coordination = new RedisCoordinationStore(redis, { keys: new RedisKeys({ prefix: 'reactor' }) });
 * const lock = await coordination.acquireLock('invoice:42', runId, 30_000);
 */
export class RedisCoordinationStore implements CoordinationStore {
  private readonly keys: RedisKeys;
  /** Redis's time minus this process's clock, as last measured by a rate limit's miss (ms). */
  private clockOffsetMs = 0;

  constructor(
    private readonly redis: RedisConnection,
    options: RedisCoordinationStoreOptions,
  ) {
    this.keys = options.keys;
    defineScripts(redis);
  }

  /** Redis `TIME`, in whole ms. */
  async now(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** `lockAcquire-2.lua`. */
  async acquireLock(key: string, owner: string, ttlMs: number): Promise<LockReply> {
    const ttl = normalizeTtlMs(ttlMs);
    const reply = await this.script('lockAcquire', this.lockKeys(key), [owner, ttl, counterTtl(ttl)], key);
    return reply[0] === 1
      ? { acquired: true, fence: Number(reply[1]), count: Number(reply[2]) }
      : { acquired: false, holder: String(reply[1]), retryAfterMs: Number(reply[2]) };
  }

  /** `lockExtend-2.lua`. */
  async extendLock(key: string, owner: string, fence: number, ttlMs: number): Promise<boolean> {
    positiveInteger(fence, 'fence');
    const ttl = normalizeTtlMs(ttlMs);
    return (await this.integer('lockExtend', this.lockKeys(key), [owner, fence, ttl, counterTtl(ttl)], key)) === 1;
  }

  /** `lockRelease-1.lua`. */
  async releaseLock(key: string, owner: string, fence: number): Promise<boolean> {
    positiveInteger(fence, 'fence');
    return (await this.integer('lockRelease', [this.lockKeys(key)[0]], [owner, fence], key)) === 1;
  }

  /** `semaphoreAcquire-1.lua`. */
  async acquireSemaphore(key: string, holder: string, limit: number, leaseMs: number): Promise<SemaphoreReply> {
    positiveInteger(limit, 'limit');
    const lease = normalizeTtlMs(leaseMs, 'leaseMs');
    const reply = await this.script('semaphoreAcquire', [this.semaphoreKey(key)], [holder, limit, lease], key);
    return reply[0] === 1
      ? { acquired: true, holders: Number(reply[1]) }
      : { acquired: false, holders: Number(reply[1]), retryAfterMs: Number(reply[2]) };
  }

  /** `semaphoreExtend-1.lua`. */
  async extendSemaphore(key: string, holder: string, leaseMs: number): Promise<boolean> {
    const lease = normalizeTtlMs(leaseMs, 'leaseMs');
    return (await this.integer('semaphoreExtend', [this.semaphoreKey(key)], [holder, lease], key)) === 1;
  }

  /** `semaphoreRelease-1.lua`. */
  async releaseSemaphore(key: string, holder: string): Promise<boolean> {
    return (await this.integer('semaphoreRelease', [this.semaphoreKey(key)], [holder], key)) === 1;
  }

  /**
   * `rateConsume-n.lua`, on keys it declares: for each window, the counters of the indexes around
   * this process's estimate of Redis's time (the local clock plus the offset learned from Redis);
   * the script picks the current one by TIME. A miss (the estimate was off by more than the slack)
   * touches nothing and answers Redis's time: the offset is learned from it and the call is sent
   * again, with twice the slack. One round trip when the clocks agree.
   */
  async consumeRate(key: string, windows: readonly RateWindow[]): Promise<RateReply> {
    const checked = checkRateWindows(windows);
    const base = this.keys.coordinationKey('rate', name(key));
    let slackMs = RATE_CLOCK_SLACK_MS;
    for (let attempt = 1; ; attempt++) {
      const estimate = Date.now() + this.clockOffsetMs;
      const keys: string[] = [];
      const args: number[] = [checked.length];
      for (const { windowMs, limit } of checked) {
        let first = Math.floor((estimate - slackMs) / windowMs);
        let last = Math.floor((estimate + slackMs) / windowMs);
        if (last - first >= RATE_MAX_CANDIDATES) {
          first = Math.floor(estimate / windowMs) - RATE_MAX_CANDIDATES / 2;
          last = first + RATE_MAX_CANDIDATES - 1;
        }
        args.push(windowMs, limit, first, last - first + 1);
        for (let index = first; index <= last; index++) keys.push(`${base}:${windowMs}:${index}`);
      }
      const sentAt = Date.now();
      const reply = await this.script('rateConsume', keys, args, key);
      if (reply[0] === 1) return { allowed: true };
      if (reply[0] === 0) return { allowed: false, window: Number(reply[1]), retryAfterMs: Number(reply[2]) };
      if (reply[0] !== -1 || attempt >= RATE_ATTEMPTS) throw refused('rateConsume', reply, key);
      this.clockOffsetMs = Number(reply[1]) - Math.round((sentAt + Date.now()) / 2);
      slackMs *= 2;
    }
  }

  /** One `EXISTS`. */
  async isPeriodMarked(key: string, bucket: string): Promise<boolean> {
    return (await this.redis.exists(this.periodKey(key, bucket))) === 1;
  }

  /** One `SET ... PX` (not NX: a mark is only ever set to "1"). */
  async markPeriod(key: string, bucket: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.periodKey(key, bucket), '1', 'PX', normalizeTtlMs(ttlMs));
  }

  /** `orderAssign-5.lua`. */
  async assignOrder(key: string, ttlMs: number): Promise<{ nonce: number; epoch: number }> {
    const ttl = normalizeTtlMs(ttlMs);
    const reply = await this.script('orderAssign', this.orderKeys(key), [ttl, counterTtl(ttl)], key);
    return { nonce: Number(reply[0]), epoch: Number(reply[1]) };
  }

  /** `orderTurn-5.lua`. */
  async orderTurn(key: string, nonce: number, epoch: number, poisonPillMs: number): Promise<OrderTurn> {
    positiveInteger(nonce, 'nonce');
    positiveInteger(epoch, 'epoch');
    const poisonPill = normalizeTtlMs(poisonPillMs, 'poisonPillMs');
    const reply = await this.script('orderTurn', this.orderKeys(key), [nonce, epoch, poisonPill], key);
    const state = String(reply[0]);
    if (!TURN_STATES.has(state)) {
      throw new InternalError(`Script 'orderTurn' (${SCRIPT_FILES.orderTurn}) answered ${JSON.stringify(reply)}.`);
    }
    return {
      state: state as OrderTurn['state'],
      retryAfterMs: Number(reply[1]),
      lastCompleted: Number(reply[2]),
      firstFailed: Number(reply[3]),
    };
  }

  /** `orderHeartbeat-2.lua`. */
  async orderHeartbeat(key: string, nonce: number, epoch: number): Promise<void> {
    positiveInteger(nonce, 'nonce');
    positiveInteger(epoch, 'epoch');
    const [, , assigned, , epochKey] = this.orderKeys(key);
    await this.integer('orderHeartbeat', [epochKey, assigned], [nonce, epoch], key);
  }

  /** `orderAdvance-5.lua`. */
  async orderAdvance(key: string, nonce: number, epoch: number, failed: boolean, ttlMs: number): Promise<void> {
    positiveInteger(nonce, 'nonce');
    positiveInteger(epoch, 'epoch');
    const ttl = normalizeTtlMs(ttlMs);
    await this.integer('orderAdvance', this.orderKeys(key), [nonce, epoch, failed ? '1' : '0', ttl], key);
  }

  /** A lock's hash and its fence counter. */
  private lockKeys(key: string): [string, string] {
    return [
      this.keys.coordinationKey('lock', name(key), 'held'),
      this.keys.coordinationKey('lock', name(key), 'fence'),
    ];
  }

  private semaphoreKey(key: string): string {
    return this.keys.coordinationKey('sem', name(key));
  }

  private periodKey(key: string, bucket: string): string {
    return this.keys.coordinationKey('period', name(key), bucket);
  }

  /** An ordered lock's keys, in the order its scripts declare them. */
  private orderKeys(key: string): [string, string, string, string, string] {
    const part = (p: string) => this.keys.coordinationKey('order', name(key), p);
    return [part('next'), part('last'), part('assigned'), part('failed'), part('epoch')];
  }

  /** Run a script that answers an array. */
  private async script(script: ScriptName, keys: string[], args: Array<string | number>, key: string): Promise<Reply> {
    const reply = (await runScript(this.redis, script, keys, args)) as number | Reply;
    if (!Array.isArray(reply)) throw refused(script, reply, key);
    return reply;
  }

  /** Run a script that answers a non-negative integer. */
  private async integer(
    script: ScriptName,
    keys: string[],
    args: Array<string | number>,
    key: string,
  ): Promise<number> {
    const reply = await runScript(this.redis, script, keys, args);
    if (typeof reply !== 'number' || reply < 0) throw refused(script, reply, key);
    return reply;
  }
}

/** The name as it goes into a hash tag: URI-encoded, so that `{`, `}` and `:` cannot appear in it. */
function name(key: string): string {
  return encodeURIComponent(key);
}

/** TTL of a lock's fence counter or an ordered lock's epoch: 30 days, or the TTL when longer. */
function counterTtl(ttl: number): number {
  return Math.max(COORDINATION_COUNTER_TTL_MS, ttl);
}

/** Candidate indexes of a rate window cover the estimate of Redis's time +- this much (ms). */
const RATE_CLOCK_SLACK_MS = 250;
/** At most this many candidate keys per window (an even number). */
const RATE_MAX_CANDIDATES = 64;
/** Sends of one `consumeRate` before a miss is an error (each learns the clock and doubles the slack). */
const RATE_ATTEMPTS = 4;

function refused(script: ScriptName, reply: unknown, key: string): InternalError {
  const what =
    reply === StorageErrorCode.InvalidArgument ? 'refused its arguments (a bug in nest-reactor)' : 'answered';
  return new InternalError(
    `Script '${script}' (${SCRIPT_FILES[script]}) on coordination key '${key}' ${what}: ${JSON.stringify(reply)}.`,
  );
}
