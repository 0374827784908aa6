/**
 * Interrupt steps: the run pauses here until the outside world answers. The first time the run
 * reaches one it records it (binding its correlation id, taking a resume that arrived early) and
 * waits; the engine copies the winning claim into the record (`applied`) before it runs the step
 * again, and the step settles with it: a payload is its value, the last invalid payload fails it,
 * a timeout fails it or runs `onTimeout`. Nothing to undo or compensate.
 */
import type { HandlerSpecs } from '../definition/definition';
import type { InterruptContext } from '../definition/interrupt-spec';
import {
  CorrelationIdTakenError,
  InterruptNotSupportedError,
  InterruptTimedOutError,
  PayloadValidationError,
} from '../errors/interrupt.error';
import { ReactorError } from '../errors/reactor.error';
import { interruptPath, type InterruptRecord } from '../model/interrupt';
import { Failure, isStepOutcome, Success, type StepOutcome } from '../results/step-outcome';
import { isStepSignal } from '../results/step-signal';
import { describeFieldErrors } from '../validation/validate';
import { Suspended } from '../results/suspension';
import type { StepKind, StepOf, StepScope } from './step-kind';

type InterruptSpecOf = HandlerSpecs['interrupt'];

/** Longest correlation id accepted. */
const MAX_CORRELATION_ID = 512;

/** The kind of `interrupt` steps. */
export const interruptStep: StepKind<InterruptSpecOf> = {
  async invoke(scope, step, args) {
    if (scope.inElement || scope.inAsyncUnit) {
      // A map element, or an async unit's run: neither can be resumed by id.
      return new Failure(new InterruptNotSupportedError(scope.def.name, step.name), { retryable: false });
    }
    const host = scope.interrupts;
    if (!host) {
      return new Failure(
        new ReactorError(
          'CONFIGURATION_INVALID',
          `Reactor '${scope.def.name}': interrupt '${step.name}' needs an interrupt store (the engine's \`interrupts\` option).`,
        ),
        { retryable: false },
      );
    }
    const records = (scope.state.interrupts ??= {});
    let record = records[step.name];
    if (!record) {
      const reached = await reach(scope, step, args);
      if (reached instanceof Failure) return reached;
      record = records[step.name] = reached;
    } else if (!record.applied) {
      // Re-entered while still waiting (another interrupt was answered): a resume may have come early.
      const early = await host.take(record.path);
      if (early) record.applied = early;
    }
    if (!record.applied) return new Suspended('interrupt');
    return settle(scope, step, args, record);
  },

  adopting(scope, step) {
    return scope.state.interrupts?.[step.name] !== undefined;
  },

  adoptingDetail: 'resuming at the interrupt',
  failureNoun: 'interrupt',

  async undo() {
    return { failures: [], detail: 'an interrupt has nothing to undo' };
  },

  hasUndoWork() {
    return false;
  },
};

/** The run reaches the interrupt: its record, with a resume that came early applied. */
async function reach(
  scope: StepScope,
  step: StepOf<InterruptSpecOf>,
  args: Record<string, unknown>,
): Promise<InterruptRecord | Failure> {
  const spec = step.handler.interrupt;
  const host = scope.interrupts!;
  const path = interruptPath(scope.state.runId, step.name);
  const now = scope.now();
  const record: InterruptRecord = { path, pausedAt: now };
  if (spec.timeoutMs !== undefined) record.timeoutAt = now + spec.timeoutMs;
  if (spec.correlationId) {
    let id: unknown;
    try {
      id = spec.correlationId(contextOf(scope, step, args));
    } catch (error) {
      return new Failure(error, { retryable: false });
    }
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_CORRELATION_ID) {
      return new Failure(
        new ReactorError(
          'INPUT_VALIDATION',
          `Reactor '${scope.def.name}' interrupt '${step.name}': correlationId must return a non-empty string of at most ${MAX_CORRELATION_ID} characters (got ${typeof id === 'string' ? `${id.length} characters` : typeof id}).`,
        ),
        { retryable: false },
      );
    }
    const bound = await host.bind(id, path, record.timeoutAt);
    if (!bound.ok) {
      return new Failure(new CorrelationIdTakenError(scope.owner.reactorName, id, bound.boundTo), {
        retryable: false,
      });
    }
    record.correlationId = id;
    if (bound.early) record.applied = bound.early;
  }
  // Listed before it looks for an early claim: an event emitted from now on finds the run.
  if (spec.event !== undefined && !spec.correlationId) await host.watch(spec.event, path);
  record.applied ??= await host.take(path);
  return record;
}

/** Settle the interrupt with the claim applied to it. */
async function settle(
  scope: StepScope,
  step: StepOf<InterruptSpecOf>,
  args: Record<string, unknown>,
  record: InterruptRecord,
): Promise<StepOutcome<unknown>> {
  const claim = record.applied!;
  delete record.applied;
  const { event, correlationId } = step.handler.interrupt;
  if (event !== undefined && !correlationId) {
    // Best effort: an entry left behind is dropped by the next emit of the event that finds it settled.
    await scope.interrupts?.unwatch(event, record.path).catch(() => undefined);
  }
  scope.trace({ type: 'resume', step: step.name, detail: claim.kind });
  switch (claim.kind) {
    case 'payload':
      return new Success(claim.payload);
    case 'rejected':
      return new Failure(
        new PayloadValidationError(
          `${claim.attempts} payload${claim.attempts === 1 ? ' was' : 's were'} tried and ${claim.attempts === 1 ? 'it was' : 'each was'} invalid ` +
            `(maxAttempts ${step.handler.interrupt.maxAttempts || claim.attempts})${claim.attempts === 1 ? ':' : '; the last one:'} ${describeFieldErrors(claim.fieldErrors)}`,
          claim.fieldErrors,
          scope.def.name,
          step.name,
          claim.attempts,
          0,
          scope.owner.runId,
        ),
        { retryable: false },
      );
    case 'timeout': {
      const onTimeout = step.handler.interrupt.onTimeout;
      if (!onTimeout) {
        return new Failure(new InterruptTimedOutError(scope.owner.runId, record.path, record.timeoutAt ?? claim.at), {
          retryable: false,
        });
      }
      try {
        const outcome: unknown = await onTimeout(contextOf(scope, step, args));
        if (isStepOutcome(outcome)) return outcome;
        return new Failure(new Error(`onTimeout of interrupt '${step.name}' must return a step outcome`), {
          retryable: false,
        });
      } catch (error) {
        if (isStepSignal(error)) return error.outcome;
        return new Failure(error, { retryable: false });
      }
    }
  }
}

function contextOf(scope: StepScope, step: StepOf<InterruptSpecOf>, args: Record<string, unknown>): InterruptContext {
  const { inputs, results, completed } = scope.state;
  const finished: Record<string, unknown> = {};
  for (const name of completed) finished[name] = results[name];
  return Object.assign(scope.context(step), { args, inputs: { ...inputs }, results: finished });
}
