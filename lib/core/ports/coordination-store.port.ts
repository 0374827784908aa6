/**
 * Coordination across processes: locks, semaphores, rate limits, periods and ordered locks, keyed by
 * names the application derives from a run's inputs (or a step's arguments).
 *
 * Every operation is atomic (one Lua script on Redis, whose keys share one hash tag per primitive
 * and name) and reads time from the store (Redis `TIME`; the memory adapter's clock), never from the
 * caller, so processes with skewed clocks agree on windows, buckets and expiries.
 */

/** The answer to {@link CoordinationStore.acquireLock}. */
export type LockReply =
  /**
   * Held by `owner`: `count` takes so far (re-entrant), `fence` the lock's fencing number, which
   * grows each time a new owner takes the lock (extend and release must present it).
   */
  | { acquired: true; fence: number; count: number }
  /** Held by another owner, for `retryAfterMs` more at most (its TTL). */
  | { acquired: false; holder: string; retryAfterMs: number };

/** The answer to {@link CoordinationStore.acquireSemaphore}. */
export type SemaphoreReply =
  /** `holder` holds one of the `limit` slots (taking it again refreshes its lease). */
  | { acquired: true; holders: number }
  /** Every slot is held; the first lease ends in `retryAfterMs`. */
  | { acquired: false; holders: number; retryAfterMs: number };

/** A fixed window of a rate limit: at most `limit` uses per `windowMs` (windows aligned on the epoch). */
export interface RateWindow {
  windowMs: number;
  limit: number;
}

/** The answer to {@link CoordinationStore.consumeRate}. */
export type RateReply =
  | { allowed: true }
  /** Window `window` (an index into the windows given) is full until it ends, in `retryAfterMs`. */
  | { allowed: false; window: number; retryAfterMs: number };

/** The answer to {@link CoordinationStore.orderTurn}. */
export interface OrderTurn {
  /**
   * `go`: it is this nonce's turn (or earlier); `poison_advance`: it is, after skipping holders that
   * stopped heartbeating for `poisonPillMs`; `wait`: an earlier nonce is still live; `stale`: the
   * key was reset since this nonce was assigned (another epoch); `drained`: the key holds nothing
   * (every assigned nonce completed and it was reset).
   */
  state: 'go' | 'poison_advance' | 'wait' | 'stale' | 'drained';
  /** For `wait`: when the blocking holder's heartbeat runs out, at most. */
  retryAfterMs: number;
  lastCompleted: number;
  /** The smallest nonce that failed (strict mode halts the ones after it), 0 if none. */
  firstFailed: number;
}

/** Coordination primitives (see the module comment). Keys are the application's names, unprefixed. */
export interface CoordinationStore {
  /** The store's time, in ms since the epoch (Redis `TIME`). */
  now(): Promise<number>;

  /** Take exclusive lock `key` for `owner`, for `ttlMs` (re-entrant: the same owner counts up and refreshes the TTL). */
  acquireLock(key: string, owner: string, ttlMs: number): Promise<LockReply>;
  /** Push the lock's expiry to `ttlMs` from now, if `owner` still holds it with this `fence`. */
  extendLock(key: string, owner: string, fence: number, ttlMs: number): Promise<boolean>;
  /** Count one take of `owner` (with this `fence`) down; the lock is free at zero. False when not held so. */
  releaseLock(key: string, owner: string, fence: number): Promise<boolean>;

  /**
   * Take one of `limit` slots of semaphore `key` for `holder`, leased for `leaseMs` (a crashed
   * holder's slot returns when its lease ends). Never more than `limit` holders at once.
   */
  acquireSemaphore(key: string, holder: string, limit: number, leaseMs: number): Promise<SemaphoreReply>;
  /** Push `holder`'s lease to `leaseMs` from now. False when it no longer holds a slot. */
  extendSemaphore(key: string, holder: string, leaseMs: number): Promise<boolean>;
  /** Give `holder`'s slot back. False when it held none. */
  releaseSemaphore(key: string, holder: string): Promise<boolean>;

  /**
   * Count one use of rate limit `key` in every window, or in none: when a window is full nothing
   * is counted and the reply says which and until when.
   */
  consumeRate(key: string, windows: readonly RateWindow[]): Promise<RateReply>;

  /** Whether period `key` is marked for `bucket` (a run already succeeded in it). */
  isPeriodMarked(key: string, bucket: string): Promise<boolean>;
  /** Mark period `key` for `bucket`, kept `ttlMs`. */
  markPeriod(key: string, bucket: string, ttlMs: number): Promise<void>;

  /** Take the next nonce of ordered lock `key` (1, 2, ...), and its epoch; kept `ttlMs`. */
  assignOrder(key: string, ttlMs: number): Promise<{ nonce: number; epoch: number }>;
  /** Whether `nonce` may go now; also stamps its heartbeat and skips dead holders (poison pill). */
  orderTurn(key: string, nonce: number, epoch: number, poisonPillMs: number): Promise<OrderTurn>;
  /** Stamp `nonce`'s heartbeat (it is alive), if its epoch is current. */
  orderHeartbeat(key: string, nonce: number, epoch: number): Promise<void>;
  /**
   * `nonce` finished (`failed`: it failed, which strict mode remembers): the next nonce's turn. When
   * every assigned nonce completed, the key is reset (only the epoch stays).
   */
  orderAdvance(key: string, nonce: number, epoch: number, failed: boolean, ttlMs: number): Promise<void>;
}
