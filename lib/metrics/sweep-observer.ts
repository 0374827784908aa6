import type { ReactorSweeper, SweepResult } from '../sweepers/reactor.sweeper';

type SweepListener = (result: SweepResult) => void;

/** The listeners of each sweeper whose `sweepOnce` is observed, and the method it had. */
const observed = new WeakMap<
  ReactorSweeper,
  { listeners: Set<SweepListener>; original: ReactorSweeper['sweepOnce'] }
>();

/**
 * Call `listener` with the result of every sweep `sweeper` finishes from now on (scheduled, or
 * `ReactorClient.sweepOnce()`: both call its `sweepOnce`), until the returned function is called.
 * A sweep that throws is not one (as for `lastSweep`).
 *
 * NOTE: the sweeper keeps only its last result (`lastSweep`), which a scrape could read too late
 * (two sweeps between scrapes); wrapping its `sweepOnce` on the instance counts each sweep exactly
 * without a change to the sweeper. One wrapper per sweeper, however many listen; it is taken off
 * when the last listener goes.
 * @internal
 */
export function observeSweeps(sweeper: ReactorSweeper, listener: SweepListener): () => void {
  let entry = observed.get(sweeper);
  if (!entry) {
    const original = sweeper.sweepOnce;
    const listeners = new Set<SweepListener>();
    entry = { listeners, original };
    observed.set(sweeper, entry);
    sweeper.sweepOnce = async function sweepOnce(this: ReactorSweeper): Promise<SweepResult> {
      const result = await original.call(this);
      for (const each of listeners) each(result);
      return result;
    };
  }
  entry.listeners.add(listener);
  const { listeners } = entry;
  return () => {
    listeners.delete(listener);
    if (listeners.size > 0 || observed.get(sweeper) !== entry) return;
    observed.delete(sweeper);
    // Back to the class's method (the wrapper is an own property of the instance).
    delete (sweeper as Partial<Pick<ReactorSweeper, 'sweepOnce'>>).sweepOnce;
    if (sweeper.sweepOnce !== entry!.original) sweeper.sweepOnce = entry!.original;
  };
}
