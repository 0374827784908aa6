/**
 * What a step body returns. Exactly one of four outcomes:
 *
 * - {@link Success}: the step is done; its value flows to dependants and it will be undone if a
 *   later step fails.
 * - {@link Skipped}: behaves like Success (the value flows on) but is never undone.
 * - {@link Halt}: stop the whole run cleanly; completed work is kept, nothing is rolled back.
 * - {@link Failure}: the step failed; it may be retried, then it is compensated and every completed
 *   step is undone in reverse completion order.
 *
 * Build them with {@link success}, {@link skipped}, {@link halt} and {@link failure}, or end a step
 * from any call depth with {@link succeedStep}, {@link skipStep}, {@link haltStep} or {@link failStep}.
 */
export type StepOutcome<T> = Success<T> | Skipped<T> | Halt | Failure;

/** The step completed with {@link value}. */
export class Success<T> {
  readonly kind = 'success' as const;
  constructor(readonly value: T) {}
}

/** The step chose not to act; {@link value} still flows to dependants. Never undone. */
export class Skipped<T> {
  readonly kind = 'skipped' as const;
  constructor(
    readonly value: T,
    readonly reason?: string,
  ) {}
}

/** Stop the run cleanly: keep completed work, roll nothing back. The run ends `halted`. */
export class Halt {
  readonly kind = 'halt' as const;
  constructor(
    readonly reason: string,
    readonly details?: unknown,
  ) {}
}

/** The step failed with {@link error}. */
export class Failure {
  readonly kind = 'failure' as const;
  /**
   * Whether the retry policy may retry this failure. Defaults to the error's own `retryable`
   * property when it has one, else `true`.
   */
  readonly retryable: boolean;
  constructor(
    readonly error: unknown,
    options: { retryable?: boolean } = {},
  ) {
    this.retryable = options.retryable ?? errorRetryable(error);
  }
}

function errorRetryable(error: unknown): boolean {
  if (error && typeof error === 'object' && 'retryable' in error) {
    const r = (error as { retryable: unknown }).retryable;
    if (typeof r === 'boolean') return r;
  }
  return true;
}

/** A successful outcome carrying `value`. */
export function success(): Success<void>;
export function success<T>(value: T): Success<T>;
export function success<T>(value?: T): Success<T | undefined> {
  return new Success(value);
}

/** A skipped outcome: `value` flows on, the step is never undone. */
export function skipped<T>(value: T, reason?: string): Skipped<T> {
  return new Skipped(value, reason);
}

/** Halt the run cleanly with `reason`; nothing is rolled back. */
export function halt(reason: string, details?: unknown): Halt {
  return new Halt(reason, details);
}

/**
 * A failed outcome. A string becomes an `Error`. Pass `{ retryable: false }` to stop retries for
 * this failure.
 */
export function failure(error: unknown, options: { retryable?: boolean } = {}): Failure {
  return new Failure(typeof error === 'string' ? new Error(error) : error, options);
}

/** Type guard: is `value` one of the four step outcomes? */
export function isStepOutcome(value: unknown): value is StepOutcome<unknown> {
  return value instanceof Success || value instanceof Skipped || value instanceof Halt || value instanceof Failure;
}
