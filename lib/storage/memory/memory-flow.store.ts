import {
  systemClock,
  type Clock,
  type FlowEntry,
  type FlowKeyView,
  type FlowStore,
  type GatherReply,
  type GatherSpec,
  type TakeReply,
} from '../../core';
import { positiveInteger } from '../coordination-args';

/**
 * A value kept until `expiresAt` (ms), the memory twin of a Redis key with a TTL: it counts as
 * absent once the time is past `expiresAt` (Redis's boundary).
 */
interface Expiring<T> {
  value: T;
  expiresAt: number;
}

/** A concurrency key's slots and queue. */
interface Slots {
  /** Run -> when it was admitted (ms), in admission order. */
  live: Map<string, number>;
  /** Queued runs, next first. */
  queue: string[];
}

/** A throttle's one window pointer: the latest window with reservations, and how many it has. */
interface Throttle {
  periodMs: number;
  window: number;
  count: number;
}

/** A gather, stored under its run id until `ttlMs` after it opened. */
interface Gather {
  items: string[];
  openedAt: number;
  dueAt: number;
  /** No start joins it any more (it was taken, or the batch filled). */
  closed: boolean;
}

/** Operations between two sweeps of expired entries (entries nobody reads again would stay). */
const SWEEP_EVERY = 1024;

/**
 * In-process {@link FlowStore} for the embedded runtime and tests. It follows the same contract as
 * `RedisFlowStore` (both pass `test/conformance/flow-store.conformance.ts`): each operation runs
 * synchronously inside one call, so it is atomic like a Lua script, and reads the time once, from
 * the injected {@link Clock} (a fake clock makes every window, due time and expiry deterministic).
 *
 * Throttle windows and gathers expire like Redis keys (a window pointer at the end of its window, a
 * gather `ttlMs` after it opened): an entry past its expiry behaves as absent when next read, and a
 * sweep every {@link SWEEP_EVERY} operations drops the ones nobody reads again. Concurrency slots
 * and queues have no expiry (they are bounded by `limit` and `maxQueued`); a key's entry goes when
 * it holds no run, and its place in the key index when pruned. Not shared between processes.
 *
 * @example
 * const flow = new MemoryFlowStore(fakeClock);
 * const entry = await flow.enter('billing', 'tenant-42', runId, 2, 100);
 */
export class MemoryFlowStore implements FlowStore {
  /** Concurrency slots and queues, by JSON `[reactor, key]`; absent when the key holds no run. */
  private readonly slots = new Map<string, Slots>();
  /** Reactor -> concurrency key -> its last activity (ms). */
  private readonly indexes = new Map<string, Map<string, number>>();
  /** Every reactor that ever entered a run ({@link reactors}). */
  private readonly entered = new Set<string>();
  /** Throttle window pointers, by JSON `[reactor, key]`. */
  private readonly throttles = new Map<string, Expiring<Throttle>>();
  /** The run id of each key's open gather, by JSON `[reactor, key]`. */
  private readonly open = new Map<string, Expiring<string>>();
  /** Gathers, by JSON `[reactor, key, runId]`. */
  private readonly gathers = new Map<string, Expiring<Gather>>();
  private operations = 0;

  /** @param clock source of time for every admission, window, due time and expiry. @default systemClock */
  constructor(readonly clock: Clock = systemClock) {}

  async now(): Promise<number> {
    return this.clock.now();
  }

  async enter(reactor: string, key: string, runId: string, limit: number, maxQueued: number): Promise<FlowEntry> {
    positiveInteger(limit, 'limit');
    positiveInteger(maxQueued, 'maxQueued');
    const now = this.tick();
    // Listed whatever the answer, as the Redis adapter's touch, sent before its script.
    this.entered.add(reactor);
    this.touch(reactor, key, now);
    const id = JSON.stringify([reactor, key]);
    const slots = this.slots.get(id) ?? { live: new Map<string, number>(), queue: [] };
    let entry: FlowEntry;
    if (slots.live.has(runId)) {
      entry = { state: 'admitted' };
    } else if (slots.queue.includes(runId)) {
      entry = { state: 'queued', position: slots.queue.indexOf(runId) + 1 };
    } else if (slots.live.size < limit && slots.queue.length === 0) {
      slots.live.set(runId, now);
      entry = { state: 'admitted' };
    } else if (slots.queue.length >= maxQueued) {
      return { state: 'full', queued: slots.queue.length };
    } else {
      slots.queue.push(runId);
      entry = { state: 'queued', position: slots.queue.length };
    }
    this.slots.set(id, slots);
    return entry;
  }

  async leave(reactor: string, key: string, runId: string, limit: number): Promise<string[]> {
    positiveInteger(limit, 'limit');
    const now = this.tick();
    this.touch(reactor, key, now);
    const id = JSON.stringify([reactor, key]);
    const slots = this.slots.get(id);
    if (!slots) return [];
    const queued = slots.queue.indexOf(runId);
    if (slots.live.delete(runId)) {
      // Freed a slot: fill it below.
    } else if (queued >= 0) {
      slots.queue.splice(queued, 1);
    } else {
      return [];
    }
    const admitted: string[] = [];
    while (slots.live.size < limit && slots.queue.length > 0) {
      const next = slots.queue.shift()!;
      slots.live.set(next, now);
      admitted.push(next);
    }
    if (slots.live.size === 0 && slots.queue.length === 0) this.slots.delete(id);
    return admitted;
  }

  async inspect(reactor: string, key: string, peek: number): Promise<FlowKeyView> {
    nonNegativeInteger(peek, 'peek');
    this.tick();
    const slots = this.slots.get(JSON.stringify([reactor, key]));
    return {
      key,
      live: [...(slots?.live ?? [])].map(([runId, since]) => ({ runId, since })),
      queued: slots?.queue.length ?? 0,
      next: slots?.queue.slice(0, peek) ?? [],
    };
  }

  async keys(reactor: string, limit: number): Promise<string[]> {
    positiveInteger(limit, 'limit');
    this.tick();
    const index = this.indexes.get(reactor);
    if (!index) return [];
    // Oldest activity first, ties by key (a Redis sorted set's order).
    return [...index]
      .sort(([a, at], [b, bt]) => at - bt || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit)
      .map(([key]) => key);
  }

  async reactors(): Promise<string[]> {
    this.tick();
    return [...this.entered].sort();
  }

  async prune(reactor: string, key: string, idleMs: number): Promise<boolean> {
    nonNegativeInteger(idleMs, 'idleMs');
    const now = this.tick();
    const index = this.indexes.get(reactor);
    const last = index?.get(key);
    if (!index || last === undefined) return false;
    if (this.slots.has(JSON.stringify([reactor, key])) || last >= now - idleMs) return false;
    index.delete(key);
    if (index.size === 0) this.indexes.delete(reactor);
    return true;
  }

  async reserveStart(
    reactor: string,
    key: string,
    limit: number,
    periodMs: number,
  ): Promise<{ startAt: number; now: number }> {
    positiveInteger(limit, 'limit');
    positiveInteger(periodMs, 'periodMs');
    const now = this.tick();
    const id = JSON.stringify([reactor, key]);
    const current = Math.floor(now / periodMs);
    const stored = live(this.throttles, id, now)?.value;
    let throttle: Throttle;
    let startAt: number;
    if (!stored || stored.periodMs !== periodMs || stored.window < current) {
      throttle = { periodMs, window: current, count: 1 };
      startAt = now;
    } else if (stored.count < limit) {
      throttle = { ...stored, count: stored.count + 1 };
      startAt = Math.max(now, stored.window * periodMs);
    } else {
      throttle = { periodMs, window: stored.window + 1, count: 1 };
      startAt = throttle.window * periodMs;
    }
    // Kept until its window ends: an older pointer reads as "no reservation from now on".
    this.throttles.set(id, { value: throttle, expiresAt: (throttle.window + 1) * periodMs });
    return { startAt, now };
  }

  async gather(reactor: string, key: string, newRunId: string, item: string, spec: GatherSpec): Promise<GatherReply> {
    checkGatherSpec(spec);
    const now = this.tick();
    const id = JSON.stringify([reactor, key]);
    const openRun = live(this.open, id, now)?.value;
    const stored = openRun === undefined ? undefined : live(this.gathers, JSON.stringify([reactor, key, openRun]), now);
    const opened = !stored || stored.value.closed;
    const runId = opened ? newRunId : openRun!;
    let gather: Gather;
    let expiresAt: number;
    if (opened) {
      gather = { items: [item], openedAt: now, dueAt: now + spec.maxWaitMs, closed: false };
      expiresAt = now + spec.ttlMs;
    } else {
      gather = stored!.value;
      expiresAt = stored!.expiresAt;
      if (spec.mode === 'last') gather.items = [item];
      else gather.items.push(item);
    }
    gather.dueAt =
      spec.mode === 'last'
        ? Math.min(now + spec.periodMs!, gather.openedAt + spec.maxWaitMs)
        : gather.openedAt + spec.maxWaitMs;
    const full = spec.mode === 'all' && spec.maxSize !== undefined && gather.items.length >= spec.maxSize;
    if (full) {
      gather.closed = true;
      gather.dueAt = now;
    }
    this.gathers.set(JSON.stringify([reactor, key, runId]), { value: gather, expiresAt });
    if (full) this.open.delete(id);
    else this.open.set(id, { value: runId, expiresAt });
    return { runId, opened, full, dueAt: gather.dueAt, size: gather.items.length, now };
  }

  async take(reactor: string, key: string, runId: string): Promise<TakeReply | undefined> {
    const now = this.tick();
    const stored = live(this.gathers, JSON.stringify([reactor, key, runId]), now);
    if (!stored) return undefined;
    const gather = stored.value;
    if (!gather.closed && now < gather.dueAt) return { due: false, dueAt: gather.dueAt, now };
    gather.closed = true;
    const id = JSON.stringify([reactor, key]);
    if (this.open.get(id)?.value === runId) this.open.delete(id);
    return { due: true, items: [...gather.items] };
  }

  /** Forget everything (tests). */
  clear(): void {
    for (const map of [this.slots, this.indexes, this.throttles, this.open, this.gathers]) map.clear();
  }

  /** Record activity on a concurrency key: it is listed in the reactor's key index at `now`. */
  private touch(reactor: string, key: string, now: number): void {
    const index = this.indexes.get(reactor) ?? new Map<string, number>();
    index.set(key, now);
    this.indexes.set(reactor, index);
  }

  /** The time of the operation starting, after an occasional sweep of expired entries. */
  private tick(): number {
    const now = this.clock.now();
    if (++this.operations % SWEEP_EVERY === 0) this.sweep(now);
    return now;
  }

  /** Drop every entry past its expiry. */
  private sweep(now: number): void {
    for (const map of [this.throttles, this.open, this.gathers]) {
      for (const [id, entry] of map) if (entry.expiresAt < now) map.delete(id);
    }
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

/**
 * Check that `value` is a non-negative safe integer (a peek, an idle time).
 * @throws RangeError otherwise.
 */
function nonNegativeInteger(value: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${what} must be a non-negative integer, got ${String(value)}.`);
  }
  return value;
}

/**
 * Check a gather's spec: a known mode, positive integer times, a debounce's `periodMs`, and a
 * `maxSize` (when given) that is a positive integer.
 * @throws RangeError otherwise.
 */
function checkGatherSpec(spec: GatherSpec): void {
  if (spec?.mode !== 'last' && spec?.mode !== 'all') {
    throw new RangeError(`A gather's mode must be 'last' or 'all', got ${String(spec?.mode)}.`);
  }
  if (spec.mode === 'last' || spec.periodMs !== undefined) positiveInteger(spec.periodMs!, 'periodMs');
  positiveInteger(spec.maxWaitMs, 'maxWaitMs');
  if (spec.maxSize !== undefined) positiveInteger(spec.maxSize, 'maxSize');
  positiveInteger(spec.ttlMs, 'ttlMs');
}
