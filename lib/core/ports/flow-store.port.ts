/**
 * Flow control of a reactor's starts, per reactor and key (a tenant, an account, ...): fair
 * concurrency queues, throttle windows, and the gathers that debounce and batch starts.
 *
 * Every operation is atomic (one Lua script on Redis, whose keys share one hash tag per reactor and
 * key, so a key's structures live on one cluster slot) and reads time from the store (Redis `TIME`;
 * the memory adapter's clock). Reactor names and keys are the application's, unprefixed. Every
 * structure of a key is bounded: `limit` live runs, `maxQueued` queued ones, one throttle window
 * pointer, one open gather of at most `maxSize` items.
 */

/** The answer to {@link FlowStore.enter}. */
export type FlowEntry =
  /** The run holds one of the key's slots (it may execute). */
  | { state: 'admitted' }
  /** The run waits in the key's queue; `position` 1 is next. */
  | { state: 'queued'; position: number }
  /** The key's queue holds `maxQueued` runs: nothing was stored. */
  | { state: 'full'; queued: number };

/** What a concurrency key holds now ({@link FlowStore.inspect}). */
export interface FlowKeyView {
  key: string;
  /** Runs holding a slot, with when each was admitted (store ms). */
  live: Array<{ runId: string; since: number }>;
  /** How many runs wait in the queue. */
  queued: number;
  /** The first queued run ids, next first (at most the `peek` asked for). */
  next: string[];
}

/** How a gather collects starts ({@link FlowStore.gather}). */
export interface GatherSpec {
  /** `last`: a debounce (the last start's item wins); `all`: a batch (every start's item, in order). */
  mode: 'last' | 'all';
  /** Debounce: each start pushes the due time to `periodMs` after it. */
  periodMs?: number;
  /** The gather is due at most this long after it opened. */
  maxWaitMs: number;
  /** Batch: the gather closes (is due at once) when it holds this many items. */
  maxSize?: number;
  /** How long a gather's items are kept after it opened (its run reads them when it is due). */
  ttlMs: number;
}

/** The answer to {@link FlowStore.gather}. */
export interface GatherReply {
  /** The run the gather becomes: `newRunId` when this start opened it, else the open gather's. */
  runId: string;
  /** This start opened the gather. */
  opened: boolean;
  /** This start filled the batch (`maxSize`): the gather is closed and due now. */
  full: boolean;
  /** When the gather is due (store ms). */
  dueAt: number;
  /** Items gathered so far. */
  size: number;
  /** The store's time of this call (ms). */
  now: number;
}

/** The answer to {@link FlowStore.take}. */
export type TakeReply =
  /** The gather is closed (no start joins it from now on): its items, oldest first. Repeatable. */
  | { due: true; items: string[] }
  /** Not due yet: ask again at `dueAt`. */
  | { due: false; dueAt: number; now: number };

/** Flow-control primitives (see the module comment). */
export interface FlowStore {
  /** The store's time, in ms since the epoch (Redis `TIME`). */
  now(): Promise<number>;

  /**
   * Concurrency: `runId` takes one of `limit` slots of (`reactor`, `key`) when one is free and
   * nobody is queued, else joins the key's queue (first in, first out), unless it holds `maxQueued`
   * runs (`full`, nothing stored). Idempotent: a run that holds a slot answers `admitted`, a queued
   * one `queued` (its place unchanged). Whatever it answers, the key is listed in the reactor's key
   * index (its last activity now) and the reactor in {@link reactors}, written with (the Redis
   * adapter: just before) the key's change, so that a key holding runs is always listed.
   */
  enter(reactor: string, key: string, runId: string, limit: number, maxQueued: number): Promise<FlowEntry>;

  /**
   * `runId` leaves the key (its run ended, or it will never run): its slot (or its place in the
   * queue) is freed, and queued runs are admitted in order while fewer than `limit` hold a slot.
   * Returns the run ids admitted now, in order. Leaving twice admits nothing more. Whatever it
   * answers, the key is listed in the reactor's key index, its last activity now.
   */
  leave(reactor: string, key: string, runId: string, limit: number): Promise<string[]>;

  /** What the key holds: live runs, the queue's length and its first `peek` run ids. */
  inspect(reactor: string, key: string, peek: number): Promise<FlowKeyView>;

  /** The reactor's concurrency keys that hold (or lately held) runs, oldest activity first, at most `limit`. */
  keys(reactor: string, limit: number): Promise<string[]>;

  /**
   * Every reactor that ever {@link enter}ed a run (any key, any process), sorted; listed with its
   * first enter and never forgotten (bounded by the reactor names). The flow sweep reads it once
   * per sweep: a reactor that no longer declares concurrency has keys to drain only if it is
   * listed here, so the others cost no read of their key index.
   */
  reactors(): Promise<string[]>;

  /**
   * Drop `key` from the reactor's key index when it holds no live and no queued run and its last
   * activity is older than `idleMs`. Returns whether it was dropped.
   */
  prune(reactor: string, key: string, idleMs: number): Promise<boolean>;

  /**
   * Throttle: reserve one start in the earliest window of `periodMs` (aligned on the epoch), from
   * the current one on, that has fewer than `limit` starts reserved. Returns when the start may go
   * (`startAt`: now, or the start of a later window) and the store's time. Windows fill in order,
   * so the key keeps one window and its count, whatever the backlog.
   */
  reserveStart(
    reactor: string,
    key: string,
    limit: number,
    periodMs: number,
  ): Promise<{ startAt: number; now: number }>;

  /**
   * Debounce or batch: add `item` to the key's open gather, opening one for `newRunId` when none
   * is open. A debounce (`mode: 'last'`) keeps the last item and is due `periodMs` after the last
   * start, at most `maxWaitMs` after it opened; a batch (`mode: 'all'`) keeps every item and is due
   * `maxWaitMs` after it opened, or at once when it holds `maxSize` (it closes then: the next start
   * opens another).
   */
  gather(reactor: string, key: string, newRunId: string, item: string, spec: GatherSpec): Promise<GatherReply>;

  /**
   * The gather of run `runId` when it is due: it is closed (a later start opens another) and its
   * items are returned, the same items each time it is asked again until its `ttlMs` ends.
   * `undefined` when no gather of that run is stored.
   */
  take(reactor: string, key: string, runId: string): Promise<TakeReply | undefined>;
}
