/** Name of the sweeper's cron job in `@nestjs/schedule`'s `SchedulerRegistry`. */
export const REACTOR_SWEEPER_CRON = 'nest-reactor-sweeper';

/** Whole seconds (or minutes) that divide a minute (or an hour) evenly, below it. */
const DIVISORS_OF_60 = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30] as const;

/** Every sweeper interval that maps to a clock-aligned cron schedule, in milliseconds. */
export const VALID_SWEEP_INTERVALS_MS: readonly number[] = Object.freeze([
  ...DIVISORS_OF_60.map((s) => s * 1000),
  ...DIVISORS_OF_60.map((m) => m * 60_000),
  3_600_000,
]);

/** The valid intervals as people read them: `1s, 2s, ..., 30s, 1min, ..., 60min`. */
export function describeValidSweepIntervals(): string {
  return VALID_SWEEP_INTERVALS_MS.map((ms) => (ms < 60_000 ? `${ms / 1000}s` : `${ms / 60_000}min`)).join(', ');
}

/**
 * The cron expression (with a seconds field, evaluated in UTC) that fires every `intervalMs`,
 * aligned to the clock: every N seconds when N divides a minute, every N minutes when N divides
 * an hour, hourly for 60 minutes. Returns `undefined` for any other interval.
 *
 * NOTE: alignment matters: every replica's cron fires at the same instants, so the sweep guard
 * (keyed by the nearest multiple of the interval) collapses one tick's sweeps into one.
 */
export function sweepCronExpression(intervalMs: number): string | undefined {
  if (!VALID_SWEEP_INTERVALS_MS.includes(intervalMs)) return undefined;
  if (intervalMs < 60_000) return `*/${intervalMs / 1000} * * * * *`;
  if (intervalMs < 3_600_000) return `0 */${intervalMs / 60_000} * * * *`;
  return '0 0 * * * *';
}

/**
 * The sweep window a tick at `now` belongs to: the nearest multiple of `intervalMs`. Ticks fire at
 * those multiples, so rounding (not flooring) keeps a tick that fires a few milliseconds early or
 * late, or on a replica whose clock is slightly off, in the same window as its peers.
 */
export function sweepWindow(now: number, intervalMs: number): number {
  return Math.round(now / intervalMs);
}
