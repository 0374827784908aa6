import type { RateWindow } from '../core';

/**
 * How long a lock's fence counter outlives the lock (30 days, refreshed on every take and extend).
 * The counter must outlive every holder that might come back with an old fence: were it to restart
 * at 1, an old fence could match a new holder's. Also the least an ordered lock's epoch is kept,
 * for the same reason (a straggler of a reset batch must never match a new batch).
 */
export const COORDINATION_COUNTER_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Check that `value` is a positive safe integer (a limit, a nonce, an epoch, a fence, a window).
 * The memory and Redis coordination stores validate their arguments alike, before any work.
 * @throws RangeError otherwise.
 */
export function positiveInteger(value: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${what} must be a positive integer, got ${String(value)}.`);
  }
  return value;
}

/**
 * Check the windows of a rate limit: at least one, each a positive integer `windowMs` and `limit`,
 * no two of the same length (they would count in the same counter).
 * @throws RangeError otherwise.
 */
export function checkRateWindows(windows: readonly RateWindow[]): readonly RateWindow[] {
  if (!Array.isArray(windows) || windows.length === 0) {
    throw new RangeError('A rate limit needs at least one window.');
  }
  const lengths = new Set<number>();
  for (const [i, window] of windows.entries()) {
    positiveInteger(window.windowMs, `windows[${i}].windowMs`);
    positiveInteger(window.limit, `windows[${i}].limit`);
    if (lengths.has(window.windowMs)) {
      throw new RangeError(`Two windows of a rate limit have the same length (${window.windowMs} ms).`);
    }
    lengths.add(window.windowMs);
  }
  return windows;
}
