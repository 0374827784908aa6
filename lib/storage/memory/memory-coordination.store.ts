import {
  systemClock,
  type Clock,
  type CoordinationStore,
  type LockReply,
  type OrderTurn,
  type RateReply,
  type RateWindow,
  type SemaphoreReply,
} from '../../core';
import { checkRateWindows, COORDINATION_COUNTER_TTL_MS, positiveInteger } from '../coordination-args';
import { normalizeTtlMs } from '../lease-ttl';

/**
 * A value kept until `expiresAt` (ms), the memory twin of a Redis key with a TTL: it counts as
 * absent once the time is past `expiresAt` (Redis's boundary).
 */
interface Expiring<T> {
  value: T;
  expiresAt: number;
}

interface HeldLock {
  owner: string;
  count: number;
  fence: number;
}

/** The keys of one ordered lock, each with its own expiry as on Redis (see `orderAssign-5.lua`). */
interface OrderKeys {
  next?: Expiring<number>;
  last?: Expiring<number>;
  /** Nonce -> its last heartbeat (ms), while not completed. */
  assigned?: Expiring<Map<number, number>>;
  failed?: Expiring<number>;
  epoch?: Expiring<number>;
}

/** Operations between two sweeps of expired entries (entries nobody reads again would stay). */
const SWEEP_EVERY = 1024;

/**
 * In-process {@link CoordinationStore} for the embedded runtime and tests. It follows the same
 * contract as `RedisCoordinationStore` (both pass `test/conformance/coordination-store.conformance.ts`)
 * and mirrors its scripts step by step: each operation runs synchronously inside one call, so it
 * is atomic like a Lua script, and reads the time once, from the injected {@link Clock} (a fake
 * clock makes every expiry, window and poison pill deterministic).
 *
 * Entries expire like Redis keys: an entry past its expiry behaves as absent when next read, and
 * a sweep every {@link SWEEP_EVERY} operations drops the ones nobody reads again. A semaphore lease
 * is over once its expiry has come (expiry <= now), as in the Redis ZSET sweep. Not shared between
 * processes.
 *
 * @example
 * const coordination = new MemoryCoordinationStore(fakeClock);
 * const lock = await coordination.acquireLock('invoice:42', runId, 30_000);
 */
export class MemoryCoordinationStore implements CoordinationStore {
  private readonly locks = new Map<string, Expiring<HeldLock>>();
  /** Each lock's last fence given; outlives the lock (see `lockAcquire-2.lua`). */
  private readonly fences = new Map<string, Expiring<number>>();
  /** Semaphore -> holder -> expiry of its lease (ms). */
  private readonly semaphores = new Map<string, Map<string, number>>();
  /** Rate counters, by JSON `[key, windowMs, index]`. */
  private readonly rates = new Map<string, Expiring<number>>();
  /** Period marks, by JSON `[key, bucket]`. */
  private readonly periods = new Map<string, number>();
  private readonly orders = new Map<string, OrderKeys>();
  private operations = 0;

  /** @param clock source of time for every expiry, window and heartbeat. @default systemClock */
  constructor(readonly clock: Clock = systemClock) {}

  async now(): Promise<number> {
    return this.clock.now();
  }

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<LockReply> {
    const ttl = normalizeTtlMs(ttlMs);
    const now = this.tick();
    const held = live(this.locks, key, now);
    if (held && held.value.owner !== owner) {
      return { acquired: false, holder: held.value.owner, retryAfterMs: Math.max(held.expiresAt - now, 1) };
    }
    const counter = live(this.fences, key, now);
    let lock: HeldLock;
    if (held) {
      lock = held.value;
      lock.count += 1;
      if (counter) counter.expiresAt = now + counterTtl(ttl);
    } else {
      lock = { owner, count: 1, fence: (counter?.value ?? 0) + 1 };
      this.fences.set(key, { value: lock.fence, expiresAt: now + counterTtl(ttl) });
    }
    this.locks.set(key, { value: lock, expiresAt: now + ttl });
    return { acquired: true, fence: lock.fence, count: lock.count };
  }

  async extendLock(key: string, owner: string, fence: number, ttlMs: number): Promise<boolean> {
    positiveInteger(fence, 'fence');
    const ttl = normalizeTtlMs(ttlMs);
    const now = this.tick();
    const held = this.heldBy(key, owner, fence, now);
    if (!held) return false;
    held.expiresAt = now + ttl;
    const counter = live(this.fences, key, now);
    if (counter) counter.expiresAt = now + counterTtl(ttl);
    return true;
  }

  async releaseLock(key: string, owner: string, fence: number): Promise<boolean> {
    positiveInteger(fence, 'fence');
    const now = this.tick();
    const held = this.heldBy(key, owner, fence, now);
    if (!held) return false;
    held.value.count -= 1;
    if (held.value.count <= 0) this.locks.delete(key);
    return true;
  }

  async acquireSemaphore(key: string, holder: string, limit: number, leaseMs: number): Promise<SemaphoreReply> {
    positiveInteger(limit, 'limit');
    const lease = normalizeTtlMs(leaseMs, 'leaseMs');
    const now = this.tick();
    const holders = this.leases(key, now);
    if (holders.size < limit || holders.has(holder)) {
      holders.set(holder, now + lease);
      this.semaphores.set(key, holders);
      return { acquired: true, holders: holders.size };
    }
    const first = Math.min(...holders.values());
    return { acquired: false, holders: holders.size, retryAfterMs: first - now };
  }

  async extendSemaphore(key: string, holder: string, leaseMs: number): Promise<boolean> {
    const lease = normalizeTtlMs(leaseMs, 'leaseMs');
    const now = this.tick();
    const holders = this.leases(key, now);
    if (!holders.has(holder)) return false;
    holders.set(holder, now + lease);
    return true;
  }

  async releaseSemaphore(key: string, holder: string): Promise<boolean> {
    const now = this.tick();
    const holders = this.leases(key, now);
    const released = holders.delete(holder);
    if (holders.size === 0) this.semaphores.delete(key);
    return released;
  }

  async consumeRate(key: string, windows: readonly RateWindow[]): Promise<RateReply> {
    checkRateWindows(windows);
    const now = this.tick();
    const counters: Array<{ id: string; windowMs: number; used?: Expiring<number> }> = [];
    for (const [i, { windowMs, limit }] of windows.entries()) {
      const index = Math.floor(now / windowMs);
      const id = JSON.stringify([key, windowMs, index]);
      const used = live(this.rates, id, now);
      if ((used?.value ?? 0) >= limit) {
        return { allowed: false, window: i, retryAfterMs: (index + 1) * windowMs - now };
      }
      counters.push({ id, windowMs, used });
    }
    for (const { id, windowMs, used } of counters) {
      if (used) used.value += 1;
      else this.rates.set(id, { value: 1, expiresAt: now + 2 * windowMs });
    }
    return { allowed: true };
  }

  async isPeriodMarked(key: string, bucket: string): Promise<boolean> {
    const now = this.tick();
    const id = JSON.stringify([key, bucket]);
    const expiresAt = this.periods.get(id);
    if (expiresAt === undefined) return false;
    if (expiresAt < now) {
      this.periods.delete(id);
      return false;
    }
    return true;
  }

  async markPeriod(key: string, bucket: string, ttlMs: number): Promise<void> {
    const ttl = normalizeTtlMs(ttlMs);
    const now = this.tick();
    this.periods.set(JSON.stringify([key, bucket]), now + ttl);
  }

  async assignOrder(key: string, ttlMs: number): Promise<{ nonce: number; epoch: number }> {
    const ttl = normalizeTtlMs(ttlMs);
    const now = this.tick();
    const order = this.order(key, now);
    const nonce = (order.next?.value ?? 0) + 1;
    order.next = { value: nonce, expiresAt: now + ttl };
    order.last = { value: order.last?.value ?? 0, expiresAt: now + ttl };
    const epoch = nonce === 1 || !order.epoch ? (order.epoch?.value ?? 0) + 1 : order.epoch.value;
    order.epoch = { value: epoch, expiresAt: now + counterTtl(ttl) };
    const assigned = order.assigned?.value ?? new Map<number, number>();
    assigned.set(nonce, now);
    order.assigned = { value: assigned, expiresAt: now + ttl };
    if (order.failed) order.failed.expiresAt = now + ttl;
    this.orders.set(key, order);
    return { nonce, epoch };
  }

  async orderTurn(key: string, nonce: number, epoch: number, poisonPillMs: number): Promise<OrderTurn> {
    positiveInteger(nonce, 'nonce');
    positiveInteger(epoch, 'epoch');
    const poisonPill = normalizeTtlMs(poisonPillMs, 'poisonPillMs');
    const now = this.tick();
    const order = this.order(key, now);
    if (order.epoch?.value !== epoch) return turn('stale');
    if (!order.next && !order.last) return turn('drained');
    let last = order.last?.value ?? 0;
    const failed = order.failed?.value ?? 0;
    const assigned = order.assigned?.value;
    if (nonce > last && assigned?.has(nonce)) assigned.set(nonce, now);
    if (nonce <= last + 1) return turn('go', 0, last, failed);
    let poisoned = false;
    while (last + 1 < nonce) {
      const at = assigned?.get(last + 1) ?? 0;
      if (at > 0 && now - at <= poisonPill) break;
      last += 1;
      setLast(order, last, now);
      assigned?.delete(last);
      poisoned = true;
    }
    this.dropEmpty(key, order);
    if (nonce <= last + 1) return turn(poisoned ? 'poison_advance' : 'go', 0, last, failed);
    const at = assigned?.get(last + 1) ?? 0;
    return turn('wait', at > 0 ? Math.max(poisonPill - (now - at), 1) : poisonPill, last, failed);
  }

  async orderHeartbeat(key: string, nonce: number, epoch: number): Promise<void> {
    positiveInteger(nonce, 'nonce');
    positiveInteger(epoch, 'epoch');
    const now = this.tick();
    const order = this.order(key, now);
    const assigned = order.assigned?.value;
    if (order.epoch?.value === epoch && assigned?.has(nonce)) assigned.set(nonce, now);
  }

  async orderAdvance(key: string, nonce: number, epoch: number, failed: boolean, ttlMs: number): Promise<void> {
    positiveInteger(nonce, 'nonce');
    positiveInteger(epoch, 'epoch');
    const ttl = normalizeTtlMs(ttlMs);
    const now = this.tick();
    const order = this.order(key, now);
    if (order.epoch?.value !== epoch || (!order.next && !order.last)) return;
    const last = order.last?.value ?? 0;
    if (failed && nonce > last && (!order.failed || nonce < order.failed.value)) {
      order.failed = { value: nonce, expiresAt: now + ttl };
    }
    order.assigned?.value.delete(nonce);
    if (nonce === last + 1) {
      setLast(order, nonce, now);
      const next = order.next?.value ?? 0;
      if (next > 0 && nonce >= next) {
        // Drain: every key but the epoch goes; the next assignment starts a batch at nonce 1.
        this.orders.set(key, { epoch: order.epoch });
        return;
      }
    }
    this.dropEmpty(key, order);
  }

  /** Forget everything (tests). */
  clear(): void {
    for (const map of [this.locks, this.fences, this.semaphores, this.rates, this.periods, this.orders]) map.clear();
  }

  /** The time of the operation starting, after an occasional sweep of expired entries. */
  private tick(): number {
    const now = this.clock.now();
    if (++this.operations % SWEEP_EVERY === 0) this.sweep(now);
    return now;
  }

  /** Drop every entry past its expiry. */
  private sweep(now: number): void {
    for (const map of [this.locks, this.fences, this.rates]) {
      for (const [id, entry] of map) if (entry.expiresAt < now) map.delete(id);
    }
    for (const [id, expiresAt] of this.periods) if (expiresAt < now) this.periods.delete(id);
    for (const key of [...this.semaphores.keys()]) this.leases(key, now);
    for (const key of [...this.orders.keys()]) this.order(key, now);
  }

  /** The lock `key`, if `owner` holds it under `fence` now. */
  private heldBy(key: string, owner: string, fence: number, now: number): Expiring<HeldLock> | undefined {
    const held = live(this.locks, key, now);
    return held && held.value.owner === owner && held.value.fence === fence ? held : undefined;
  }

  /**
   * The holders of semaphore `key` whose lease is not over at `now` (the others are removed, and
   * an emptied semaphore is dropped; the map returned is the stored one while it has holders).
   */
  private leases(key: string, now: number): Map<string, number> {
    const holders = this.semaphores.get(key) ?? new Map<string, number>();
    for (const [holder, expiresAt] of holders) if (expiresAt <= now) holders.delete(holder);
    if (holders.size === 0) this.semaphores.delete(key);
    return holders;
  }

  /** The live keys of ordered lock `key` at `now` (expired ones removed; a fresh object when none). */
  private order(key: string, now: number): OrderKeys {
    const order = this.orders.get(key) ?? {};
    for (const part of ['next', 'last', 'assigned', 'failed', 'epoch'] as const) {
      const entry = order[part];
      if (entry && entry.expiresAt < now) delete order[part];
    }
    this.dropEmpty(key, order);
    return order;
  }

  /** Drop ordered lock `key` from the map when none of its keys is left. */
  private dropEmpty(key: string, order: OrderKeys): void {
    if (order.assigned?.value.size === 0) delete order.assigned;
    if (Object.values(order).every((entry) => entry === undefined)) this.orders.delete(key);
  }
}

/** The entry `id` of `map` if it has not expired at `now`; an expired one is deleted. */
function live<T>(map: Map<string, Expiring<T>>, id: string, now: number): Expiring<T> | undefined {
  const entry = map.get(id);
  if (!entry) return undefined;
  if (entry.expiresAt < now) {
    map.delete(id);
    return undefined;
  }
  return entry;
}

/** TTL of a lock's fence counter or an ordered lock's epoch: 30 days, or the TTL when longer. */
function counterTtl(ttl: number): number {
  return Math.max(COORDINATION_COUNTER_TTL_MS, ttl);
}

/**
 * Set an ordered lock's last completed nonce, keeping its expiry; without one, it takes the next
 * counter's (at least 1 ms from now), as `setLast` in `lib/scripts/includes/order.lua`.
 */
function setLast(order: OrderKeys, nonce: number, now: number): void {
  const pttl = (entry: Expiring<number> | undefined) => (entry ? entry.expiresAt - now : -2);
  let ttl = pttl(order.last);
  if (ttl < 1) ttl = Math.max(pttl(order.next), 1);
  order.last = { value: nonce, expiresAt: now + ttl };
}

function turn(state: OrderTurn['state'], retryAfterMs = 0, lastCompleted = 0, firstFailed = 0): OrderTurn {
  return { state, retryAfterMs, lastCompleted, firstFailed };
}
