import type { FieldErrors, RunFailure, RunOutcome, TraceEntry } from '../../core';

/** What the run matchers read: a run's outcome, from `client.run`, `wait`, `undo`, or `client.get(...).outcome`. */
export type RunSubject = RunOutcome;

/**
 * The run outcome in `received`: a {@link RunOutcome} as is, or the `outcome` of a `RunView`
 * (what `client.get` returns). Undefined for anything else.
 */
export function runSubjectOf(received: unknown): RunSubject | undefined {
  // NOTE: a RunView has a status, a run id and a trace too; its `outcome` is checked first, since
  // only the outcome carries a cancelled run's reason and rollback failures.
  if (received !== null && typeof received === 'object' && isOutcome((received as { outcome?: unknown }).outcome)) {
    return (received as { outcome: RunOutcome }).outcome;
  }
  if (isOutcome(received)) return received;
  return undefined;
}

function isOutcome(value: unknown): value is RunOutcome {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Partial<RunOutcome>;
  return typeof v.status === 'string' && typeof v.runId === 'string' && Array.isArray(v.trace);
}

/** `run 'r1' (checkout)`, to start a message. */
export function describeRun(run: RunSubject): string {
  return `run '${run.runId}' (${run.reactorName})`;
}

/** What a run's status amounts to, for a message: `it failed at step 'charge': card declined`. */
export function describeStatus(run: RunSubject): string {
  switch (run.status) {
    case 'completed':
      return 'it completed';
    case 'failed':
      return `it failed ${describeFailure(run.failure)}`;
    case 'halted':
      return `it halted at step '${run.stepName}': ${run.reason}`;
    case 'paused':
      return `it is paused at '${run.stepName}'`;
    case 'cancelled':
      return `it was cancelled: ${run.reason}`;
    case 'dispatched':
      return 'it was handed to a worker and has not finished (await client.wait(runId), or kit.idle())';
  }
}

/** `at step 'charge' (STEP_FAILED): card declined`, or `before any step (INPUT_VALIDATION): ...`. */
export function describeFailure(failure: RunFailure): string {
  const where = failure.stepName !== undefined ? `at step '${failure.stepName}'` : 'before any step';
  return `${where} (${failure.code}): ${failure.errorMessage}`;
}

/** A compensate or undo the rollback actually ran (a step without that callback is left out). */
export interface RollbackEntry {
  kind: 'compensate' | 'undo' | 'undoAll';
  step: string;
  ok: boolean;
}

// NOTE: the handler step kind traces a rollback step with no callback with these details; such a
// step was walked over, not rolled back (test/sample/checkout.spec.ts pins the wording).
const NO_CALLBACK = new Set(['no undo defined', 'no compensate defined']);

/** The rollback walk as the trace recorded it: compensations of the failing steps, then undos newest first. */
export function rollbackOf(trace: readonly TraceEntry[]): RollbackEntry[] {
  const out: RollbackEntry[] = [];
  for (const entry of trace) {
    if (entry.type !== 'compensate' && entry.type !== 'undo' && entry.type !== 'undoAll') continue;
    if (entry.detail !== undefined && NO_CALLBACK.has(entry.detail)) continue;
    out.push({ kind: entry.type, step: entry.step, ok: entry.ok !== false });
  }
  return out;
}

/** How many times `step` was retried (its `retry` trace entries). */
export function retriesOf(trace: readonly TraceEntry[], step: string): number {
  return trace.filter((e) => e.type === 'retry' && e.step === step).length;
}

/**
 * The field errors in `received`: a failed outcome's (or a `RunView`'s), a `RunFailure`'s, or a
 * thrown `InputValidationError`'s (`continue` with a bad payload). Undefined when it has none.
 */
export function fieldErrorsOf(received: unknown): FieldErrors | undefined {
  const run = runSubjectOf(received);
  if (run) return run.status === 'failed' ? run.failure.fieldErrors : undefined;
  if (received !== null && typeof received === 'object') {
    const errors = (received as { fieldErrors?: unknown }).fieldErrors;
    if (errors !== null && typeof errors === 'object') return errors as FieldErrors;
  }
  return undefined;
}
