import { failure, halt, skipped, success, type StepOutcome } from './step-outcome';

const SIGNAL = Symbol.for('nest-reactor.step-signal');

/**
 * Thrown by {@link succeedStep}, {@link failStep}, {@link haltStep} and {@link skipStep} to end the
 * current step from any call depth. The executor turns it into the outcome it carries.
 *
 * NOTE: JavaScript `catch` catches everything. A `try/catch` in step code that may wrap one of
 * these calls must rethrow when {@link isStepSignal} is true, or the signal is lost.
 */
export class StepSignal extends Error {
  readonly [SIGNAL] = true;
  constructor(readonly outcome: StepOutcome<unknown>) {
    super(`step signal: ${outcome.kind}`);
    this.name = 'StepSignal';
  }
}

/** True for the signals thrown by the `*Step` helpers; rethrow these from your own catch blocks. */
export function isStepSignal(error: unknown): error is StepSignal {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[SIGNAL] === true;
}

/** End the current step with Success(value), from any call depth. */
export function succeedStep(value?: unknown): never {
  throw new StepSignal(success(value));
}

/** End the current step with a Failure, from any call depth. */
export function failStep(error: unknown, options: { retryable?: boolean } = {}): never {
  throw new StepSignal(failure(error, options));
}

/** Halt the whole run cleanly, from any call depth. */
export function haltStep(reason: string, details?: unknown): never {
  throw new StepSignal(halt(reason, details));
}

/** End the current step with Skipped(value), from any call depth. */
export function skipStep(value?: unknown, reason?: string): never {
  throw new StepSignal(skipped(value, reason));
}
