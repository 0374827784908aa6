/**
 * Sleep steps (`r.sleep`): the run parks until a time and a delayed job wakes it. The first time the
 * run reaches one it computes the wake-up time, records it where a scheduled retry's due time goes
 * (`state.retryAt[step]`), and waits as for a retry: the run is saved `running` with a hand-off,
 * its lease released, a resume job delayed until then. That record is what makes the sleep
 * durable: the run index sorts the run at that time, so a sweep looks at it only once it is due
 * (and recovers it if the job was lost), and a resume delivered early is delayed again. Re-entered
 * when due, the step completes with `{ sleptUntil }`. Nothing to undo or compensate.
 */
import '../definition/sleep-spec';
import type { HandlerSpecs, ReactorDefinition } from '../definition/definition';
import { durationProblem, wakeTimeOf, type SleepResult } from '../definition/sleep-spec';
import { InputValidationError } from '../errors/input-validation.error';
import { ReactorError } from '../errors/reactor.error';
import type { RunState } from '../model/run-state';
import { Failure, Success } from '../results/step-outcome';
import { Suspended } from '../results/suspension';
import type { StepKind } from './step-kind';

type SleepSpecOf = HandlerSpecs['sleep'];

/** The kind of `sleep` steps. */
export const sleepStep: StepKind<SleepSpecOf> = {
  async invoke(scope, step, args) {
    const state = scope.state;
    const now = scope.now();
    let wakeAt = state.retryAt?.[step.name];
    if (wakeAt === undefined) {
      if (scope.inElement) {
        // A map element's run is never parked on its own: its sleep would hold the element's worker.
        return new Failure(
          new ReactorError(
            'CONFIGURATION_INVALID',
            `Reactor '${scope.def.name}' sleep '${step.name}': a sleep cannot run in a map element (an element is not parked on its own); sleep before or after the map.`,
          ),
          { retryable: false },
        );
      }
      const by = step.handler.by;
      const raw = args[by];
      const at = by === 'ms' ? (durationProblem(raw) ?? now + (raw as number)) : wakeTimeOf(raw);
      if (typeof at === 'string') {
        return new Failure(
          new InputValidationError(
            `Reactor '${scope.def.name}' sleep '${step.name}': ${at}.`,
            { [by]: [at] },
            scope.def.name,
            step.name,
          ),
          { retryable: false },
        );
      }
      wakeAt = Math.ceil(at);
      if (wakeAt <= now) return new Success<SleepResult>({ sleptUntil: wakeAt });
      state.retryAt = { ...state.retryAt, [step.name]: wakeAt };
      scope.trace({ type: 'pause', step: step.name, detail: `sleeping until ${new Date(wakeAt).toISOString()}` });
    }
    // Woken early (a resume of the run for another reason): the step waits again for its time.
    if (wakeAt > now) return new Suspended('map', wakeAt - now);
    return new Success<SleepResult>({ sleptUntil: wakeAt });
  },

  adopting(scope, step) {
    return scope.state.retryAt?.[step.name] !== undefined;
  },

  adoptingDetail: 'waking from sleep',
  failureNoun: 'sleep',
  offUndoStack: true,

  async undo() {
    return { failures: [], detail: 'a sleep has nothing to undo' };
  },

  hasUndoWork() {
    return false;
  },
};

/** Where a run sleeps, as views and outcomes show it. */
export interface SleepingStep {
  /** The sleep step's path from the top-level run: `wait`, or `child.wait` inside compose step `child`. */
  step: string;
  /** When it wakes (epoch milliseconds): its resume job is due then. */
  wakeAt: number;
}

/**
 * The sleep `state` is parked at, if it is parked at one (a composed child's included), read from
 * its hand-off and the wake-up time it recorded. `definitionOf` names the reactors' definitions.
 */
export function sleepingStep(
  state: RunState,
  definitionOf: (name: string) => ReactorDefinition | undefined,
  depth = 0,
): SleepingStep | undefined {
  const name = state.handoff?.mode === 'all' ? state.handoff.step : undefined;
  if (state.status !== 'running' || name === undefined || depth > 32) return undefined;
  const step = definitionOf(state.reactorName)?.stepsByName.get(name);
  if (step?.handler.kind === 'sleep') {
    const wakeAt = state.retryAt?.[name];
    return wakeAt === undefined ? undefined : { step: name, wakeAt };
  }
  const child = step?.handler.kind === 'compose' ? state.children[name] : undefined;
  const inner = child ? sleepingStep(child, definitionOf, depth + 1) : undefined;
  return inner ? { step: `${name}.${inner.step}`, wakeAt: inner.wakeAt } : undefined;
}
