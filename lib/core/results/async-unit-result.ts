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

/**
 * The run's `results` as callers see them: each async unit's as its value, `Failure` or `Halt`,
 * and the value of a composed child that has units read the same way (see {@link publicValue}).
 */
export function publicResults(state: RunState): Record<string, unknown> {
  const units = Object.keys(state.asyncUnits ?? {}).filter((step) => step in state.results);
  const children = childrenWithUnits(state).filter((step) => step in state.results);
  if (units.length === 0 && children.length === 0) return state.results;
  const out = { ...state.results };
  for (const step of units) out[step] = asyncUnitValue(out[step]);
  for (const step of children) out[step] = publicValue(state.children[step], out[step]);
  return out;
}

/**
 * `value` (the run's value, or a composed child's) as callers see it. The value of a reactor that
 * returns nothing holds its results, where a unit that did not succeed is its stored outcome (one
 * that did is its value): such an entry, the same record as the unit step's result, is read as a
 * `Failure` or `Halt`; a composed child's value in it (or returned as the value) is read as the
 * child's. A value some step returned is never the stored record (no step ever sees it), so it is
 * left alone. Runs without async units cost nothing here.
 */
export function publicValue(state: RunState, value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const children = childrenWithUnits(state).filter((step) => step in state.results);
  // The reactor returns a composed child's result (or a unit's record inside it): read as the child's.
  for (const step of children) {
    const child = state.children[step];
    if (sameJson(value, state.results[step])) return publicValue(child, value);
    if (isAsyncUnitResult(value) && !value.ok) {
      const own = Object.keys(child.asyncUnits ?? {}).some((unit) => sameJson(value, child.results[unit]));
      if (own) return asyncUnitValue(value);
      const deeper = publicValue(child, value);
      if (deeper !== value) return deeper;
    }
  }
  const entries = value as Record<string, unknown>;
  const units = Object.keys(state.asyncUnits ?? {}).filter((step) => {
    const entry = entries[step];
    return isAsyncUnitResult(entry) && !entry.ok && sameJson(entry, state.results[step]);
  });
  const nested = children.filter((step) => step in entries && sameJson(entries[step], state.results[step]));
  if (units.length === 0 && nested.length === 0) return value;
  const out = { ...entries };
  for (const step of units) out[step] = asyncUnitValue(out[step]);
  for (const step of nested) out[step] = publicValue(state.children[step], out[step]);
  return out;
}

/** The compose steps of `state` whose child (or a child of it) dispatched async units. */
function childrenWithUnits(state: RunState): string[] {
  return Object.keys(state.children ?? {}).filter((step) => holdsUnits(state.children[step]));
}

function holdsUnits(state: RunState | undefined): boolean {
  if (!state) return false;
  if (Object.keys(state.asyncUnits ?? {}).length > 0) return true;
  return Object.values(state.children ?? {}).some(holdsUnits);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}
