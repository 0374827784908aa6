import { isDeepStrictEqual } from 'node:util';
import type { RollbackFailure } from '../../core';
import { didYouMean } from '../../core/errors/closest-names';
import {
  describeFailure,
  describeRun,
  describeStatus,
  fieldErrorsOf,
  retriesOf,
  rollbackOf,
  runSubjectOf,
  type RollbackEntry,
  type RunSubject,
} from './run-subject';

/**
 * The part of a matcher's `this` the reactor matchers use. Jest and Vitest both pass it; `equals`
 * understands asymmetric matchers (`expect.objectContaining`), and deep equality stands in
 * without it.
 */
export interface ReactorMatcherContext {
  isNot?: boolean;
  equals?: (a: unknown, b: unknown) => boolean;
}

/** What a matcher returns (jest's and Vitest's shape). */
export interface ReactorMatcherResult {
  pass: boolean;
  message: () => string;
}

/**
 * Jest/Vitest matchers for runs. Register them once (a setup file):
 *
 * ```ts
 * import { reactorMatchers } from 'nest-reactor/testing/jest';   // also declares their types
 * expect.extend(reactorMatchers);
 * ```
 *
 * Each takes what `client.run`, `client.wait` or `client.undo` returned (or a `RunView` from
 * `client.get`), and reads only that: its status, failure and trace. `toHaveValidationErrorOn` also
 * takes a thrown `InputValidationError` (`continue` with a bad payload), for `.rejects`.
 */
export const reactorMatchers = {
  /**
   * The run completed; with an argument, its value equals it (asymmetric matchers work).
   *
   * ```ts
   * expect(outcome).toHaveCompleted();
   * expect(outcome).toHaveCompleted(expect.objectContaining({ country: 'FR' }));
   * ```
   */
  toHaveCompleted(
    this: ReactorMatcherContext,
    received: unknown,
    ...expected: [value?: unknown]
  ): ReactorMatcherResult {
    const run = requireRun(received, 'toHaveCompleted');
    const withValue = expected.length > 0;
    const completed = run.status === 'completed';
    const valueMatches = !withValue || (completed && equal(this, run.value, expected[0]));
    const pass = completed && valueMatches;
    return {
      pass,
      message: () => {
        const what = withValue ? `to have completed with ${show(expected[0])}` : 'to have completed';
        if (pass) return `expected ${describeRun(run)} not ${what}, but it did`;
        if (!completed) return `expected ${describeRun(run)} ${what}, but ${describeStatus(run)}`;
        return `expected ${describeRun(run)} ${what}, but it completed with ${show(run.value)}`;
      },
    };
  },

  /**
   * The run failed at `step` (the failure's `stepName`: for nested work, the compose or map step;
   * its `failure.cause` says where inside).
   *
   * ```ts
   * expect(outcome).toHaveFailedAt('charge');
   * ```
   */
  toHaveFailedAt(this: ReactorMatcherContext, received: unknown, step: string): ReactorMatcherResult {
    const run = requireRun(received, 'toHaveFailedAt');
    const pass = run.status === 'failed' && run.failure.stepName === step;
    return {
      pass,
      message: () =>
        pass
          ? `expected ${describeRun(run)} not to have failed at step '${step}', but it did: ${
              run.status === 'failed' ? describeFailure(run.failure) : ''
            }`
          : `expected ${describeRun(run)} to have failed at step '${step}', but ${describeStatus(run)}`,
    };
  },

  /**
   * The rollback ran the compensations and undos of exactly these steps, in this order: the
   * failing steps' `compensate` first, then `undo` newest completed step first (the order the walk
   * takes). A step with no `compensate`/`undo` of its own is walked over, not listed. `[]`: nothing
   * was rolled back. Works on failed runs and on runs undone with `client.undo`.
   *
   * ```ts
   * expect(outcome).toHaveRolledBack(['ship', 'charge', 'reserve']);
   * ```
   */
  toHaveRolledBack(this: ReactorMatcherContext, received: unknown, steps: readonly string[]): ReactorMatcherResult {
    const run = requireRun(received, 'toHaveRolledBack');
    if (!Array.isArray(steps)) throw new TypeError(usage('toHaveRolledBack', 'an array of step names, newest first'));
    const walk = rollbackOf(run.trace);
    const pass = isDeepStrictEqual(
      walk.map((e) => e.step),
      [...steps],
    );
    return {
      pass,
      message: () =>
        pass
          ? `expected ${describeRun(run)} not to have rolled back ${show(steps)}, but it did (${describeWalk(walk)})`
          : `expected ${describeRun(run)} to have rolled back ${show(steps)} in that order, but its rollback was ${describeWalk(walk)} (${describeStatus(run)})`,
    };
  },

  /**
   * The rollback left an undo or a compensation of `step` undone: its run failed (or was undone
   * with `client.undo`) with a `rollbackFailures` entry for that step. `expected` narrows it: any of
   * `kind` (`'undo' | 'compensate' | 'undoAll'`), `reason` (`'raised'`, `'returnedFailure'`,
   * `'coordinationUnavailable'`, `'contextUnavailable'`, `'elementInFlight'`), `message` (a
   * substring or a RegExp), `mapStep`, `elementIndex` (a map element's), `reactorName` (a composed
   * child's step).
   *
   * ```ts
   * expect(outcome).toHaveRollbackFailure('reserve');
   * expect(outcome).toHaveRollbackFailure('reserve', { kind: 'undo', reason: 'raised', message: /warehouse down/ });
   * expect(outcome).toHaveRollbackFailure('add', { mapStep: 'lines', elementIndex: 2 });
   * ```
   */
  toHaveRollbackFailure(
    this: ReactorMatcherContext,
    received: unknown,
    step: string,
    expected: RollbackFailureExpectation = {},
  ): ReactorMatcherResult {
    const run = requireRun(received, 'toHaveRollbackFailure');
    if (typeof step !== 'string' || expected === null || typeof expected !== 'object')
      throw new TypeError(usage('toHaveRollbackFailure', 'a step name and optionally { kind, reason, message, ... }'));
    const unknown = Object.keys(expected).filter((key) => !ROLLBACK_FAILURE_FIELDS.has(key));
    if (unknown.length > 0)
      throw new TypeError(
        usage(
          'toHaveRollbackFailure',
          `only ${[...ROLLBACK_FAILURE_FIELDS].join(', ')} in its second argument, not ${unknown.join(', ')}`,
        ),
      );
    const failures = rollbackFailuresOf(run);
    const ofStep = failures.filter((f) => f.step === step);
    const pass = ofStep.some((f) => rollbackFailureMatches(this, f, expected));
    const what = `a rollback failure of step '${step}'${Object.keys(expected).length > 0 ? ` matching ${showExpectation(expected)}` : ''}`;
    return {
      pass,
      message: () => {
        if (pass) return `expected ${describeRun(run)} not to have ${what}, but it has: ${show(ofStep)}`;
        if (failures.length === 0)
          return `expected ${describeRun(run)} to have ${what}, but its rollback has no failures (${describeStatus(run)})`;
        return `expected ${describeRun(run)} to have ${what}, but its rollback failures are ${show(failures)}`;
      },
    };
  },

  /**
   * Step `step` was retried exactly `times` times (attempts made: `times + 1`, or `times` when the
   * last retry was still waiting). Read from the run's trace, so a background run counts too once
   * finished.
   *
   * ```ts
   * expect(outcome).toHaveRetried('charge', 2);
   * ```
   */
  toHaveRetried(this: ReactorMatcherContext, received: unknown, step: string, times: number): ReactorMatcherResult {
    const run = requireRun(received, 'toHaveRetried');
    if (typeof times !== 'number' || !Number.isInteger(times) || times < 0)
      throw new TypeError(usage('toHaveRetried', 'a step name and a whole number of retries'));
    const actual = retriesOf(run.trace, step);
    const pass = actual === times;
    const attempts = run.attempts[step];
    return {
      pass,
      message: () =>
        `expected step '${step}' of ${describeRun(run)} ${pass ? 'not ' : ''}to have been retried ${plural(times, 'time')}, ` +
        `but it was retried ${plural(actual, 'time')}` +
        (attempts === undefined
          ? ` (it never ran${neverRanHint(run, step)})`
          : ` (${plural(attempts, 'attempt')}; ${describeStatus(run)})`),
    };
  },

  /**
   * Validation failed on `field` (a dot path such as `order.totalCents`; a path under it counts
   * too: `order.items` matches `order.items.0.quantity`), optionally with a message containing
   * `message` (or matching it). Takes a failed outcome (reactor inputs, a step's contract) or a
   * thrown `InputValidationError` (an interrupt's payload, through `.rejects`).
   *
   * ```ts
   * expect(outcome).toHaveValidationErrorOn('order.totalCents');
   * await expect(client.continue(runId, 'approve', {})).rejects.toHaveValidationErrorOn('approver');
   * ```
   */
  toHaveValidationErrorOn(
    this: ReactorMatcherContext,
    received: unknown,
    field: string,
    message?: string | RegExp,
  ): ReactorMatcherResult {
    const errors = fieldErrorsOf(received);
    const run = runSubjectOf(received);
    const subject = run ? describeRun(run) : 'the error';
    if (!errors && !run && !(received instanceof Error))
      throw new TypeError(usage('toHaveValidationErrorOn', 'a field path'));
    const fields = Object.keys(errors ?? {}).filter((f) => f === field || f.startsWith(`${field}.`));
    const messages = fields.flatMap((f) => errors![f]);
    const messageMatches =
      message === undefined ||
      messages.some((m) => (typeof message === 'string' ? m.includes(message) : message.test(m)));
    const pass = fields.length > 0 && messageMatches;
    const what = `a validation error on '${field}'${message === undefined ? '' : ` with a message matching ${String(message)}`}`;
    return {
      pass,
      message: () => {
        if (pass) return `expected ${subject} not to have ${what}, but it has: ${show(pick(errors!, fields))}`;
        if (!errors || Object.keys(errors).length === 0)
          return `expected ${subject} to have ${what}, but it has no field errors${run ? ` (${describeStatus(run)})` : ''}`;
        return `expected ${subject} to have ${what}, but its field errors are ${show(errors)}`;
      },
    };
  },
};

/** What {@link reactorMatchers.toHaveRollbackFailure} may narrow a rollback failure to. */
export interface RollbackFailureExpectation {
  kind?: RollbackFailure['kind'];
  reason?: RollbackFailure['reason'];
  /** A substring of the failure's message, or a RegExp it matches. */
  message?: string | RegExp;
  mapStep?: string;
  elementIndex?: number;
  reactorName?: string;
}

const ROLLBACK_FAILURE_FIELDS = new Set(['kind', 'reason', 'message', 'mapStep', 'elementIndex', 'reactorName']);

/** A failed run's `failure.rollbackFailures`, or an undone (cancelled) run's. */
function rollbackFailuresOf(run: RunSubject): readonly RollbackFailure[] {
  if (run.status === 'failed') return run.failure.rollbackFailures ?? [];
  if (run.status === 'cancelled') return run.rollbackFailures ?? [];
  return [];
}

function rollbackFailureMatches(
  context: ReactorMatcherContext,
  failure: RollbackFailure,
  expected: RollbackFailureExpectation,
): boolean {
  return Object.entries(expected).every(([key, value]) => {
    if (value === undefined) return true;
    const actual = (failure as unknown as Record<string, unknown>)[key];
    if (key === 'message' && typeof value === 'string') return typeof actual === 'string' && actual.includes(value);
    if (key === 'message' && value instanceof RegExp) return typeof actual === 'string' && value.test(actual);
    return equal(context, actual, value);
  });
}

function showExpectation(expected: RollbackFailureExpectation): string {
  return `{ ${Object.entries(expected)
    .map(([key, value]) => `${key}: ${value instanceof RegExp ? String(value) : show(value)}`)
    .join(', ')} }`;
}

/** The names of the reactor matchers. */
export type ReactorMatcherName = keyof typeof reactorMatchers;

function requireRun(received: unknown, matcher: ReactorMatcherName): RunSubject {
  const run = runSubjectOf(received);
  if (!run) {
    throw new TypeError(
      `${matcher}: expected a run outcome (what client.run, client.wait or client.undo return) or a RunView ` +
        `(client.get), received ${show(received)}`,
    );
  }
  return run;
}

function usage(matcher: ReactorMatcherName, expected: string): string {
  return `${matcher}: expected ${expected}`;
}

function equal(context: ReactorMatcherContext, actual: unknown, expected: unknown): boolean {
  return context.equals ? context.equals(actual, expected) : isDeepStrictEqual(actual, expected);
}

/** For a step that never ran: `; did you mean 'charge'?` when the run has a step of a close name. */
function neverRanHint(run: RunSubject, step: string): string {
  const names = new Set([...Object.keys(run.attempts), ...run.trace.map((e) => e.step)]);
  const hint = didYouMean(step, names);
  return hint ? `;${hint.replace(' Did', ' did')}` : '';
}

function describeWalk(walk: readonly RollbackEntry[]): string {
  if (walk.length === 0) return 'empty';
  return walk.map((e) => `${e.kind} ${e.step}${e.ok ? '' : ' (failed)'}`).join(', ');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function pick<T>(record: Record<string, T>, keys: readonly string[]): Record<string, T> {
  return Object.fromEntries(keys.map((k) => [k, record[k]]));
}

/** A value for a message: JSON, cut at 300 characters. */
function show(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}
