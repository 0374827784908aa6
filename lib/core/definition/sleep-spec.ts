import { Ref } from './ref';

/**
 * A durable sleep's spec (`r.sleep`). The duration or the wake-up time is an argument of the step
 * (`ms` or `until`, a constant or a ref), so it is resolved like any step argument and its ref is a
 * dependency. Its `name` is `sleep` whatever the duration: a deploy that changes how long a sleep
 * lasts does not change the definition's hash (a sleeping run keeps the wake-up time it recorded).
 */
export interface SleepSpec {
  readonly kind: 'sleep';
  readonly name: 'sleep';
  /** Which argument says when to wake: `ms` (a duration) or `until` (a time). */
  readonly by: 'ms' | 'until';
}

declare module './definition' {
  interface HandlerSpecs {
    /** A durable sleep: the run parks until a time, woken by a delayed job (see `SleepSpec`). */
    sleep: SleepSpec;
  }
}

/**
 * Options of `r.sleep(name, options)`: exactly one of `ms` (how long) or `until` (when).
 *
 * - `ms`: milliseconds from when the run reaches the step, a non-negative number or a ref to one.
 * - `until`: a ref to an input or a step's result holding the wake-up time as an ISO 8601 string
 *   (`'2026-12-24T08:00:00Z'`) or epoch milliseconds (run values are JSON: no `Date` objects).
 *   A time already past wakes at once.
 */
export type SleepOptions = (
  { ms: number | Ref<number>; until?: never } | { until: Ref<string | number> | Ref<string> | Ref<number>; ms?: never }
) & {
  /** Ordering-only dependencies: refs to steps, or step names. */
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
};

/** What a sleep step's value is: the time it slept until (epoch milliseconds). */
export interface SleepResult {
  sleptUntil: number;
}

/**
 * The spec and argument sources of `options`, or the problem with them (a sentence, no period).
 * `ms` given as a number is checked here; a ref is checked when the run reaches the step.
 */
export function toSleepSpec(
  options: unknown,
): { spec: SleepSpec; args: Record<string, Ref<unknown>>; waitFor?: ReadonlyArray<Ref<unknown> | string> } | string {
  if (typeof options !== 'object' || options === null) return 'options are required: { ms } or { until }';
  const { ms, until, waitFor, ...rest } = options as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) return `unknown option '${unknown[0]}'; a sleep takes 'ms' or 'until', and 'waitFor'`;
  if ((ms === undefined) === (until === undefined)) return "give exactly one of 'ms' (a duration) or 'until' (a time)";
  if (waitFor !== undefined && !Array.isArray(waitFor)) return 'waitFor must be an array of refs or step names';
  const wait = waitFor as ReadonlyArray<Ref<unknown> | string> | undefined;
  if (ms !== undefined) {
    if (ms instanceof Ref) return { spec: { kind: 'sleep', name: 'sleep', by: 'ms' }, args: { ms }, waitFor: wait };
    const problem = durationProblem(ms);
    if (problem) return problem;
    return {
      spec: { kind: 'sleep', name: 'sleep', by: 'ms' },
      args: { ms: new Ref({ kind: 'value', value: ms, ops: [] }) },
      waitFor: wait,
    };
  }
  if (!(until instanceof Ref)) {
    return 'until must be a ref (r.input(...) or a step ref) to an ISO 8601 string or epoch milliseconds';
  }
  return { spec: { kind: 'sleep', name: 'sleep', by: 'until' }, args: { until }, waitFor: wait };
}

/** The problem with a sleep's duration `ms`, if any. */
export function durationProblem(ms: unknown): string | undefined {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    return `ms must be a finite number of milliseconds >= 0 (got ${describe(ms)})`;
  }
  return undefined;
}

/**
 * ISO 8601: a date (midnight UTC), or a date and time with its zone (`2026-12-24`,
 * `2026-12-24T08:00:00.000Z`, `2026-12-24T09:00:00+01:00`).
 */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The epoch milliseconds of a sleep's `until` value, or the problem with it. */
export function wakeTimeOf(until: unknown): number | string {
  if (typeof until === 'number') {
    return Number.isFinite(until) ? until : `until must be a finite number of epoch milliseconds (got ${until})`;
  }
  if (typeof until === 'string') {
    const text = until.trim();
    const match = ISO_8601.exec(text);
    // A time without a zone would mean the local time of whichever process read it first.
    if (match && text.length > 10 && match[1] === undefined) {
      return `until must give its time zone ('Z' or an offset like +01:00) (got ${describe(until)})`;
    }
    const at = match ? Date.parse(text.replace(' ', 'T')) : NaN;
    return Number.isFinite(at) ? at : `until must be an ISO 8601 date string (got ${describe(until)})`;
  }
  if (until instanceof Date && Number.isFinite(until.getTime())) return until.getTime();
  return `until must be an ISO 8601 date string or epoch milliseconds (got ${describe(until)})`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
