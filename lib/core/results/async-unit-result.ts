/**
 * An async unit's outcome as the run stores it (the unit step's result), and as everyone reads it:
 * its value, or a `Failure` (error: {@link AsyncUnitFailedError} with the unit's failure) or a
 * `Halt`. The stored record is internal: a reader step, `results` and the run's value in outcomes
 * and views all get the public form (see {@link publicResults}, {@link publicValue}).
 */
import { AsyncUnitFailedError } from '../errors/async-unit-failed.error';
import type { RunFailure } from '../model/failure';
import type { RunState } from '../model/run-state';
import { Failure, Halt } from './step-outcome';

/** How an async unit's outcome is stored as the step's result (decided by the step's kind, so never forged). */
export type AsyncUnitResult =
  | { ok: true; value: unknown }
  | { ok: false; failure: RunFailure }
  | { ok: false; halt: { reason: string; details?: unknown } };

/** Whether `stored` is a stored async unit outcome. */
export function isAsyncUnitResult(stored: unknown): stored is AsyncUnitResult {
  if (!stored || typeof stored !== 'object' || Array.isArray(stored)) return false;
  const record = stored as Record<string, unknown>;
  if (record.ok === true) return 'value' in record || Object.keys(record).length === 1;
  if (record.ok !== false) return false;
  return (!!record.failure && typeof record.failure === 'object') || (!!record.halt && typeof record.halt === 'object');
}

/** A unit's stored outcome as it is read: its value, a `Failure` or a `Halt`; anything else as it is. */
export function asyncUnitValue(stored: unknown): unknown {
  if (!isAsyncUnitResult(stored)) return stored;
  if (stored.ok) return stored.value;
  if ('halt' in stored) return new Halt(stored.halt.reason, stored.halt.details);
  return new Failure(new AsyncUnitFailedError(stored.failure), { retryable: false });
}

/** The run's `results` as callers see them: each async unit's as its value, `Failure` or `Halt`. */
export function publicResults(state: RunState): Record<string, unknown> {
  const units = Object.keys(state.asyncUnits ?? {}).filter((step) => step in state.results);
  if (units.length === 0) return state.results;
  const out = { ...state.results };
  for (const step of units) out[step] = asyncUnitValue(out[step]);
  return out;
}

/**
 * `value` (the run's value) as callers see it. The value of a reactor that returns nothing holds
 * its results, where a unit that did not succeed is its stored outcome (one that did is its value):
 * such an entry, the same record as the unit step's result, is read as a `Failure` or `Halt`. A
 * value some step returned is never the stored record (no step ever sees it), so it is left alone.
 */
export function publicValue(state: RunState, value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const units = Object.keys(state.asyncUnits ?? {}).filter((step) => {
    const entry = (value as Record<string, unknown>)[step];
    return isAsyncUnitResult(entry) && !entry.ok && sameJson(entry, state.results[step]);
  });
  if (units.length === 0) return value;
  const out = { ...(value as Record<string, unknown>) };
  for (const step of units) out[step] = asyncUnitValue(out[step]);
  return out;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}
