/**
 * Validate a lease TTL and round it up to whole milliseconds (Redis `PX` takes a positive integer;
 * the memory adapter applies the same rule so both behave alike).
 * @throws RangeError for a TTL that is not a positive finite number.
 */
export function normalizeTtlMs(ttlMs: number, what = 'ttlMs'): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new RangeError(`${what} must be a positive number of milliseconds, got ${String(ttlMs)}.`);
  }
  return Math.ceil(ttlMs);
}
