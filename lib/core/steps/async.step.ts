/**
 * Async units (`asyncStep`, `asyncReactor`): a run of their own, dispatched to its own job while
 * this run goes on. The first invocation stores the unit's run (inputs validated here: invalid ones
 * fail this step), records it in this run (`asyncUnits`), checkpoints, then queues it; the step
 * then waits (`Suspended('async')`), which stops only the steps that read it: a step that only waits
 * for it (`waitFor`) starts once it is dispatched, and a run whose only unfinished work is units
 * nobody reads completes without them (they run on in their jobs). Invoked again (the
 * run re-entered: a reader is waiting, or after a recovery), it re-attaches to the unit, never
 * dispatches it again, and settles with what the unit ended with: its value, or its failure (or
 * halt), which readers receive as a `Failure` (`Halt`) object. A unit is never undone with the run.
 */
import type { HandlerSpecs, ReactorDefinition, StepDefinition } from '../definition/definition';
import { AsyncDeadlockError } from '../errors/coordination.error';
import { redactedArgNames } from '../definition/redaction';
import { InputValidationError } from '../errors/input-validation.error';
import { AsyncWaitTimeoutError } from '../errors/interrupt.error';
import { ReactorError } from '../errors/reactor.error';
import { AsyncUnitFailedError } from '../errors/async-unit-failed.error';
import { runFailure } from '../model/failure';
import { childRunId } from '../model/keys';
import { isTerminal, newRunState, type RunState } from '../model/run-state';
import { asyncUnitValue, type AsyncUnitResult } from '../results/async-unit-result';
import { Failure, Success } from '../results/step-outcome';
import { Suspended } from '../results/suspension';
import { applyContractDefaults, describeFieldErrors, validateReactorInputs } from '../validation/validate';
import type { AsyncUnitHost, StepKind, StepScope } from './step-kind';

type AsyncSpec = HandlerSpecs['async'];

export { AsyncUnitFailedError, type AsyncUnitResult };

/** The kind of `asyncStep` and `asyncReactor` steps. */
export const asyncStep: StepKind<AsyncSpec> = {
  async invoke(scope, step, args) {
    const host = scope.units;
    if (!host) {
      return new Failure(
        new ReactorError(
          'CONFIGURATION_INVALID',
          `Reactor '${scope.def.name}': async unit '${step.name}' needs a job dispatcher (the embedded or Redis runtime).`,
        ),
        { retryable: false },
      );
    }
    const units = (scope.state.asyncUnits ??= {});
    const ref = units[step.name];
    if (!ref) {
      const def = scope.definition(step.handler.reactorName);
      const { inputs, errors } = await validateReactorInputs(def.inputs, args);
      if (Object.keys(errors).length > 0) {
        const error = new InputValidationError(
          `Reactor '${def.name}' (async unit '${step.name}' of '${scope.def.name}'): input validation failed: ${describeFieldErrors(errors)}`,
          errors,
          def.name,
        );
        return new Failure(error, { retryable: false });
      }
      // A key the run holds until it finishes would keep the unit from ever starting: refused here,
      // before anything is stored or queued (the step fails, not compensated).
      const deadlock = deadlockOf(scope, host, step, def, inputs);
      if (deadlock) return new Failure(deadlock, { retryable: false });
      const now = scope.now();
      const unit = newRunState(def, childRunId(scope.state.runId, step.name), inputs, now, {
        redactedInputs: redactedArgNames(step, scope.state.redactedInputs).filter((name) => name in inputs),
        encryptInputs: scope.state.encryptInputs,
      });
      unit.asyncParent = {
        runId: scope.owner.runId,
        reactorName: scope.owner.reactorName,
        step: step.name,
        ...(scope.inAsyncUnit ? { unit: true as const } : {}),
      };
      units[step.name] = { runId: unit.runId, reactorName: def.name, dispatchedAt: now };
      // The unit's run is stored, then this run's record of it, then the job is queued: a crash
      // anywhere re-attaches (the sweeper carries a stored unit on), never dispatches twice.
      await host.store(unit);
      await scope.save();
      await host.queue(unit.runId, def.name);
      scope.trace({ type: 'handoff', step: step.name, detail: `async unit ${unit.runId}` });
      return new Suspended('async');
    }
    const unit = await host.load(ref.runId);
    if (!unit) {
      return new Success({
        ok: false,
        failure: runFailure({
          message: `Async unit '${step.name}' (run '${ref.runId}') is no longer in storage (its retention passed).`,
          code: 'RUN_NOT_FOUND',
          reactorName: ref.reactorName,
        }),
      } satisfies AsyncUnitResult);
    }
    if (isTerminal(unit.status)) return new Success(resultOf(unit));
    const waited = scope.now() - ref.dispatchedAt;
    // Only a unit a step still reads can time out: one nobody reads runs on by itself.
    const read = scope.def.steps.some((s) => s.reads.includes(step.name) && !scope.state.completed.includes(s.name));
    if (host.mode === 'worker' && read && waited >= host.parkTimeoutMs) {
      return new Failure(new AsyncWaitTimeoutError(scope.state.runId, step.name, ref.runId, waited), {
        retryable: false,
      });
    }
    return new Suspended('async');
  },

  adopting(scope, step) {
    return scope.state.asyncUnits?.[step.name] !== undefined;
  },

  adoptingDetail: 'reading the async unit',

  offUndoStack: true,

  async undo() {
    return { failures: [], detail: 'an async unit is never undone with its parent' };
  },

  hasUndoWork() {
    return false;
  },

  innerDefinitions(step) {
    return step.handler.inlineUnit ? [step.handler.inlineUnit] : [];
  },

  linkedReactors(step) {
    return [
      {
        reactorName: step.handler.reactorName,
        describe: (name) => `async unit '${name}' runs reactor '${step.handler.reactorName}'`,
        // A unit whose reactor leads back here would wait for itself.
        nested: true,
      },
    ];
  },

  readValue: asyncUnitValue,
};

/** An exclusive key: a lock, or a semaphore (of one slot, when it is what a unit takes). */
interface Exclusive {
  primitive: 'lock' | 'semaphore';
  key: string;
}

/**
 * The lock the unit takes, or the semaphore it takes one slot of out of one (its reactor's, and an
 * async step's own), that the dispatching run holds: its reactor's or a composed parent's lock, or
 * a slot of their semaphore (with a limit of one for the unit, the run's slot leaves it none).
 * Keys that cannot be computed are left to the unit (its own failure) and the run's (its own).
 */
function deadlockOf(
  scope: StepScope,
  host: AsyncUnitHost,
  step: StepDefinition,
  unitDef: ReactorDefinition,
  inputs: Record<string, unknown>,
): AsyncDeadlockError | undefined {
  const wanted: Exclusive[] = [...exclusives(unitDef.coordination, inputs, true)];
  const inner = step.handler.kind === 'async' && step.handler.inlineUnit ? unitDef.steps[0] : undefined;
  if (inner) {
    const args = inner.input ? applyContractDefaults(inner.input, inputs) : inputs;
    wanted.push(...exclusives(inner.coordination, args, true));
  }
  if (wanted.length === 0) return undefined;
  for (const { def, inputs: held } of host.holding) {
    for (const h of exclusives(def.coordination, held, false)) {
      const hit = wanted.find((w) => w.primitive === h.primitive && w.key === h.key);
      if (!hit) continue;
      return new AsyncDeadlockError(
        hit.key,
        hit.primitive,
        { runId: scope.owner.runId, reactorName: scope.def.name, heldBy: def.name },
        { step: step.name, reactorName: unitDef.name },
      );
    }
  }
  return undefined;
}

/** The lock and semaphore of `spec` with their keys (`oneSlot`: only a semaphore of one slot). */
function exclusives(
  spec: { lock?: { key: KeyFn }; semaphore?: { key: KeyFn; limit: number } } | undefined,
  args: Record<string, unknown>,
  oneSlot: boolean,
): Exclusive[] {
  const out: Exclusive[] = [];
  const keyOf = (fn: KeyFn): string | undefined => {
    try {
      const key = fn(args);
      return typeof key === 'string' && key.length > 0 ? key : undefined;
    } catch {
      return undefined;
    }
  };
  const lock = spec?.lock ? keyOf(spec.lock.key) : undefined;
  if (lock !== undefined) out.push({ primitive: 'lock', key: lock });
  const semaphore = spec?.semaphore && (!oneSlot || spec.semaphore.limit === 1) ? keyOf(spec.semaphore.key) : undefined;
  if (semaphore !== undefined) out.push({ primitive: 'semaphore', key: semaphore });
  return out;
}

type KeyFn = (args: Record<string, unknown>) => string;

function resultOf(unit: RunState): AsyncUnitResult {
  switch (unit.status) {
    case 'completed':
      return { ok: true, value: unit.value };
    case 'halted':
      return { ok: false, halt: { reason: unit.halt?.reason ?? 'halted', details: unit.halt?.details } };
    case 'cancelled':
      return {
        ok: false,
        failure: runFailure({
          message: `Async unit run '${unit.runId}' was cancelled: ${unit.cancellation?.reason ?? 'cancelled'}`,
          code: 'STEP_FAILED',
          reactorName: unit.reactorName,
        }),
      };
    default:
      return {
        ok: false,
        failure:
          unit.failure ??
          runFailure({
            message: `Async unit run '${unit.runId}' failed.`,
            code: 'STEP_FAILED',
            reactorName: unit.reactorName,
          }),
      };
  }
}
