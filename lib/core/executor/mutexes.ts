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
  /** Stop extending, keeping what is held (it expires unless taken again). */
  stop(): void;
  release(): Promise<void>;
}

/** How to take them. */
export interface TakeOptions {
  clock: Clock;
  /** Who they are taken for, in the contention error (`Reactor 'x'`, and a `step 'y': ` prefix). */
  reactorName: string;
  detailPrefix?: string;
  /** How long to wait for the lock and for the semaphore, each (0: one try). @default 0 */
  waitMs?: { lock?: number; semaphore?: number };
  /** The owner's earlier takes of the lock are folded into this one (a reactor lock kept across a park). */
  oneTake?: boolean;
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
    if (options.oneTake)
      for (let extra = reply.count; extra > 1; extra--) await store.releaseLock(keys.lock!, owner, fence);
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
  return hold(store, spec, keys, owner, fence, options.alsoEvery);
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
  return {
    fence,
    stop,
    release: async () => {
      stop();
      if (spec.semaphore) await store.releaseSemaphore(keys.semaphore!, owner);
      if (spec.lock && fence !== undefined) await store.releaseLock(keys.lock!, owner, fence);
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
