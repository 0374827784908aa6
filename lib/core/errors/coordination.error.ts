import { ReactorError } from './reactor.error';

/**
 * A run could not take what its reactor declares: the lock is held by another run, every slot of
 * the semaphore is taken, or the rate limit's window is full. Thrown to a caller (`run`); a worker
 * snoozes the job instead (without spending the run's retries). {@link retryAfterMs} says when to
 * try again: exact for a rate limit, the holder's remaining TTL (at most) for a lock or semaphore.
 */
export class CoordinationContendedError extends ReactorError {
  constructor(
    code: 'LOCK_CONTENDED' | 'SEMAPHORE_FULL' | 'RATE_LIMITED' | 'ORDER_WAIT',
    readonly reactorName: string,
    /** The coordination key (the lock's, semaphore's or rate limit's). */
    readonly key: string,
    readonly retryAfterMs: number,
    detail: string,
  ) {
    super(code, `Reactor '${reactorName}': ${detail} (key '${key}'); try again in ${retryAfterMs} ms.`, {
      retryable: true,
    });
  }

  override toJSON() {
    return { ...super.toJSON(), key: this.key, retryAfterMs: this.retryAfterMs };
  }
}

/**
 * An async unit (`asyncStep`, `asyncReactor`) would take a lock, or the one slot of a semaphore,
 * that the run dispatching it holds until it finishes: the unit could never start while the run
 * waits for it (or holds on). Refused at dispatch, before the unit is stored or queued (as the
 * reference refuses it): the dispatching step fails, not compensated, and the run rolls back.
 */
export class AsyncDeadlockError extends ReactorError {
  constructor(
    /** The lock's or semaphore's key. */
    readonly key: string,
    readonly primitive: 'lock' | 'semaphore',
    /** The dispatching run (the top-level one), its reactor, and the reactor whose coordination holds the key. */
    readonly parent: { runId: string; reactorName: string; heldBy: string },
    /** The async unit's step and the reactor it runs. */
    readonly unit: { step: string; reactorName: string },
  ) {
    const what = primitive === 'lock' ? `the lock '${key}'` : `the only slot of semaphore '${key}'`;
    super(
      'DEADLOCK',
      `Reactor '${parent.reactorName}' (run '${parent.runId}'): async unit '${unit.step}' would deadlock: it takes ` +
        `${what} (reactor '${unit.reactorName}'), which the run holds (the ${primitive} of reactor '${parent.heldBy}') ` +
        `until it finishes, so the unit could not start before then. A lock is never shared across the async ` +
        `boundary: use compose or a plain step if the work belongs under the lock, narrow the keys if they protect ` +
        `different things, or dispatch it from a run that does not hold the key.`,
      { retryable: false },
    );
  }

  override toJSON() {
    return { ...super.toJSON(), key: this.key, primitive: this.primitive, parent: this.parent, unit: this.unit };
  }
}

/**
 * A step finished while its run no longer held a lock or semaphore slot it had taken (the
 * reactor's, a composed child's, or the step's own): its TTL ran out during the step, typically
 * because the process stalled (a blocked event loop, a long GC pause) for longer than the TTL, and
 * another run may have gone in meanwhile. The step's result is not recorded: the step fails (not
 * retried; compensated, since its body ran) and the run rolls back. Size `ttlMs` above the longest
 * stall, and fence downstream writes with `ctx.fence(key)`.
 */
export class CoordinationLostError extends ReactorError {
  constructor(
    code: 'LOCK_LOST' | 'SEMAPHORE_LOST',
    readonly reactorName: string,
    readonly stepName: string,
    /** The lock's or semaphore's key. */
    readonly key: string,
  ) {
    const what = code === 'LOCK_LOST' ? `the lock '${key}'` : `its slot of semaphore '${key}'`;
    super(
      code,
      `Reactor '${reactorName}' step '${stepName}': the run lost ${what} while the step ran (its TTL ran out, ` +
        `say during a stall of the process), so another run may have held it meanwhile; the step's result is not recorded.`,
      { retryable: false },
    );
  }

  override toJSON() {
    return { ...super.toJSON(), key: this.key, stepName: this.stepName };
  }
}
