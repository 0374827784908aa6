/**
 * Compose steps: a child reactor run inside this step. Its state lives in the parent's `children`
 * and saves through the parent; a failed child has rolled itself back, so the step has nothing to
 * compensate; undoing the step replays the child's own undos.
 */
import type { HandlerSpecs } from '../definition/definition';
import { InputValidationError } from '../errors/input-validation.error';
import { CoordinationContendedError } from '../errors/coordination.error';
import { InternalError } from '../errors/internal.error';
import { childRunId } from '../model/keys';
import { newRunState } from '../model/run-state';
import { redactedArgNames } from '../definition/redaction';
import { NestedFailure } from '../results/nested-failure';
import { Failure, Halt, Success } from '../results/step-outcome';
import { Suspended } from '../results/suspension';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import type { StepKind } from './step-kind';

type ComposeSpec = HandlerSpecs['compose'];

/** The kind of `compose` steps. */
export const composeStep: StepKind<ComposeSpec> = {
  async invoke(scope, step, args) {
    const childDef = scope.definition(step.handler.reactorName);
    let childState = scope.state.children[step.name];
    if (!childState || childState.status === 'failed' || childState.status === 'cancelled') {
      const { inputs, errors } = await validateReactorInputs(childDef.inputs, args);
      if (Object.keys(errors).length > 0) {
        const error = new InputValidationError(
          `Reactor '${childDef.name}' (composed as '${step.name}' in '${scope.def.name}'): input validation failed: ${describeFieldErrors(errors)}`,
          errors,
          childDef.name,
        );
        return new Failure(error, { retryable: false });
      }
      // Redaction follows a value: a child input given from a redacted argument is redacted in the child.
      const redacted = redactedArgNames(step, scope.state.redactedInputs).filter((name) => name in inputs);
      childState = newRunState(childDef, childRunId(scope.state.runId, step.name), inputs, scope.now(), {
        redactedInputs: redacted,
        encryptInputs: scope.state.encryptInputs,
      });
      scope.state.children[step.name] = childState;
    }
    // The child's own coordination (its reactor's lock, semaphore, rate limit, period), held by the
    // top-level run; a contended one waits like a retry (no attempt of the child is spent).
    let held: { leave(state: typeof childState): Promise<void> } | undefined;
    if (childDef.coordination && scope.coordinate) {
      try {
        const taken = await scope.coordinate(childDef, childState);
        if (taken && 'halt' in taken) return new Halt(taken.halt.reason, taken.halt.details);
        held = taken;
      } catch (error) {
        if (!(error instanceof CoordinationContendedError)) throw error;
        return new Suspended('map', Math.max(1, Math.min(error.retryAfterMs, 5_000)));
      }
    }
    let outcome;
    try {
      outcome = await scope.child(childDef, childState, 'through-parent').execute(false);
    } finally {
      await held?.leave(childState);
    }
    switch (outcome.status) {
      case 'completed':
        // The child's value as stored (its async units' records are read when the value is read).
        return new Success(childState.value);
      case 'halted':
        return new Halt(outcome.reason, outcome.details);
      case 'failed':
        // The child already rolled itself back: nothing left to compensate here.
        return new NestedFailure(outcome.failure, false);
      case 'paused':
        // The child waits at an interrupt: the parent pauses with it (resumed by path, `step.approve`).
        return new Suspended('interrupt');
      case 'dispatched': {
        // The child waits for a retry of one of its steps: the parent is resumed when it is due
        // (and records when, so a resume that comes early waits for it).
        const due = childState.retryAt ? Math.max(...Object.values(childState.retryAt)) : undefined;
        if (due !== undefined && childState.handoff?.mode === 'all') {
          scope.state.retryAt = Object.assign({}, scope.state.retryAt, { [step.name]: due });
          return new Suspended('map', Math.max(0, due - scope.now()));
        }
        // The child waits for a fan-out map: the parent waits with it; the map resumes the owner.
        return new Suspended('map');
      }
      default:
        throw new InternalError(
          `Composed reactor '${childDef.name}' ended ${outcome.status}, which compose does not support.`,
        );
    }
  },

  adopting(scope, step) {
    return scope.state.children[step.name]?.status === 'paused';
  },

  adoptingDetail: 'resuming its paused child',

  async compensate(scope, step) {
    // Only a child that has not rolled itself back (one paused at an interrupt) has anything to undo.
    const childState = scope.state.children[step.name];
    if (!childState || childState.status === 'failed' || childState.status === 'cancelled') {
      return { failures: [], detail: childState ? 'the child rolled itself back' : 'no child run' };
    }
    return composeStep.undo(scope, step, { step: step.name, args: {}, result: undefined });
  },

  async undo(scope, step) {
    const childState = scope.state.children[step.name];
    if (!childState) return { failures: [] };
    const failures = await scope
      .child(scope.definition(childState.reactorName), childState, 'through-parent')
      .undoAll();
    childState.status = 'cancelled';
    childState.cancellation = { reason: 'parent rolled back', rollbackFailures: failures };
    return { failures, error: `${failures.length} child rollback failure(s)` };
  },

  hasUndoWork() {
    return true;
  },

  linkedReactors(step) {
    return [
      {
        reactorName: step.handler.reactorName,
        describe: (name) => `compose step '${name}' names reactor '${step.handler.reactorName}'`,
        nested: true,
      },
    ];
  },
};
