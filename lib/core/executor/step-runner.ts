/**
 * Running one step: resolve its arguments, check its input contract, then attempt its body (through
 * its kind) under the retry policy, check the output contract, and say how the step settled.
 */
import { CoordinationContendedError } from '../errors/coordination.error';
import { confirmHolds, takeStepCoordination, type StepHold } from './step-coordination';
import type { StepDefinition } from '../definition/definition';
import { redactArgs, redactInputs } from '../definition/redaction';
import { backoffDelay } from '../definition/retry-policy';
import { ArgumentResolutionError } from '../errors/argument-resolution.error';
import { InputValidationError } from '../errors/input-validation.error';
import { ReactorError } from '../errors/reactor.error';
import { ContextTooLargeError } from '../errors/run-state.error';
import { describeError, errorMessage, runFailure, type RunFailure } from '../model/failure';
import { NestedFailure } from '../results/nested-failure';
import { Failure, Halt, Skipped, Success, type StepOutcome } from '../results/step-outcome';
import type { StepAbortedError } from '../errors/step-aborted.error';
import { ExecutionStopped } from './execution-abort';
import { Suspended } from '../results/suspension';
import { stepKindOf } from '../steps';
import { NO_SPAN, ReactorTraceAttributes, ReactorTraceEvents, type TraceSpan } from '../tracing/tracing';
import { applyContractDefaults, describeFieldErrors, validateContract } from '../validation/validate';
import type { RunScope } from './run-scope';

/** How a step settled, as the loop sees it. */
export type StepResult =
  | { kind: 'success' | 'skipped'; step: StepDefinition; value: unknown; args: Record<string, unknown> }
  | { kind: 'halt'; step: StepDefinition; reason: string; details?: unknown }
  | StepFailed
  | { kind: 'retry'; step: StepDefinition; delayMs: number }
  | { kind: 'wait'; step: StepDefinition; mode: Suspended['mode'] }
  | StepAborted;

/**
 * A step that stopped because its signal was aborted (it threw, or returned a failure, after the
 * abort), or whose nested execution was told to stop. `cancel`: `failed` is its failure record, to
 * compensate it in the cancellation (its body started); `shutdown` and `lease-lost` stop the
 * execution, which records nothing of it.
 */
export type StepAborted =
  | { kind: 'aborted'; cause: 'cancel'; step: StepDefinition; reason: StepAbortedError; failed: StepFailed }
  | { kind: 'aborted'; cause: 'shutdown' | 'lease-lost'; step: StepDefinition };

/** A step that failed: its failure record, the error as thrown, and whether to compensate it. */
export interface StepFailed {
  kind: 'failure';
  step: StepDefinition;
  failure: RunFailure;
  error: unknown;
  args: Record<string, unknown>;
  compensate: boolean;
}

/**
 * Run `step` of `scope`'s run to a {@link StepResult}, inside its span (`reactor.step <step>`, a
 * child of the run's): the step's own code runs with that span active.
 */
export function runStep(scope: RunScope, step: StepDefinition): Promise<StepResult> {
  // A run span that records nothing has step spans that would record nothing either (DD-speed22-5):
  // no attributes to build, no span to enter and end (and no promise of its own around the step's).
  if (scope.span === NO_SPAN) return settle(scope, step, NO_SPAN);
  return runStepInSpan(scope, step);
}

/** {@link runStep} under a span that records. */
async function runStepInSpan(scope: RunScope, step: StepDefinition): Promise<StepResult> {
  const span = scope.span.child(`reactor.step ${step.name}`, {
    [ReactorTraceAttributes.REACTOR]: scope.def.name,
    [ReactorTraceAttributes.RUN_ID]: scope.state.runId,
    [ReactorTraceAttributes.STEP]: step.name,
  });
  let result: StepResult;
  try {
    result = await span.within(() => settle(scope, step, span));
  } catch (error) {
    span.set({ [ReactorTraceAttributes.OUTCOME]: 'error' });
    span.end(errorMessage(error));
    throw error;
  }
  span.set({
    [ReactorTraceAttributes.ATTEMPT]: scope.state.attempts[step.name] ?? 0,
    [ReactorTraceAttributes.OUTCOME]: result.kind,
  });
  span.end(result.kind === 'failure' ? result.failure.errorMessage : undefined);
  return result;
}

/** Run `step` to a {@link StepResult} (its span is `span`). */
async function settle(scope: RunScope, step: StepDefinition, span: TraceSpan): Promise<StepResult> {
  const { def, state } = scope;
  let args: Record<string, unknown>;
  try {
    args = scope.resolveArgs(step);
  } catch (error) {
    const cause = describeError(error);
    const wrapped = new ArgumentResolutionError(
      `Reactor '${def.name}' step '${step.name}' could not resolve its arguments: ${(error as Error)?.message ?? String(error)}`,
      def.name,
      step.name,
      cause.exceptionClass,
    );
    return stepFailed(scope, step, wrapped, {}, { compensate: false, exceptionClass: cause.exceptionClass });
  }
  if (step.input) args = applyContractDefaults(step.input, args);
  const shownArgs = redactArgs(step, args, state.redactedInputs);
  // No middleware registered: no event to build and no await (a promise per step saved).
  if (!scope.middleware.empty) {
    await scope.emitStep(step, {
      type: 'step.start',
      attempt: (state.attempts[step.name] ?? 0) + 1,
      arguments: shownArgs,
    });
  }

  if (step.input) {
    const fieldErrors = await validateContract(step.input, args);
    if (Object.keys(fieldErrors).length > 0) {
      const error = new InputValidationError(
        `Reactor '${def.name}' step '${step.name}': input validation failed (${step.input.name}): ${describeFieldErrors(fieldErrors)}`,
        fieldErrors,
        def.name,
        step.name,
      );
      return stepFailed(scope, step, error, args, { compensate: false });
    }
  }

  const kind = stepKindOf(step);
  const tooLarge = argumentsOverBudget(scope, step, args, kind.hasUndoWork(scope, step));
  if (tooLarge) return stepFailed(scope, step, tooLarge, args, { compensate: false });
  // The step's own lock and semaphore: a step that cannot take them never started.
  let hold: StepHold | undefined;
  try {
    // A step without a lock or semaphore takes nothing (and awaits nothing).
    hold = step.coordination && scope.env.coordination ? await takeStepCoordination(scope, step, args) : undefined;
  } catch (error) {
    // A key function that throws (or returns no string) is the step's bug: it fails, never started.
    if (!(error instanceof CoordinationContendedError))
      return stepFailed(scope, step, error, args, { compensate: false });
    return stepContended(scope, step, args, error, span);
  }
  if (state.stepContentions) delete state.stepContentions[step.name];
  try {
    const result = await attempts(scope, step, args, shownArgs, span);
    // A result is recorded only while every lock and slot the run holds for it is still held.
    const lost = result.kind === 'success' || result.kind === 'skipped' ? confirmHolds(scope, step) : undefined;
    const error = lost && (await lost);
    return error ? stepFailed(scope, step, error, args, { compensate: true, retryable: false }) : result;
  } finally {
    if (hold) await hold.release();
  }
}

/**
 * A step whose lock or semaphore is taken waits (its attempts are not spent): in a worker the run is
 * resumed after the wait, in a caller it is handed to a worker the same way (or waits here without
 * one); past `lockSnoozeMaxAttempts` waits the step fails with the contention's code, not compensated.
 */
async function stepContended(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  error: CoordinationContendedError,
  span: TraceSpan,
): Promise<StepResult> {
  const { state, env } = scope;
  const waited = ((state.stepContentions ??= {})[step.name] ?? 0) + 1;
  state.stepContentions[step.name] = waited;
  if (waited > (env.lockSnoozeMaxAttempts ?? 20)) {
    delete state.stepContentions[step.name];
    return stepFailed(scope, step, error, args, { compensate: false });
  }
  const delayMs = Math.max(1, Math.min(error.retryAfterMs, 5_000));
  scope.trace({ type: 'retry', step: step.name, delayMs, detail: error.message });
  span.event(ReactorTraceEvents.SNOOZE, {
    [ReactorTraceAttributes.RETRY_DELAY_MS]: delayMs,
    [ReactorTraceAttributes.ERROR_MESSAGE]: error.message,
  });
  await scope.emitStep(step, { type: 'step.snooze', key: error.key, code: error.code, delayMs, snoozes: waited });
  if (env.enqueueResume) {
    state.retryAt = Object.assign({}, state.retryAt, { [step.name]: env.clock.now() + delayMs });
    return { kind: 'retry', step, delayMs };
  }
  await env.clock.sleep(delayMs);
  return settle(scope, step, span);
}

/** Invoke the step's kind under its retry policy. */
async function attempts(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  shownArgs: Record<string, unknown>,
  span: TraceSpan,
): Promise<StepResult> {
  const { def, state, env } = scope;
  const kind = stepKindOf(step);
  for (;;) {
    const adopting = kind.adopting?.(scope, step) ?? false;
    const attempt = (state.attempts[step.name] ?? 0) + (adopting ? 0 : 1);
    state.attempts[step.name] = attempt;
    scope.trace(
      adopting
        ? { type: 'run', step: step.name, attempt, detail: kind.adoptingDetail ?? 'adopting the map results' }
        : attempt === 1
          ? { type: 'run', step: step.name, attempt, arguments: shownArgs }
          : // A retry runs with the arguments the first attempt's entry shows.
            { type: 'run', step: step.name, attempt },
    );
    // The attempt's own signal (see RunScope.withSignal), opened and closed here: no frame around it.
    const open = scope.openStepSignal(step, 'run');
    let outcome: StepOutcome<unknown> | Suspended;
    let abortedBy: StepAbortedError | undefined;
    try {
      outcome = await kind.invoke(scope, step, args, attempt);
      abortedBy = open?.reason;
    } catch (error) {
      // A nested execution (a composed child, an inline map's element) was told to stop.
      if (error instanceof ExecutionStopped) return { kind: 'aborted', cause: error.stopCause, step };
      throw error;
    } finally {
      scope.closeStepSignal(step, open);
    }
    if (abortedBy && outcome instanceof Failure) {
      // The step stopped because of its signal: never retried.
      if (abortedBy.abortCause !== 'cancel') return { kind: 'aborted', cause: abortedBy.abortCause, step };
      const failed = stepFailed(scope, step, outcome.error, args, {
        compensate: !(outcome instanceof NestedFailure) || outcome.compensate,
        attempts: attempt,
        retryable: false,
      });
      // Only the top-level run cancels; inside a composed child the step fails, and the child
      // rolls itself back as a failing child does (its parent's step is aborted too, and cancels).
      return scope.root ? { kind: 'aborted', cause: 'cancel', step, reason: abortedBy, failed } : failed;
    }

    if ((outcome instanceof Success || outcome instanceof Skipped) && step.output) {
      const fieldErrors = await validateContract(step.output, outcome.value);
      if (Object.keys(fieldErrors).length > 0) {
        outcome = new Failure(
          new InputValidationError(
            `Reactor '${def.name}' step '${step.name}': output validation failed (${step.output.name}): ${describeFieldErrors(fieldErrors)}`,
            fieldErrors,
            def.name,
            step.name,
          ),
          { retryable: false },
        );
      }
    }

    if (outcome instanceof Suspended) {
      return outcome.retryInMs === undefined
        ? { kind: 'wait', step, mode: outcome.mode }
        : { kind: 'retry', step, delayMs: outcome.retryInMs };
    }
    if (outcome instanceof Success) return { kind: 'success', step, value: outcome.value, args };
    if (outcome instanceof Skipped) return { kind: 'skipped', step, value: outcome.value, args };
    if (outcome instanceof Halt) return { kind: 'halt', step, reason: outcome.reason, details: outcome.details };

    if (outcome instanceof NestedFailure) return nestedFailed(scope, step, args, outcome, attempt);

    if (outcome.retryable && attempt < step.retries.maxAttempts) {
      const delayMs = backoffDelay(step.retries, attempt);
      const message = describeError(outcome.error).message;
      scope.trace({ type: 'retry', step: step.name, attempt, delayMs, detail: message });
      span.event(ReactorTraceEvents.RETRY, {
        [ReactorTraceAttributes.ATTEMPT]: attempt,
        [ReactorTraceAttributes.RETRY_DELAY_MS]: delayMs,
        [ReactorTraceAttributes.ERROR_MESSAGE]: message,
      });
      await scope.emitStep(step, { type: 'step.retry', attempt, delayMs, error: message });
      if (env.mode === 'worker' && env.enqueueResume) {
        state.retryAt = Object.assign({}, state.retryAt, { [step.name]: env.clock.now() + delayMs });
        return { kind: 'retry', step, delayMs };
      }
      await env.clock.sleep(delayMs);
      continue;
    }
    return stepFailed(scope, step, outcome.error, args, {
      compensate: true,
      attempts: attempt,
      retryable: outcome.retryable,
    });
  }
}

/**
 * A step with an undo keeps its arguments in its undo entry: when those would not fit in the run's
 * record, the step fails before it runs (nothing to take back), instead of after.
 */
function argumentsOverBudget(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  keepsArguments: boolean,
): ContextTooLargeError | undefined {
  const budget = scope.env.recordBudget;
  if (!budget || !keepsArguments || scope.state.attempts[step.name]) return undefined;
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(args) ?? '');
  } catch {
    return undefined; // not storable at all: the checkpoint says so, naming the value
  }
  const total = budget.used() + bytes;
  return total > budget.limit ? new ContextTooLargeError(scope.state.runId, total, budget.limit) : undefined;
}

/**
 * Record that a compose or map step failed because its nested work failed, as the reference
 * reports it (and a trace entry with the inner error's message): this
 * reactor and this step, this run's inputs and this step's arguments (redacted by this reactor's
 * rules, so a redacted input stays redacted when it was passed on), and the nested failure as the
 * {@link RunFailure.cause}. The original error's class, message, field errors and the nested
 * rollback failures are kept.
 */
function nestedFailed(
  scope: RunScope,
  step: StepDefinition,
  args: Record<string, unknown>,
  outcome: NestedFailure,
  attempts: number,
): StepFailed {
  const nested = outcome.failure;
  const what =
    step.handler.kind === 'map' ? `map '${step.name}' element ${outcome.elementIndex}` : `step '${step.name}'`;
  const failure = runFailure({
    message: `Reactor '${scope.def.name}' ${what}: ${nested.message}`,
    code: nested.code,
    reactorName: scope.def.name,
    stepName: step.name,
    exceptionClass: nested.exceptionClass,
    errorMessage: nested.errorMessage,
    retryable: false,
    attempts,
    inputs: redactInputs(scope.def, scope.state.inputs, scope.state.redactedInputs),
    stepArguments: redactArgs(step, args, scope.state.redactedInputs),
    fieldErrors: nested.fieldErrors,
    rollbackFailures: [...nested.rollbackFailures],
    cause: Object.assign(
      { reactorName: nested.reactorName },
      nested.stepName !== undefined ? { stepName: nested.stepName } : {},
      outcome.elementIndex !== undefined ? { elementIndex: outcome.elementIndex } : {},
      { code: nested.code, message: nested.message, exceptionClass: nested.exceptionClass },
      nested.cause ? { cause: nested.cause } : {},
    ),
  });
  scope.trace({ type: 'fail', step: step.name, attempt: attempts, detail: nested.errorMessage });
  return { kind: 'failure', step, failure, error: outcome.error, args, compensate: outcome.compensate };
}

/** Record that `step` failed with `error`: its failure (inputs and arguments redacted) and a trace entry. */
export function stepFailed(
  scope: RunScope,
  step: StepDefinition,
  error: unknown,
  args: Record<string, unknown>,
  options: { compensate: boolean; exceptionClass?: string; attempts?: number; retryable?: boolean },
): StepFailed {
  const { def, state } = scope;
  const described = describeError(error);
  const attempts = options.attempts ?? state.attempts[step.name] ?? 0;
  const message = described.message;
  const noun = stepKindOf(step).failureNoun;
  const failure = runFailure({
    message:
      noun !== undefined
        ? `Reactor '${def.name}' ${noun} '${step.name}' failed: ${message}`
        : attempts > 0
          ? `Reactor '${def.name}' step '${step.name}' failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${message}`
          : `Reactor '${def.name}' step '${step.name}' failed: ${message}`,
    code: error instanceof ReactorError ? error.code : 'STEP_FAILED',
    reactorName: def.name,
    stepName: step.name,
    exceptionClass: options.exceptionClass ?? described.exceptionClass,
    errorMessage: message,
    retryable: options.retryable ?? described.retryable,
    attempts,
    inputs: redactInputs(def, state.inputs, state.redactedInputs),
    stepArguments: redactArgs(step, args, state.redactedInputs),
    fieldErrors: error instanceof InputValidationError ? error.fieldErrors : undefined,
  });
  scope.trace({ type: 'fail', step: step.name, attempt: attempts || undefined, detail: message });
  return { kind: 'failure', step, failure, error, args, compensate: options.compensate };
}
