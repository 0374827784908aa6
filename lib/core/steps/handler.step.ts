/**
 * Handler steps: a `@Step` class resolved through the StepResolver (the Nest container), or a
 * handler object or inline function used as is. `run` is the body; `compensate` and `undo` are
 * optional, and capabilities follow from which methods exist.
 */
import type { HandlerSpecs } from '../definition/definition';
import type { StepHandler } from '../definition/step';
import { UnexpectedResultError } from '../errors/step.error';
import { errorMessage, type RollbackFailure } from '../model/failure';
import { isThenable } from '../model/thenable';
import { Failure, isStepOutcome } from '../results/step-outcome';
import { isStepSignal } from '../results/step-signal';
import type { RollbackReport, StepKind, StepOf, StepScope } from './step-kind';

type HandlerStepSpec = HandlerSpecs['class' | 'inline'];

function handlerOf(scope: StepScope, step: StepOf<HandlerStepSpec>): StepHandler<never, unknown> {
  const spec = step.handler;
  return spec.kind === 'inline' ? spec.handler : scope.resolve(spec.stepClass);
}

/** The kind of `class` and `inline` steps. */
export const handlerStep: StepKind<HandlerStepSpec> = {
  async invoke(scope, step, args, attempt) {
    try {
      // A step that returns its outcome at once is not awaited (a tick less per step).
      const returned: unknown = handlerOf(scope, step).run(args as never, scope.context(step, attempt));
      const result: unknown = isThenable(returned) ? await returned : returned;
      if (isStepOutcome(result)) return result;
      return new Failure(new UnexpectedResultError(scope.def.name, step.name, describeValue(result)), {
        retryable: false,
      });
    } catch (error) {
      if (isStepSignal(error)) return error.outcome;
      return new Failure(error);
    }
  },

  async compensate(scope, step, error, args) {
    const handler = handlerOf(scope, step);
    if (!handler.compensate) return { failures: [], detail: 'no compensate defined' };
    return report(scope, step, 'compensate', () => handler.compensate!(error, args as never, scope.context(step)));
  },

  async undo(scope, step, entry) {
    const handler = handlerOf(scope, step);
    if (!handler.undo) return { failures: [], detail: 'no undo defined' };
    return report(scope, step, 'undo', () => handler.undo!(entry.result, entry.args as never, scope.context(step)));
  },

  hasUndoWork(scope, step) {
    return typeof handlerOf(scope, step).undo === 'function';
  },
};

/** Run an undo or compensate; a throw or a returned Failure is a problem, anything else is fine. */
async function report(
  scope: StepScope,
  step: StepOf<HandlerStepSpec>,
  kind: RollbackFailure['kind'],
  fn: () => unknown,
): Promise<RollbackReport> {
  const problem = await callRollback(fn);
  if (!problem) return { failures: [] };
  return {
    failures: [
      { step: step.name, kind, reason: problem.reason, message: problem.message, reactorName: scope.def.name },
    ],
    detail: problem.message,
  };
}

async function callRollback(
  fn: () => unknown,
): Promise<{ reason: 'raised' | 'returnedFailure'; message: string } | undefined> {
  try {
    const result = await fn();
    if (result instanceof Failure) return { reason: 'returnedFailure', message: errorMessage(result.error) };
    return undefined;
  } catch (error) {
    if (isStepSignal(error)) {
      return error.outcome instanceof Failure
        ? { reason: 'returnedFailure', message: errorMessage(error.outcome.error) }
        : undefined;
    }
    return { reason: 'raised', message: errorMessage(error) };
  }
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'object') return `a plain ${Array.isArray(value) ? 'array' : 'object'}`;
  return `a ${typeof value}`;
}
