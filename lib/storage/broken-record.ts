/**
 * The record `markBroken` writes for a run that cannot go on: a failed run carrying every field of
 * the old record that can still be read, written in fields like any other record.
 */
import type { RunState } from '../core';
import {
  ATTEMPTS,
  CHILD,
  encodeDelta,
  INPUTS,
  MAP,
  RESULT,
  TRACE,
  traceEntryOf,
  unfoldResult,
  UNDO,
  withReferencedArguments,
} from './run-record.codec';
import { NO_SEALER, type Sealer } from './sealing';

/**
 * The record `markBroken` writes: `broken` (the minimal failed run of `brokenRunState`) with every
 * field of the previous record that can still be read put back: inputs, results in their order,
 * the undo stack, the trace, attempts, children and map records. So a run that cannot go on keeps
 * what `undo` needs. Fields that do not parse (or a record stored whole) add nothing. Sealed fields
 * are opened with `sealer`, and the run stays marked `encryptInputs` so that they are sealed again.
 * @throws ConfigurationError for a sealed field `sealer` cannot open (nothing is lost to a missing key).
 */
export function salvageRecord(broken: RunState, fields: Record<string, string>, sealer: Sealer = NO_SEALER): RunState {
  const state = broken;
  const read = (field: string, value: string): unknown => {
    const json = sealer.open(value, { runId: state.runId, field });
    if (json !== value) state.encryptInputs = true;
    try {
      return JSON.parse(json);
    } catch {
      return undefined;
    }
  };
  const order: Array<[number, string]> = [];
  const undo: Array<[number, string, Record<string, unknown>]> = [];
  const trace: Array<[number, RunState['trace'][number]]> = [];
  for (const [field, value] of Object.entries(fields)) {
    const parsed = read(field, value);
    if (parsed === undefined) continue;
    if (field === INPUTS && isObject(parsed)) state.inputs = parsed;
    else if (field.startsWith(RESULT) && Array.isArray(parsed) && typeof parsed[0] === 'number') {
      const step = field.slice(RESULT.length);
      if (parsed.length > 1) state.results[step] = parsed[1];
      if (parsed.length > 2 && unfoldResult(step, parsed[2], trace as Array<[number, unknown]>))
        state.attempts[step] ??= 1;
      order.push([parsed[0], step]);
    } else if (
      field.startsWith(UNDO) &&
      Array.isArray(parsed) &&
      typeof parsed[0] === 'string' &&
      isObject(parsed[1])
    ) {
      undo.push([Number(field.slice(UNDO.length)), parsed[0], parsed[1]]);
    } else if (field.startsWith(TRACE) && isObject(traceEntryOf(parsed))) {
      trace.push([Number(field.slice(TRACE.length)), traceEntryOf(parsed) as RunState['trace'][number]]);
    } else if (field.startsWith(ATTEMPTS) && typeof parsed === 'number') {
      state.attempts[field.slice(ATTEMPTS.length)] = parsed;
    } else if (field.startsWith(CHILD) && isObject(parsed)) {
      state.children[field.slice(CHILD.length)] = parsed as unknown as RunState;
    } else if (field.startsWith(MAP) && isObject(parsed)) {
      state.maps = {
        ...state.maps,
        [field.slice(MAP.length)]: parsed as unknown as NonNullable<RunState['maps']>[string],
      };
    }
  }
  state.completed = order.sort((a, b) => a[0] - b[0]).map(([, step]) => step);
  state.undoStack = undo
    .sort((a, b) => a[0] - b[0])
    .map(([, step, args]) => ({ step, args, result: state.results[step] }));
  const sizes = new Map<string, number>();
  state.trace = trace
    .sort((a, b) => a[0] - b[0])
    .map(
      ([, entry]) => withReferencedArguments(entry, state.results, state.inputs, sizes) as RunState['trace'][number],
    );
  return state;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A broken record's fields, flat (`[field, value, ...]`): the whole state, whatever its size. */
export function encodeBroken(state: RunState, sealer: Sealer = NO_SEALER): string[] {
  return encodeDelta(state, undefined, Infinity, sealer).set;
}
