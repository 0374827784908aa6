/**
 * A step's own lock and semaphore (`@Step(name, { lock, semaphore })` or per use), keyed on its
 * resolved arguments and held by the run (its owner: re-entrant with the reactor's own lock on the
 * same key). Taken around the step's body, and taken again around its undo or compensate, waiting
 * for them up to their TTL there (a rollback never parks); a step whose coordination is contended
 * never started.
 */
import type { StepDefinition } from '../definition/definition';
import { CoordinationContendedError } from '../errors/coordination.error';
import type { RollbackFailure } from '../model/failure';
import type { CoordinationStore } from '../ports/coordination-store.port';
import type { RunScope } from './run-scope';

/** What a step holds, to give back. */
export interface StepHold {
  release(): Promise<void>;
}

const NOTHING: StepHold = { release: async () => undefined };

/**
 * Take the step's lock and semaphore for its body.
 * @throws CoordinationContendedError when either is taken (nothing is held then).
 */
export async function takeStepCoordination(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
): Promise<StepHold> {
  const spec = step.coordination;
  const store = scope.env.coordination;
  if (!spec || !store) return NOTHING;
  const owner = scope.owner.runId;
  const keys = keysOf(scope, step, args);
  let fence: number | undefined;
  if (spec.lock) {
    const reply = await store.acquireLock(keys.lock!, owner, spec.lock.ttlMs);
    if (!reply.acquired) {
      throw new CoordinationContendedError(
        'LOCK_CONTENDED',
        scope.def.name,
        keys.lock!,
        reply.retryAfterMs,
        `step '${step.name}': the lock is held by run '${reply.holder}'`,
      );
    }
    fence = reply.fence;
  }
  if (spec.semaphore) {
    const reply = await store.acquireSemaphore(keys.semaphore!, owner, spec.semaphore.limit, spec.semaphore.leaseMs);
    if (!reply.acquired) {
      if (fence !== undefined) await store.releaseLock(keys.lock!, owner, fence).catch(() => undefined);
      throw new CoordinationContendedError(
        'SEMAPHORE_FULL',
        scope.def.name,
        keys.semaphore!,
        reply.retryAfterMs,
        `step '${step.name}': all ${spec.semaphore.limit} slots of the semaphore are taken`,
      );
    }
  }
  return holdOf(store, spec, keys, owner, fence);
}

/**
 * Take the step's lock and semaphore again for its undo or compensate, waiting up to their TTL.
 * Returns the hold, or the rollback failure to report (`coordination_unavailable`) when they stay taken.
 */
export async function retakeForRollback(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  kind: RollbackFailure['kind'],
): Promise<StepHold | RollbackFailure> {
  const spec = step.coordination;
  if (!spec || !scope.env.coordination) return NOTHING;
  const waitMs = Math.max(spec.lock?.ttlMs ?? 0, spec.semaphore?.leaseMs ?? 0);
  const deadline = scope.now() + waitMs;
  for (;;) {
    try {
      return await takeStepCoordination(scope, step, args);
    } catch (error) {
      if (!(error instanceof CoordinationContendedError)) throw error;
      const left = deadline - scope.now();
      if (left <= 0) {
        return {
          step: step.name,
          kind,
          reason: 'coordinationUnavailable',
          message: error.message,
          reactorName: scope.def.name,
        };
      }
      await scope.env.clock.sleep(Math.min(100, left, error.retryAfterMs));
    }
  }
}

function holdOf(
  store: CoordinationStore,
  spec: NonNullable<StepDefinition['coordination']>,
  keys: { lock?: string; semaphore?: string },
  owner: string,
  fence: number | undefined,
): StepHold {
  const every = Math.max(
    50,
    Math.floor(Math.min(spec.lock?.ttlMs ?? Infinity, spec.semaphore?.leaseMs ?? Infinity) / 3),
  );
  const timer = setInterval(() => {
    if (spec.lock && fence !== undefined)
      void store.extendLock(keys.lock!, owner, fence, spec.lock.ttlMs).catch(() => undefined);
    if (spec.semaphore)
      void store.extendSemaphore(keys.semaphore!, owner, spec.semaphore.leaseMs).catch(() => undefined);
  }, every);
  timer.unref?.();
  return {
    release: async () => {
      clearInterval(timer);
      if (spec.semaphore) await store.releaseSemaphore(keys.semaphore!, owner).catch(() => undefined);
      if (spec.lock && fence !== undefined) await store.releaseLock(keys.lock!, owner, fence).catch(() => undefined);
    },
  };
}

function keysOf(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
): { lock?: string; semaphore?: string } {
  const key = (what: string, fn: ((args: Record<string, unknown>) => string) | undefined): string | undefined => {
    if (!fn) return undefined;
    const value: unknown = fn(args);
    if (typeof value !== 'string' || value.length === 0) {
      throw new TypeError(
        `Reactor '${scope.def.name}' step '${step.name}': its ${what} key function must return a non-empty string (got ${typeof value}).`,
      );
    }
    return value;
  };
  return {
    lock: key('lock', step.coordination?.lock?.key),
    semaphore: key('semaphore', step.coordination?.semaphore?.key),
  };
}
