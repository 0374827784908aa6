/**
 * A lock and a semaphore taken together by one owner: what a reactor's coordination (engine's
 * `Coordination`) and a step's own (`step-coordination.ts`) both hold. Taken lock first, extended
 * every third of their TTL while held, given back semaphore first.
 */
import { CoordinationContendedError } from '../errors/coordination.error';
import type { Clock } from '../ports/clock.port';
import type { CoordinationStore } from '../ports/coordination-store.port';

/** The lock and semaphore to take (absent: not wanted). */
export interface MutexSpec {
  readonly lock?: { readonly ttlMs: number };
  readonly semaphore?: { readonly limit: number; readonly leaseMs: number };
}

/** Their keys (present for each one wanted). */
export interface MutexKeys {
  lock?: string;
  semaphore?: string;
}

/** What is held: give it back with {@link MutexHold.release} (it stops the extension first). */
export interface MutexHold {
  readonly fence?: number;
  /** The lock's key, when a lock is held. */
  readonly lockKey?: string;
  /** Stop extending, keeping what is held (it expires unless taken again). */
  stop(): void;
  release(): Promise<void>;
  /**
   * Check that the lock (under its fence) and the semaphore slot are still held, re-arming their
   * TTLs in the same go (both sent together). Resolves to what was lost, if anything.
   */
  confirm(): Promise<LostMutex | undefined>;
  /**
   * Keep what is held past this execution for `ms` more than its TTL (a run waiting for a step's
   * retry): the extension stops, the TTLs are pushed, the takes stay (the next execution folds them).
   */
  keepFor(ms: number, which: { lock: boolean; semaphore: boolean }): Promise<void>;
}

/** A lock or semaphore slot an execution held and no longer holds (its TTL ran out meanwhile). */
export interface LostMutex {
  kind: 'lock' | 'semaphore';
  key: string;
}

/** What a hold is in its execution: a step's own (`step`) or a reactor's (`reactor`: its name). */
type HoldTag = { step: string; reactor?: undefined } | { reactor: string; step?: undefined };

/**
 * The locks and semaphore slots one execution of a run holds now (its reactor's, its composed
 * children's, its steps' own), as their holds register themselves while held. A step's result is
 * confirmed against them ({@link confirm}) before it is recorded, and `ctx.fence(key)` reads them.
 * Empty (nothing to confirm, no cost) for a run that holds nothing.
 */
export class HeldMutexes {
  private readonly entries = new Set<{ hold: MutexHold; tag: HoldTag }>();

  /** Register `hold`; returns the function that unregisters it. */
  add(hold: MutexHold, tag: HoldTag): () => void {
    const entry = { hold, tag };
    this.entries.add(entry);
    return () => void this.entries.delete(entry);
  }

  /** Whether nothing is held (the check before a step's result is recorded is skipped then). */
  get empty(): boolean {
    return this.entries.size === 0;
  }

  /** How many holds of this execution hold lock `key` now (each is one take of it). */
  takesOf(key: string): number {
    let n = 0;
    for (const { hold } of this.entries) if (hold.lockKey === key) n++;
    return n;
  }

  /**
   * Confirm every hold of the run (its reactors') and step `step`'s own, together (see
   * {@link MutexHold.confirm}); resolves to the first lost, if any.
   */
  async confirm(step: string): Promise<LostMutex | undefined> {
    const checks: Array<Promise<LostMutex | undefined>> = [];
    for (const { hold, tag } of this.entries)
      if (tag.step === undefined || tag.step === step) checks.push(hold.confirm());
    return (await Promise.all(checks)).find((lost) => lost !== undefined);
  }

  /**
   * The fencing token of lock `key` held for step `step` of reactor `reactor` (see
   * `StepContext.fence`): without a key, the step's own lock, else its reactor's.
   */
  fence(step: string, reactor: string, key?: string): number | undefined {
    const locks = [...this.entries].filter(({ hold }) => hold.fence !== undefined);
    const found =
      key !== undefined
        ? (locks.find((e) => e.hold.lockKey === key && e.tag.step === step) ??
          locks.find((e) => e.hold.lockKey === key && e.tag.step === undefined))
        : (locks.find((e) => e.tag.step === step) ?? locks.find((e) => e.tag.reactor === reactor));
    return found?.hold.fence;
  }

  /**
   * `ctx.fence(key)` of step `step` of reactor `reactor`: see {@link fence}.
   * @throws TypeError when no such lock is held, naming the ones that are.
   */
  fenceFor(step: string, reactor: string, key?: string): number {
    const fence = this.fence(step, reactor, key);
    if (fence !== undefined) return fence;
    const held = [...this.entries]
      .filter(({ hold, tag }) => hold.lockKey !== undefined && (tag.step === undefined || tag.step === step))
      .map(({ hold }) => `'${hold.lockKey}'`);
    throw new TypeError(
      `Reactor '${reactor}' step '${step}': ctx.fence(${key === undefined ? '' : JSON.stringify(key)}): ` +
        (key === undefined ? 'neither the step nor its reactor holds a lock' : `the run holds no lock '${key}' here`) +
        (held.length > 0 ? ` (it holds ${held.join(', ')})` : '') +
        '.',
    );
  }
}

/** How to take them. */
export interface TakeOptions {
  clock: Clock;
  /** Who they are taken for, in the contention error (`Reactor 'x'`, and a `step 'y': ` prefix). */
  reactorName: string;
  detailPrefix?: string;
  /** How long to wait for the lock and for the semaphore, each (0: one try). @default 0 */
  waitMs?: { lock?: number; semaphore?: number };
  /**
   * The owner's earlier takes of the lock are folded into this one (a reactor lock kept across a
   * park or a retry, or left by a crashed execution): only the takes of the holds registered in
   * `held.in` (this execution's, say a parent's on the same key) are kept beside it.
   */
  oneTake?: boolean;
  /** Register the hold in this execution's holds while it is held. */
  held?: { in: HeldMutexes; tag: HoldTag };
  /** Also called every extension period while held (an ordered lock's heartbeat). */
  alsoEvery?: { periodMs: number; run(): void };
}

/**
 * Take the lock, then the semaphore, for `owner`, and keep them extended until released.
 * @throws CoordinationContendedError when either stays taken (nothing is held then).
 */
export async function takeMutexes(
  store: CoordinationStore,
  spec: MutexSpec,
  keys: MutexKeys,
  owner: string,
  options: TakeOptions,
): Promise<MutexHold> {
  // Counted among the execution's takes of the key while it is taken (a concurrent take of the
  // same key in this execution then folds nothing of this one).
  const pending =
    options.held && spec.lock ? options.held.in.add(placeholder(keys.lock!), options.held.tag) : undefined;
  let fence: number | undefined;
  try {
    fence = await takeBoth(store, spec, keys, owner, options);
  } finally {
    pending?.();
  }
  const taken = hold(store, spec, keys, owner, fence, options.alsoEvery);
  if (!options.held || (!spec.lock && !spec.semaphore)) return taken;
  const unregister = options.held.in.add(taken, options.held.tag);
  return Object.assign({}, taken, {
    stop: () => {
      unregister();
      taken.stop();
    },
    release: () => {
      unregister();
      return taken.release();
    },
    keepFor: (ms: Parameters<MutexHold['keepFor']>[0], which: Parameters<MutexHold['keepFor']>[1]) => {
      unregister();
      return taken.keepFor(ms, which);
    },
  });
}

/** A take of lock `key` under way (see {@link takeMutexes}): it holds nothing yet. */
function placeholder(key: string): MutexHold {
  return {
    lockKey: key,
    stop: () => undefined,
    release: async () => undefined,
    confirm: async () => undefined,
    keepFor: async () => undefined,
  };
}

/** Take the lock, then the semaphore (see {@link takeMutexes}); resolves to the lock's fence. */
async function takeBoth(
  store: CoordinationStore,
  spec: MutexSpec,
  keys: MutexKeys,
  owner: string,
  options: TakeOptions,
): Promise<number | undefined> {
  const { clock, reactorName, detailPrefix = '', waitMs = {} } = options;
  let fence: number | undefined;
  if (spec.lock) {
    const ttlMs = spec.lock.ttlMs;
    const reply = await waiting(clock, waitMs.lock ?? 0, () => store.acquireLock(keys.lock!, owner, ttlMs));
    if (!reply.acquired) {
      throw new CoordinationContendedError(
        'LOCK_CONTENDED',
        reactorName,
        keys.lock!,
        reply.retryAfterMs,
        `${detailPrefix}the lock is held by run '${reply.holder}'`,
      );
    }
    fence = reply.fence;
    if (options.oneTake) {
      const kept = options.held?.in.takesOf(keys.lock!) ?? 1;
      for (let extra = reply.count; extra > kept; extra--) await store.releaseLock(keys.lock!, owner, fence);
    }
  }
  if (spec.semaphore) {
    const { limit, leaseMs } = spec.semaphore;
    const reply = await waiting(clock, waitMs.semaphore ?? 0, () =>
      store.acquireSemaphore(keys.semaphore!, owner, limit, leaseMs),
    );
    if (!reply.acquired) {
      if (fence !== undefined) await store.releaseLock(keys.lock!, owner, fence).catch(() => undefined);
      throw new CoordinationContendedError(
        'SEMAPHORE_FULL',
        reactorName,
        keys.semaphore!,
        reply.retryAfterMs,
        `${detailPrefix}all ${limit} slots of the semaphore are taken`,
      );
    }
  }
  return fence;
}

function hold(
  store: CoordinationStore,
  spec: MutexSpec,
  keys: MutexKeys,
  owner: string,
  fence: number | undefined,
  alsoEvery: TakeOptions['alsoEvery'],
): MutexHold {
  const periods = [spec.lock?.ttlMs ?? Infinity, spec.semaphore?.leaseMs ?? Infinity, alsoEvery?.periodMs ?? Infinity];
  const every = Math.max(50, Math.floor(Math.min(...periods) / 3));
  const timer =
    spec.lock || spec.semaphore || alsoEvery
      ? setInterval(() => {
          alsoEvery?.run();
          if (spec.lock && fence !== undefined) {
            void store.extendLock(keys.lock!, owner, fence, spec.lock.ttlMs).catch(() => undefined);
          }
          if (spec.semaphore) {
            void store.extendSemaphore(keys.semaphore!, owner, spec.semaphore.leaseMs).catch(() => undefined);
          }
        }, every)
      : undefined;
  timer?.unref?.();
  const stop = (): void => {
    if (timer) clearInterval(timer);
  };
  const lock = spec.lock && fence !== undefined ? { key: keys.lock!, ttlMs: spec.lock.ttlMs, fence } : undefined;
  const semaphore = spec.semaphore ? { key: keys.semaphore!, leaseMs: spec.semaphore.leaseMs } : undefined;
  return {
    fence,
    lockKey: lock?.key,
    stop,
    release: async () => {
      stop();
      if (semaphore) await store.releaseSemaphore(semaphore.key, owner);
      if (lock) await store.releaseLock(lock.key, owner, lock.fence);
    },
    confirm: async () => {
      // Sent together (one round trip on Redis): a lost one is not revived by the other.
      const [lockHeld, slotHeld] = await Promise.all([
        lock ? store.extendLock(lock.key, owner, lock.fence, lock.ttlMs) : true,
        semaphore ? store.extendSemaphore(semaphore.key, owner, semaphore.leaseMs) : true,
      ]);
      if (!lockHeld) return { kind: 'lock', key: lock!.key };
      if (!slotHeld) return { kind: 'semaphore', key: semaphore!.key };
      return undefined;
    },
    keepFor: async (ms, which) => {
      stop();
      const delay = Math.max(0, Math.ceil(ms));
      await Promise.all([
        lock && which.lock ? store.extendLock(lock.key, owner, lock.fence, lock.ttlMs + delay) : undefined,
        semaphore && which.semaphore
          ? store.extendSemaphore(semaphore.key, owner, semaphore.leaseMs + delay)
          : undefined,
      ]);
      // What is not kept is given back now.
      if (semaphore && !which.semaphore) await store.releaseSemaphore(semaphore.key, owner);
      if (lock && !which.lock) await store.releaseLock(lock.key, owner, lock.fence);
    },
  };
}

/**
 * `take` until it is acquired or `waitMs` has passed, sleeping until the holder's expiry at most,
 * and 100 ms at most, between tries.
 */
async function waiting<R extends { acquired: boolean; retryAfterMs?: number }>(
  clock: Clock,
  waitMs: number,
  take: () => Promise<R>,
): Promise<R> {
  const deadline = clock.now() + waitMs;
  for (;;) {
    const reply = await take();
    const left = deadline - clock.now();
    if (reply.acquired || left <= 0) return reply;
    await clock.sleep(Math.max(1, Math.min(100, left, reply.retryAfterMs ?? 100)));
  }
}

/**
 * A coordination key from its function: a non-empty string, or `problem(message)` thrown (the
 * caller says what it is: a configuration error of the reactor, a step failure, ...).
 */
export function coordinationKey<A>(
  what: string,
  fn: ((args: A) => string) | undefined,
  args: A,
  problem: (message: string) => Error,
): string | undefined {
  if (!fn) return undefined;
  let value: unknown;
  try {
    value = fn(args);
  } catch (error) {
    throw problem(`its ${what} key function threw: ${(error as Error)?.message ?? String(error)}`);
  }
  if (typeof value !== 'string' || value.length === 0) {
    throw problem(`its ${what} key function must return a non-empty string (got ${typeof value}).`);
  }
  return value;
}
