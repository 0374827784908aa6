/**
 * A step's own lock and semaphore (`@Step(name, { lock, semaphore })` or per use), keyed on its
 * resolved arguments and held by the run (its owner: re-entrant with the reactor's own lock on the
 * same key). Taken around the step's body, and taken again around its undo or compensate, waiting
 * for each up to its TTL there (a rollback never parks); a step whose coordination is contended
 * never started. Before a step's result is recorded, every lock and slot the run holds for it is
 * confirmed still held ({@link confirmHolds}); `ctx.fence(key)` reads their fencing tokens.
 */
import type { StepDefinition } from '../definition/definition';
import { CoordinationContendedError, CoordinationLostError } from '../errors/coordination.error';
import type { RollbackFailure } from '../model/failure';
import { coordinationKey, takeMutexes, type MutexHold } from './mutexes';
import type { RunScope } from './run-scope';

/** What a step holds, to give back. */
export type StepHold = Pick<MutexHold, 'release'>;

const NOTHING: StepHold = { release: async () => undefined };

/**
 * Take the step's lock and semaphore for its body (waiting `waitMs` for each; a body never waits).
 * @throws CoordinationContendedError when either is taken (nothing is held then).
 * @throws TypeError when a key function throws or returns no string.
 */
export async function takeStepCoordination(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  waitMs?: { lock?: number; semaphore?: number },
): Promise<StepHold> {
  const spec = step.coordination;
  const store = scope.env.coordination;
  if (!spec || !store) return NOTHING;
  const problem = (message: string) => new TypeError(`Reactor '${scope.def.name}' step '${step.name}': ${message}`);
  const keys = {
    lock: coordinationKey('lock', spec.lock?.key, args, problem),
    semaphore: coordinationKey('semaphore', spec.semaphore?.key, args, problem),
  };
  const hold = await takeMutexes(store, spec, keys, scope.owner.runId, {
    clock: scope.env.clock,
    reactorName: scope.def.name,
    detailPrefix: `step '${step.name}': `,
    waitMs,
    held: scope.env.held && { in: scope.env.held, tag: { step: step.name } },
  });
  return { release: () => hold.release().catch(() => undefined) };
}

/**
 * Take the step's lock and semaphore again for its undo or compensate, waiting for each up to its
 * `rollbackWaitMs` (default: its TTL). Returns the hold, or the rollback failure to report (`coordinationUnavailable`) when they stay taken.
 */
export async function retakeForRollback(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  kind: RollbackFailure['kind'],
): Promise<StepHold | RollbackFailure> {
  const spec = step.coordination;
  try {
    return await takeStepCoordination(scope, step, args, {
      lock: spec?.lock?.rollbackWaitMs,
      semaphore: spec?.semaphore?.rollbackWaitMs,
    });
  } catch (error) {
    if (!(error instanceof CoordinationContendedError)) throw error;
    return {
      step: step.name,
      kind,
      reason: 'coordinationUnavailable',
      message: error.message,
      reactorName: scope.def.name,
    };
  }
}

/**
 * Before a step's result is recorded: when the run holds locks or semaphore slots (none: no check,
 * no cost), confirm them all (and re-arm their TTLs) in one go. Resolves to the error to fail the
 * step with when one was lost (`LOCK_LOST`, `SEMAPHORE_LOST`), naming the reactor, step and key.
 */
export function confirmHolds(
  scope: RunScope,
  step: StepDefinition,
): Promise<CoordinationLostError | undefined> | undefined {
  const held = scope.env.held;
  if (!held || held.empty) return undefined;
  return held
    .confirm(step.name)
    .then((lost) =>
      lost
        ? new CoordinationLostError(
            lost.kind === 'lock' ? 'LOCK_LOST' : 'SEMAPHORE_LOST',
            scope.def.name,
            step.name,
            lost.key,
          )
        : undefined,
    );
}
