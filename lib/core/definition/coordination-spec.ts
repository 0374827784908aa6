import type { RateWindow } from '../ports/coordination-store.port';

/** A key function: the coordination key of a run, from its validated inputs. */
export type CoordinationKey = (inputs: Record<string, unknown>) => string;

/** An exclusive lock over the run (re-entrant within it and its composed children). */
export interface LockOptions {
  key: CoordinationKey;
  /** The lock's TTL, extended every third of it while the run executes. @default 60000 */
  ttlMs?: number;
  /** How long `run` (a caller) waits for the lock before it throws `LOCK_CONTENDED`; workers never wait (they snooze). @default 0 */
  waitMs?: number;
  /**
   * Give the lock back while the run waits for a step's retry (or for a step's own lock) in a
   * worker, and take it again when it resumes: another run of the key may go in meanwhile. By
   * default the run holds its lock until it ends, retries included. @default false
   */
  releaseDuringRetry?: boolean;
}

/** At most `limit` runs at once per key. */
export interface SemaphoreOptions {
  key: CoordinationKey;
  limit: number;
  /** Each holder's lease, extended while it executes: a crashed holder's slot returns within it. @default 60000 */
  leaseMs?: number;
  /** How long `run` (a caller) waits for a slot before it throws `SEMAPHORE_FULL`. @default 0 */
  waitMs?: number;
  /** Give the slot back while the run waits for a step's retry (see the lock's). @default false */
  releaseDuringRetry?: boolean;
}

/** Fixed windows: `{ second: 10, minute: 300 }` or explicit windows. */
export type RateLimits = Partial<Record<'second' | 'minute' | 'hour' | 'day', number>> | ReadonlyArray<RateWindow>;

/** A rate limit: named (registered in `ReactorModule.forRoot({ rateLimits })`, one bucket shared by its users), or inline. */
export type RateLimitOptions = string | { key: CoordinationKey; limits: RateLimits };

/** Once per UTC bucket per key: a second run in the bucket halts (`reason: 'period'`). */
export interface PeriodOptions {
  key: CoordinationKey;
  every: 'minute' | 'hour' | 'day' | 'week' | 'month';
}

/**
 * Runs on a key apply strictly in the order they were started (a nonce taken at start). A holder
 * that stops heartbeating for `poisonPillMs` is skipped; `strict` (the default) halts the runs
 * after a failed one, lenient lets them pass.
 */
export interface OrderedLockOptions {
  key: CoordinationKey;
  /** @default 600000 (10 min) */
  poisonPillMs?: number;
  /** @default true */
  strict?: boolean;
  /** How long the key's order is kept. @default 86400000 (24 h) */
  ttlMs?: number;
}

/** A step's own lock and semaphore, keyed on its resolved arguments. */
export interface StepCoordinationOptions {
  lock?: {
    key: (args: Record<string, unknown>) => string;
    ttlMs?: number;
    /**
     * How long the step's `undo` or `compensate` waits to take the lock again before it is reported
     * as a rollback failure (`coordinationUnavailable`). A rollback never snoozes: it waits in line.
     * @default ttlMs
     */
    rollbackWaitMs?: number;
  };
  semaphore?: {
    key: (args: Record<string, unknown>) => string;
    limit: number;
    leaseMs?: number;
    /** How long the step's `undo` or `compensate` waits for a slot (see the lock's). @default leaseMs */
    rollbackWaitMs?: number;
  };
}

/** A step's coordination, as the definition holds it. */
export interface StepCoordinationSpec {
  readonly lock?: {
    readonly key: (args: Record<string, unknown>) => string;
    readonly ttlMs: number;
    readonly rollbackWaitMs: number;
  };
  readonly semaphore?: {
    readonly key: (args: Record<string, unknown>) => string;
    readonly limit: number;
    readonly leaseMs: number;
    readonly rollbackWaitMs: number;
  };
}

/** Normalize a step's coordination options; a string is the problem (the caller names the step). */
export function toStepCoordinationSpec(options: StepCoordinationOptions): StepCoordinationSpec | string | undefined {
  if (!options.lock && !options.semaphore) return undefined;
  for (const [what, wait] of [
    ['lock', options.lock?.rollbackWaitMs],
    ['semaphore', options.semaphore?.rollbackWaitMs],
  ] as const) {
    if (wait !== undefined && !(Number.isInteger(wait) && wait >= 0)) {
      return `${what}.rollbackWaitMs must be an integer >= 0 (got ${String(wait)})`;
    }
  }
  const spec = toCoordinationSpec({
    lock: options.lock as LockOptions | undefined,
    semaphore: options.semaphore as SemaphoreOptions | undefined,
  });
  if (typeof spec === 'string') return spec.replace('of the inputs', 'of the arguments');
  if (!spec) return undefined;
  // The rollback's wait defaults to the TTL (the reference's `rollback_wait`): by then a crashed
  // holder's lock has expired.
  return Object.freeze({
    ...(spec.lock ? { lock: { ...spec.lock, rollbackWaitMs: options.lock?.rollbackWaitMs ?? spec.lock.ttlMs } } : {}),
    ...(spec.semaphore
      ? {
          semaphore: {
            ...spec.semaphore,
            rollbackWaitMs: options.semaphore?.rollbackWaitMs ?? spec.semaphore.leaseMs,
          },
        }
      : {}),
  });
}

/** The coordination of a reactor, as the definition holds it. */
export interface CoordinationSpec {
  readonly orderedLock?: Required<OrderedLockOptions>;
  readonly lock?: Required<LockOptions>;
  readonly semaphore?: Required<SemaphoreOptions>;
  readonly rateLimit?: {
    readonly name?: string;
    readonly key?: CoordinationKey;
    readonly windows?: readonly RateWindow[];
  };
  readonly period?: PeriodOptions;
}

const UNIT_MS = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** Normalize the coordination options of a reactor; a string is the problem (the caller names the reactor). */
export function toCoordinationSpec(options: {
  lock?: LockOptions;
  semaphore?: SemaphoreOptions;
  rateLimit?: RateLimitOptions;
  period?: PeriodOptions;
  orderedLock?: OrderedLockOptions;
}): CoordinationSpec | string | undefined {
  const { lock, semaphore, rateLimit, period, orderedLock } = options;
  if (!lock && !semaphore && rateLimit === undefined && !period && !orderedLock) return undefined;
  if (orderedLock && typeof orderedLock.key !== 'function') {
    return 'orderedLock.key must be a function of the inputs returning a string';
  }
  for (const field of ['poisonPillMs', 'ttlMs'] as const) {
    const value = orderedLock?.[field];
    if (value !== undefined && !(Number.isInteger(value) && value >= 100)) {
      return `orderedLock.${field} must be an integer >= 100 (got ${String(value)})`;
    }
  }
  const keyProblem = (what: string, value: { key?: unknown } | undefined) =>
    value && typeof value.key !== 'function'
      ? `${what}.key must be a function of the inputs returning a string`
      : undefined;
  const problem =
    keyProblem('lock', lock) ??
    keyProblem('semaphore', semaphore) ??
    keyProblem('period', period) ??
    (typeof rateLimit === 'object' ? keyProblem('rateLimit', rateLimit) : undefined);
  if (problem) return problem;
  if (lock?.ttlMs !== undefined && !(Number.isInteger(lock.ttlMs) && lock.ttlMs >= 100)) {
    return `lock.ttlMs must be an integer >= 100 (got ${String(lock.ttlMs)})`;
  }
  if (semaphore && !(Number.isInteger(semaphore.limit) && semaphore.limit >= 1)) {
    return `semaphore.limit must be an integer >= 1 (got ${String(semaphore.limit)})`;
  }
  if (semaphore?.leaseMs !== undefined && !(Number.isInteger(semaphore.leaseMs) && semaphore.leaseMs >= 100)) {
    return `semaphore.leaseMs must be an integer >= 100 (got ${String(semaphore.leaseMs)})`;
  }
  for (const [what, wait] of [
    ['lock', lock?.waitMs],
    ['semaphore', semaphore?.waitMs],
  ] as const) {
    if (wait !== undefined && !(Number.isInteger(wait) && wait >= 0)) {
      return `${what}.waitMs must be an integer >= 0 (got ${String(wait)})`;
    }
  }
  for (const [what, release] of [
    ['lock', lock?.releaseDuringRetry],
    ['semaphore', semaphore?.releaseDuringRetry],
  ] as const) {
    if (release !== undefined && typeof release !== 'boolean') {
      return `${what}.releaseDuringRetry must be a boolean (got ${String(release)})`;
    }
  }
  if (period && !['minute', 'hour', 'day', 'week', 'month'].includes(period.every)) {
    return `period.every must be 'minute', 'hour', 'day', 'week' or 'month' (got ${JSON.stringify(period.every)})`;
  }
  let rate: CoordinationSpec['rateLimit'];
  if (typeof rateLimit === 'string') {
    if (rateLimit.length === 0) return 'rateLimit must be a registered name or { key, limits }';
    rate = { name: rateLimit };
  } else if (rateLimit !== undefined) {
    const windows = toRateWindows(rateLimit.limits);
    if (typeof windows === 'string') return `rateLimit.limits: ${windows}`;
    rate = { key: rateLimit.key, windows };
  }
  return Object.freeze({
    ...(lock
      ? {
          lock: {
            key: lock.key,
            ttlMs: lock.ttlMs ?? 60_000,
            waitMs: lock.waitMs ?? 0,
            releaseDuringRetry: lock.releaseDuringRetry ?? false,
          },
        }
      : {}),
    ...(semaphore
      ? {
          semaphore: {
            key: semaphore.key,
            limit: semaphore.limit,
            leaseMs: semaphore.leaseMs ?? 60_000,
            waitMs: semaphore.waitMs ?? 0,
            releaseDuringRetry: semaphore.releaseDuringRetry ?? false,
          },
        }
      : {}),
    ...(rate ? { rateLimit: rate } : {}),
    ...(period ? { period } : {}),
    ...(orderedLock
      ? {
          orderedLock: {
            key: orderedLock.key,
            poisonPillMs: orderedLock.poisonPillMs ?? 600_000,
            strict: orderedLock.strict ?? true,
            ttlMs: orderedLock.ttlMs ?? 86_400_000,
          },
        }
      : {}),
  });
}

/** Rate windows from `{ second: 10 }` or an explicit list; a string is the problem. */
export function toRateWindows(limits: RateLimits | undefined): RateWindow[] | string {
  if (limits === undefined || limits === null || typeof limits !== 'object') {
    return 'give { second?, minute?, hour?, day? } or [{ windowMs, limit }]';
  }
  const windows: RateWindow[] = Array.isArray(limits)
    ? limits.map((w) => ({ windowMs: w.windowMs, limit: w.limit }))
    : Object.entries(limits).map(([unit, limit]) => ({
        windowMs: UNIT_MS[unit as keyof typeof UNIT_MS] ?? NaN,
        limit: limit as number,
      }));
  if (windows.length === 0) return 'at least one window';
  for (const w of windows) {
    if (!(Number.isInteger(w.windowMs) && w.windowMs >= 1))
      return 'each window needs windowMs, an integer >= 1 (units: second, minute, hour, day)';
    if (!(Number.isInteger(w.limit) && w.limit >= 1))
      return `each window needs a limit, an integer >= 1 (got ${String(w.limit)})`;
  }
  return windows;
}
