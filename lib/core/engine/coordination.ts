/**
 * The coordination a reactor declares (lock, semaphore, rate limit, period), taken around each
 * execution of a top-level run: period check, lock, semaphore, period re-check under the lock, then
 * the rate limit (charged once per run that starts; the reference charges it before the lock, see
 * DD-coord26-1). What is taken is extended while the run executes and given back when the
 * execution ends, except across a park on async units (the run keeps it; the next execution takes
 * it over). A period is marked when the run completes.
 */
import type { ReactorDefinition } from '../definition/definition';
import type { CoordinationSpec } from '../definition/coordination-spec';
import { ConfigurationError } from '../errors/configuration.error';
import { CoordinationContendedError } from '../errors/coordination.error';
import { isTerminal, type RunState } from '../model/run-state';
import { systemClock, type Clock } from '../ports/clock.port';
import type { CoordinationStore, RateWindow } from '../ports/coordination-store.port';
import { coordinationKey, HeldMutexes, takeMutexes, type MutexHold } from '../executor/mutexes';
import type { EngineLogger } from './engine-options';

/** What an execution holds, to extend while it runs and give back when it ends. */
export interface Holding {
  /** Stop extending; give everything back unless the run keeps it (`keep`), and mark the period on success. */
  leave(state: RunState): Promise<void>;
  /** The holds of the execution, this one's among them (its steps' results are confirmed against them). */
  readonly held: HeldMutexes;
}

/**
 * The run may not start, and halts before any step: a completed run already used the period's
 * bucket (`period`), a run before it on its ordered lock failed (strict: `ordered_lock_chain_failed`),
 * its ordered lock was reset since it took its place (`ordered_lock_stale`), or its turn was given
 * away while it did not answer for `poisonPillMs` (`ordered_lock_skipped`: it would apply out of order).
 */
export interface HaltBeforeStart {
  halt: {
    reason: 'period' | 'ordered_lock_chain_failed' | 'ordered_lock_stale' | 'ordered_lock_skipped';
    details: Record<string, unknown>;
  };
}

const PERIOD_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000, month: 31 * 86_400_000 };

/** Takes and gives back the coordination of runs (see the module comment). */
export class Coordination {
  constructor(
    private readonly store: CoordinationStore | undefined,
    private readonly rateLimits: Readonly<Record<string, readonly RateWindow[]>>,
    private readonly logger: EngineLogger,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The names of rate limits a definition uses that are not registered (checked at boot). */
  unknownRateLimit(def: ReactorDefinition): string | undefined {
    const name = def.coordination?.rateLimit?.name;
    return name !== undefined && !this.rateLimits[name] ? name : undefined;
  }

  /** The names of the registered rate limits. */
  rateLimitNames(): string[] {
    return Object.keys(this.rateLimits);
  }

  /** Whether the engine can coordinate at all (it has a coordination store). */
  get available(): boolean {
    return this.store !== undefined;
  }

  /**
   * Take what run `state` of `def` needs before it executes.
   * @throws CoordinationContendedError when a lock, semaphore or rate limit is contended (nothing is held then).
   */
  async enter(
    def: ReactorDefinition,
    state: RunState,
    mode: 'caller' | 'worker' = 'worker',
    /** Who holds what is taken: the top-level run (a composed child's primitives are its parent's). */
    owner: string = state.runId,
    /** The holds of the execution this is taken in (a composed child's): the new hold joins them. */
    held: HeldMutexes = new HeldMutexes(),
  ): Promise<Holding | HaltBeforeStart | undefined> {
    const spec = def.coordination;
    if (!spec) return undefined;
    const store = this.store;
    if (!store) {
      throw new ConfigurationError(
        `Reactor '${def.name}' declares a lock, semaphore, rate limit or period, but the engine has no coordination store.`,
        'coordination',
      );
    }
    const keys = this.keysOf(def, spec, state.inputs);
    const bookkeeping = (state.coordination ??= {});
    // Ordered lock: its turn first, holding nothing else while it waits (no hold-and-wait).
    const order = bookkeeping.order;
    if (spec.orderedLock && order) {
      const turn = await store.orderTurn(order.key, order.nonce, order.epoch, spec.orderedLock.poisonPillMs);
      if (turn.state === 'wait') {
        throw new CoordinationContendedError(
          'ORDER_WAIT',
          def.name,
          order.key,
          turn.retryAfterMs,
          `run ${order.nonce} on the ordered lock waits for run ${turn.lastCompleted + 1}`,
        );
      }
      if (turn.state === 'stale') {
        return { halt: { reason: 'ordered_lock_stale', details: { key: order.key, nonce: order.nonce } } };
      }
      // Its turn was given away (it stopped heartbeating for the poison pill, say its worker died):
      // going on now would apply it after the runs started later. It halts instead.
      if (turn.state === 'drained' || turn.lastCompleted >= order.nonce) {
        return { halt: { reason: 'ordered_lock_skipped', details: { key: order.key, nonce: order.nonce } } };
      }
      const fresh = state.completed.length === 0;
      if (spec.orderedLock.strict && fresh && turn.firstFailed > 0 && order.nonce > turn.firstFailed) {
        await store.orderAdvance(order.key, order.nonce, order.epoch, false, spec.orderedLock.ttlMs);
        return {
          halt: {
            reason: 'ordered_lock_chain_failed',
            details: { key: order.key, nonce: order.nonce, firstFailed: turn.firstFailed },
          },
        };
      }
    }
    // Period: the first execution decides the bucket and refuses a used one.
    if (spec.period && bookkeeping.periodBucket === undefined) {
      const bucket = periodBucket(spec.period.every, await store.now());
      if (await store.isPeriodMarked(keys.period!, bucket)) {
        return this.haltBefore(spec, order, { key: keys.period!, bucket });
      }
      bookkeeping.periodBucket = bucket;
    }
    const windows = spec.rateLimit && !bookkeeping.charged ? this.rateWindows(spec) : undefined;
    const mutexes = await takeMutexes(store, spec, keys, owner, {
      clock: this.clock,
      reactorName: def.name,
      waitMs: mode === 'caller' ? { lock: spec.lock?.waitMs, semaphore: spec.semaphore?.waitMs } : undefined,
      // A lock kept across a park or a retry is taken again: one take is enough (beside the
      // execution's other takes of the key, say a parent's).
      oneTake: true,
      held: { in: held, tag: { reactor: def.name } },
      alsoEvery:
        order && spec.orderedLock
          ? {
              periodMs: spec.orderedLock.poisonPillMs,
              run: () => void store.orderHeartbeat(order.key, order.nonce, order.epoch).catch(() => undefined),
            }
          : undefined,
    });
    // Period re-check under the lock: runs that queued on it see a mark made meanwhile.
    if (spec.period && spec.lock && bookkeeping.periodBucket !== undefined && !(state.completed.length > 0)) {
      if (await store.isPeriodMarked(keys.period!, bookkeeping.periodBucket)) {
        await this.giveBack(mutexes, owner);
        return this.haltBefore(spec, order, { key: keys.period!, bucket: bookkeeping.periodBucket });
      }
    }
    // Rate limit: charged once per run that starts, so last: a run refused on its lock or semaphore
    // (a caller refused, a worker's snooze) or halted by its period is never charged. A limited run
    // gives back what it took at once. `charged` is stored with the run by its first checkpoint.
    if (windows) {
      let reply: Awaited<ReturnType<CoordinationStore['consumeRate']>>;
      try {
        reply = await store.consumeRate(keys.rate!, windows);
      } catch (error) {
        await this.giveBack(mutexes, owner);
        throw error;
      }
      if (!reply.allowed) {
        await this.giveBack(mutexes, owner);
        delete bookkeeping.periodBucket;
        throw new CoordinationContendedError(
          'RATE_LIMITED',
          def.name,
          keys.rate!,
          reply.retryAfterMs,
          `rate limit of ${windows[reply.window].limit} per ${windows[reply.window].windowMs} ms reached`,
        );
      }
      bookkeeping.charged = true;
    }
    return this.holding(spec, keys, mutexes, owner, order, held);
  }

  /** Take run `state`'s place on its reactor's ordered lock (once: at its start). */
  async assignOrder(def: ReactorDefinition, state: RunState): Promise<void> {
    const spec = def.coordination?.orderedLock;
    const bookkeeping = (state.coordination ??= {});
    if (!spec || !this.store || bookkeeping.order) return;
    const key = this.keysOf(def, def.coordination!, state.inputs).order!;
    const { nonce, epoch } = await this.store.assignOrder(key, spec.ttlMs);
    bookkeeping.order = { key, nonce, epoch };
  }

  /**
   * A run its period halts before any step: it will not take its turn on its ordered lock, so it
   * gives its turn up now (its successors go on at once instead of after the poison pill).
   */
  private async haltBefore(
    spec: CoordinationSpec,
    order: { key: string; nonce: number; epoch: number } | undefined,
    details: { key: string; bucket: string },
  ): Promise<HaltBeforeStart> {
    if (order && spec.orderedLock) {
      await this.store!.orderAdvance(order.key, order.nonce, order.epoch, false, spec.orderedLock.ttlMs);
    }
    return { halt: { reason: 'period', details } };
  }

  /** The windows of a reactor's rate limit (its own, or the registered ones of its name). */
  private rateWindows(spec: CoordinationSpec): readonly RateWindow[] {
    const windows = spec.rateLimit!.windows ?? this.rateLimits[spec.rateLimit!.name!];
    if (!windows) throw new ConfigurationError(`Rate limit '${spec.rateLimit!.name}' is not registered.`, 'rateLimits');
    return windows;
  }

  /**
   * Give back the lock and slot run `state` kept across a retry or a park, when it ended where no
   * execution took them over (cancelled while it waited). Never throws (the TTL frees them anyway).
   */
  async releaseKept(def: ReactorDefinition, state: RunState): Promise<void> {
    const spec = def.coordination;
    const store = this.store;
    if (!spec || !store || (!spec.lock && !spec.semaphore)) return;
    try {
      const keys = this.keysOf(def, spec, state.inputs);
      if (spec.semaphore) await store.releaseSemaphore(keys.semaphore!, state.runId);
      if (spec.lock) {
        // Taken once more by its owner (a lock it no longer holds is taken and given back at once).
        const reply = await store.acquireLock(keys.lock!, state.runId, spec.lock.ttlMs);
        if (reply.acquired)
          for (let take = reply.count; take > 0; take--) await store.releaseLock(keys.lock!, state.runId, reply.fence);
      }
    } catch (error) {
      this.logger.warn(`Run '${state.runId}': its lock or semaphore could not be given back: ${String(error)}`);
    }
  }

  /**
   * Give up run `state`'s place on its ordered lock: a run that will never start, or that ended
   * without its execution (`failed`: it failed, as strict mode counts it). Its successors go on.
   */
  async abandonOrder(def: ReactorDefinition, state: RunState, failed = false): Promise<void> {
    const order = state.coordination?.order;
    const spec = def.coordination?.orderedLock;
    if (!order || !spec || !this.store) return;
    await this.store.orderAdvance(order.key, order.nonce, order.epoch, failed, spec.ttlMs).catch(() => undefined);
  }

  private holding(
    spec: CoordinationSpec,
    keys: Keys,
    mutexes: MutexHold,
    owner: string,
    order: { key: string; nonce: number; epoch: number } | undefined,
    held: HeldMutexes,
  ): Holding {
    const store = this.store!;
    return {
      held,
      leave: async (state) => {
        const bookkeeping = (state.coordination ??= {});
        // Parked on async units: the run keeps what it holds (its extension stops); its next
        // execution takes the same lock again (one take) and the same semaphore slot (its own).
        if (state.handoff?.mode === 'async' && state.status === 'running') return mutexes.stop();
        // Waiting for a step's retry (or its step's own lock): the run keeps its lock and slot
        // until it ends, unless `releaseDuringRetry` (DD-lock26-3).
        const retryAt = state.status === 'running' && state.handoff?.mode === 'all' ? state.retryAt : undefined;
        const due = retryAt && Object.keys(retryAt).length > 0 ? Math.max(...Object.values(retryAt)) : undefined;
        const keep = {
          lock: spec.lock?.releaseDuringRetry !== true,
          semaphore: spec.semaphore?.releaseDuringRetry !== true,
        };
        if (due !== undefined && ((spec.lock && keep.lock) || (spec.semaphore && keep.semaphore))) {
          return this.keepAcross(mutexes, owner, due - this.clock.now(), keep);
        }
        try {
          if (state.status === 'completed' && spec.period && bookkeeping.periodBucket !== undefined) {
            await store.markPeriod(keys.period!, bookkeeping.periodBucket, 2 * PERIOD_MS[spec.period.every]);
          }
          // A finished run gives its turn to the next (a failed one is remembered by strict mode).
          if (order && spec.orderedLock && isTerminal(state.status)) {
            await store.orderAdvance(
              order.key,
              order.nonce,
              order.epoch,
              state.status === 'failed',
              spec.orderedLock.ttlMs,
            );
          }
        } finally {
          await this.giveBack(mutexes, owner);
        }
      },
    };
  }

  /**
   * Keep the lock and slot (those `which` says) across a retry's delay: their TTLs are pushed by
   * `delayMs`, so that they outlive the wait without a process extending them (a run whose
   * resume never comes loses them `ttlMs` after it was due). The resume takes them over.
   */
  private async keepAcross(
    mutexes: MutexHold,
    owner: string,
    delayMs: number,
    which: { lock: boolean; semaphore: boolean },
  ): Promise<void> {
    try {
      await mutexes.keepFor(delayMs, which);
    } catch (error) {
      // Not kept: the TTL frees it; the resume takes it again or waits for it.
      this.logger.warn(`Run '${owner}': its lock or semaphore could not be kept across its retry: ${String(error)}`);
    }
  }

  private async giveBack(mutexes: MutexHold, owner: string): Promise<void> {
    try {
      await mutexes.release();
    } catch (error) {
      // Not released: the lease or TTL frees it; nothing is lost but time.
      this.logger.warn(`Run '${owner}': its lock or semaphore could not be released: ${String(error)}`);
    }
  }

  private keysOf(def: ReactorDefinition, spec: CoordinationSpec, inputs: Record<string, unknown>): Keys {
    const key = (what: string, fn: ((inputs: Record<string, unknown>) => string) | undefined) =>
      coordinationKey(what, fn, inputs, (message) => new ConfigurationError(`Reactor '${def.name}': ${message}`, what));
    return {
      lock: key('lock', spec.lock?.key),
      semaphore: key('semaphore', spec.semaphore?.key),
      rate: spec.rateLimit?.name !== undefined ? `named:${spec.rateLimit.name}` : key('rateLimit', spec.rateLimit?.key),
      period: key('period', spec.period?.key),
      order: key('orderedLock', spec.orderedLock?.key),
    };
  }
}

interface Keys {
  order?: string;
  lock?: string;
  semaphore?: string;
  rate?: string;
  period?: string;
}

/** The UTC bucket of `now` for a period: `2026-12-01T16-20`, `2026-12-01T16`, `2026-12-01`, `2026-W49`, `2026-12`. */
export function periodBucket(every: 'minute' | 'hour' | 'day' | 'week' | 'month', now: number): string {
  const iso = new Date(now).toISOString(); // 2026-12-01T16:20:00.000Z
  switch (every) {
    case 'minute':
      return `${iso.slice(0, 13)}-${iso.slice(14, 16)}`;
    case 'hour':
      return iso.slice(0, 13);
    case 'day':
      return iso.slice(0, 10);
    case 'month':
      return iso.slice(0, 7);
    case 'week': {
      // ISO week: the week (Monday first) holding the year's first Thursday is week 1.
      const date = new Date(
        Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate()),
      );
      const day = date.getUTCDay() || 7;
      date.setUTCDate(date.getUTCDate() + 4 - day);
      const yearStart = Date.UTC(date.getUTCFullYear(), 0, 1);
      const week = Math.ceil(((date.getTime() - yearStart) / 86_400_000 + 1) / 7);
      return `${date.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
    }
  }
}
