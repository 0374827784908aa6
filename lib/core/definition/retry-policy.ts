/** How a step is retried. `maxAttempts` counts the first attempt (1 = never retry). */
export interface RetryOptions {
  /** Attempts in all, including the first. @default 1 */
  maxAttempts?: number;
  /** Delay growth between attempts. @default 'exponential' */
  backoff?: 'exponential' | 'linear' | 'fixed';
  /** Delay after the first failed attempt, in ms. @default 1000 */
  baseDelayMs?: number;
  /** Upper bound of any one delay, in ms. @default 300000 */
  maxDelayMs?: number;
}

/** A validated retry policy with every field set. */
export type RetryPolicy = Required<RetryOptions>;

export const NO_RETRIES: RetryPolicy = {
  maxAttempts: 1,
  backoff: 'exponential',
  baseDelayMs: 1000,
  maxDelayMs: 300_000,
};

/**
 * Validate and default retry options. Returns an error message naming the offending field, or the
 * policy.
 */
export function toRetryPolicy(options: RetryOptions | undefined): RetryPolicy | string {
  if (!options) return NO_RETRIES;
  const policy: RetryPolicy = { ...NO_RETRIES, ...stripUndefined(options) };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    return `retries.maxAttempts must be an integer >= 1 (got ${String(options.maxAttempts)})`;
  }
  if (!['exponential', 'linear', 'fixed'].includes(policy.backoff)) {
    return `retries.backoff must be 'exponential', 'linear' or 'fixed' (got ${String(options.backoff)})`;
  }
  for (const field of ['baseDelayMs', 'maxDelayMs'] as const) {
    if (typeof policy[field] !== 'number' || !(policy[field] >= 0)) {
      return `retries.${field} must be a number >= 0 (got ${String(options[field])})`;
    }
  }
  return policy;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Delay before the next attempt, given the number of attempts made so far (the one that just
 * failed is counted): exponential `base * 2^(n-1)`, linear `base * n`, fixed `base`; capped by
 * `maxDelayMs`. No jitter, as in ruby_reactor.
 */
export function backoffDelay(policy: RetryPolicy, attemptsMade: number): number {
  const n = Math.max(1, attemptsMade);
  const raw =
    policy.backoff === 'exponential'
      ? policy.baseDelayMs * 2 ** (n - 1)
      : policy.backoff === 'linear'
        ? policy.baseDelayMs * n
        : policy.baseDelayMs;
  return Math.min(raw, policy.maxDelayMs);
}
