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

/** A realistic step result: about 300 bytes of JSON (`extra` fields are added, e.g. a checksum). */
export function stepResult(
  runSeed: number,
  step: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    orderId: `order-${runSeed}`,
    step,
    status: 'reserved',
    reservedAt: '2026-12-01T12:00:00.000Z',
    warehouse: 'eu-west-1a',
    lines: [
      { sku: 'BOOK-0001', qty: 2, priceCents: 1_299 },
      { sku: 'LAMP-0042', qty: 1, priceCents: 4_990 },
      { sku: 'CABLE-0007', qty: 3, priceCents: 799 },
    ],
    ...extra,
    note: 'x'.repeat(60),
  };
}
