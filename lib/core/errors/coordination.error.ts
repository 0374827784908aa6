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
