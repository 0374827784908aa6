/**
 * Rollback: compensate the failing steps whose body started, then undo completed steps newest
 * first, then end the run in the plan's target status. The plan is saved before it starts and
 * after each step of it, so a worker finishes it if this process dies.
 */
import { retakeForRollback } from './step-coordination';
import type { StepDefinition } from '../definition/definition';
import { errorMessage, type RollbackFailure } from '../model/failure';
import type { UndoEntry } from '../model/run-state';
import { stepKindOf, type RollbackReport } from '../steps';
import { ReactorTraceAttributes, ReactorTraceEvents } from '../tracing/tracing';
import type { RunScope } from './run-scope';
import type { StepFailed } from './step-runner';

/** Save a rollback plan for `failures` (status `rolling_back`), carry it out, then report the failing steps. */
export async function rollback(scope: RunScope, failures: StepFailed[]): Promise<void> {
  const { state } = scope;
  state.failure = failures[0].failure;
  state.rollback = {
    target: 'failed',
    compensate: failures
      .filter((f) => f.compensate)
      .map((f) => ({ step: f.step.name, args: f.args, message: f.failure.errorMessage })),
    failures: failures.flatMap((f) => f.failure.rollbackFailures),
  };
  for (const f of failures) if (f.compensate) scope.liveErrors.set(f.step.name, f.error);
  state.status = 'rolling_back';
  await scope.save();
  await finishRollback(scope);
  for (const f of failures) {
    await scope.emitStep(f.step, {
      type: 'step.fail',
      error: f.failure.errorMessage,
      attempts: f.failure.attempts ?? 0,
    });
  }
}

/** Carry out (or resume) the saved rollback plan, then end in its target status. */
export async function finishRollback(scope: RunScope): Promise<void> {
  const { state, def } = scope;
  const plan = state.rollback!;
  while (plan.compensate.length > 0) {
    scope.throwIfStopped();
    const pending = plan.compensate[0];
    const step = def.stepsByName.get(pending.step);
    const error = scope.liveErrors.get(pending.step) ?? new Error(pending.message);
    if (step) plan.failures.push(...(await compensateStep(scope, step, error, pending.args)));
    plan.compensate.shift();
    await scope.save();
  }
  await undoAll(scope);
  if (plan.target === 'failed') {
    state.failure = Object.assign({}, state.failure!, { rollbackFailures: plan.failures });
    state.status = 'failed';
  } else {
    state.cancellation = { reason: state.cancellation?.reason ?? 'undo', rollbackFailures: plan.failures };
    state.status = 'cancelled';
  }
  delete state.rollback;
  state.finishedAt = scope.now();
  await scope.saveRun(scope.root);
}

/**
 * Undo every entry of the undo stack, newest first. An entry is popped only after its undo
 * returned, and the state is saved after each, so a crash mid-rollback leaves exactly the rest.
 */
export async function undoAll(scope: RunScope): Promise<RollbackFailure[]> {
  const failures: RollbackFailure[] = [];
  const { state } = scope;
  while (state.undoStack.length > 0) {
    scope.throwIfStopped();
    const entry = state.undoStack[state.undoStack.length - 1];
    const problems = await undoEntry(scope, entry);
    // Stopped while undoing (shutdown, lost lease): the entry stays for whoever resumes the rollback.
    if (problems.length > 0) scope.throwIfStopped();
    failures.push(...problems);
    state.rollback?.failures.push(...problems);
    state.undoStack.pop();
    await scope.save();
  }
  return failures;
}

/** Undo one completed step (its kind knows how), with its events and trace entry. */
export async function undoEntry(scope: RunScope, entry: UndoEntry): Promise<RollbackFailure[]> {
  const step = scope.def.stepsByName.get(entry.step);
  if (!step) {
    return [
      {
        step: entry.step,
        kind: 'undo',
        reason: 'raised',
        message: `step '${entry.step}' is not in the definition`,
        reactorName: scope.def.name,
      },
    ];
  }
  scope.span.event(ReactorTraceEvents.UNDO_START, { [ReactorTraceAttributes.STEP]: step.name });
  await scope.emitStep(step, { type: 'undo.start' });
  const report = await inRollbackSpan(scope, step, 'undo', () =>
    underStepCoordination(scope, step, entry.args, 'undo', () =>
      withRollbackSignal(scope, step, 'undo', () => stepKindOf(step).undo(scope, step, entry)),
    ),
  );
  const ok = report.failures.length === 0;
  scope.trace({ type: 'undo', step: step.name, ok, detail: report.detail });
  scope.span.event(ok ? ReactorTraceEvents.UNDO_COMPLETE : ReactorTraceEvents.UNDO_FAIL, spanEvent(step, ok, report));
  await scope.emitStep(step, ok ? { type: 'undo.complete' } : { type: 'undo.fail', error: failMessage(report) });
  return report.failures;
}

/** Compensate a failing step whose body started (its kind knows how), with its events and trace entry. */
async function compensateStep(
  scope: RunScope,
  step: StepDefinition,
  error: unknown,
  args: Record<string, unknown>,
): Promise<RollbackFailure[]> {
  const kind = stepKindOf(step);
  if (!kind.compensate) return [];
  scope.span.event(ReactorTraceEvents.COMPENSATION_START, { [ReactorTraceAttributes.STEP]: step.name });
  await scope.emitStep(step, { type: 'compensation.start' });
  const report = await inRollbackSpan(scope, step, 'compensate', () =>
    underStepCoordination(scope, step, args, 'compensate', () =>
      withRollbackSignal(scope, step, 'compensate', () => kind.compensate!(scope, step, error, args)),
    ),
  );
  // Stopped while compensating (shutdown, lost lease): it stays planned for whoever resumes the rollback.
  if (report.failures.length > 0) scope.throwIfStopped();
  const ok = report.failures.length === 0;
  scope.trace({ type: 'compensate', step: step.name, ok, detail: report.detail });
  scope.span.event(
    ok ? ReactorTraceEvents.COMPENSATION_COMPLETE : ReactorTraceEvents.COMPENSATION_FAIL,
    spanEvent(step, ok, report),
  );
  await scope.emitStep(
    step,
    ok ? { type: 'compensation.complete' } : { type: 'compensation.fail', error: failMessage(report) },
  );
  return report.failures;
}

/** Run a step's undo or compensate holding its lock and semaphore again (a failure to take them is reported). */
async function underStepCoordination(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  kind: RollbackFailure['kind'],
  run: () => Promise<RollbackReport>,
): Promise<RollbackReport> {
  if (!step.coordination) return run();
  const hold = await retakeForRollback(scope, step, args, kind);
  if (!('release' in hold)) return { failures: [hold], detail: hold.message };
  try {
    return await run();
  } finally {
    await hold.release();
  }
}

/**
 * Run a compensate or undo (with its coordination) in a span of its own, `reactor.step.compensate
 * <step>` or `reactor.step.undo <step>` under the run span, when tracing asks for them
 * (`rollbackSpans`); the spans of the callback's own code nest under it. Its outcome is `success`
 * or `failure` (status ERROR with the message), `error` when it threw past the report.
 */
async function inRollbackSpan(
  scope: RunScope,
  step: StepDefinition,
  phase: 'compensate' | 'undo',
  run: () => Promise<RollbackReport>,
): Promise<RollbackReport> {
  if (scope.env.tracing?.rollbackSpans !== true) return run();
  const span = scope.span.child(`reactor.step.${phase} ${step.name}`, {
    [ReactorTraceAttributes.REACTOR]: scope.def.name,
    [ReactorTraceAttributes.RUN_ID]: scope.state.runId,
    [ReactorTraceAttributes.STEP]: step.name,
  });
  let report: RollbackReport;
  try {
    report = await span.within(run);
  } catch (error) {
    span.set({ [ReactorTraceAttributes.OUTCOME]: 'error' });
    span.end(errorMessage(error));
    throw error;
  }
  const ok = report.failures.length === 0;
  span.set({ [ReactorTraceAttributes.OUTCOME]: ok ? 'success' : 'failure' });
  span.end(ok ? undefined : failMessage(report));
  return report;
}

/** Attributes of a compensation's or undo's closing span event: the step, and the error when it failed. */
function spanEvent(step: StepDefinition, ok: boolean, report: RollbackReport): Record<string, string> {
  return ok
    ? { [ReactorTraceAttributes.STEP]: step.name }
    : { [ReactorTraceAttributes.STEP]: step.name, [ReactorTraceAttributes.ERROR_MESSAGE]: failMessage(report) };
}

/** Run a compensate or undo with a signal of its own (aborted at shutdown or on a lost lease, never by a cancel). */
async function withRollbackSignal(
  scope: RunScope,
  step: StepDefinition,
  phase: 'compensate' | 'undo',
  run: () => Promise<RollbackReport>,
): Promise<RollbackReport> {
  return (await scope.withSignal(step, phase, run)).value;
}

function failMessage(report: { failures: RollbackFailure[]; error?: string }): string {
  return report.error ?? report.failures[0]?.message ?? '';
}
