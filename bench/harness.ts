/** Small benchmark helpers: warm up, then take the median of several timed rounds. */

export interface Measured {
  /** Median wall time of one round, in ms. */
  medianMs: number;
  /** Every round's time, in ms. */
  roundsMs: number[];
}

/** Run `fn` `warmup` times, then time `rounds` rounds and return the median. */
export async function measure(fn: () => Promise<void>, rounds = 7, warmup = 2): Promise<Measured> {
  for (let i = 0; i < warmup; i++) await fn();
  const roundsMs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    await fn();
    roundsMs.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const sorted = [...roundsMs].sort((a, b) => a - b);
  return { medianMs: sorted[Math.floor(sorted.length / 2)], roundsMs };
}

/** Format a number with a fixed number of decimals. */
export function fmt(n: number, digits = 2): string {
  return n.toFixed(digits);
}
