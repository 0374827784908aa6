/**
 * Sleep steps (`r.sleep`): the run parks until a time and a delayed job wakes it. The first time the
 * run reaches one it computes the wake-up time, records it where a scheduled retry's due time goes
 * (`state.retryAt[step]`), and waits as for a retry: the run is saved `running` with a hand-off,
 * its lease released, a resume job delayed until then. That record is what makes the sleep
 * durable: the run index sorts the run at that time, so a sweep looks at it only once it is due
 * (and recovers it if the job was lost), and a resume delivered early is delayed again. Re-entered
 * when due, the step completes with `{ sleptUntil }`. Nothing to undo or compensate.
 *
 * A sleep longer than half the record's retention (`contextTtlMs`) parks in hops: the due time is
 * at most half the retention away, and the run re-entered then parks again (one save, one job),
 * so its record never expires while it sleeps. The wake-up time itself is kept in the `pause`
 * trace entry (its time plus `delayMs`).
 */
import '../definition/sleep-spec';
import type { HandlerSpecs, ReactorDefinition } from '../definition/definition';
import { durationProblem, wakeTimeOf, type SleepResult } from '../definition/sleep-spec';
import { InputValidationError } from '../errors/input-validation.error';
import { ReactorError } from '../errors/reactor.error';
import type { RunState, TraceEntry } from '../model/run-state';
import { Failure, Success } from '../results/step-outcome';
import { Suspended } from '../results/suspension';
import type { StepKind } from './step-kind';

type SleepSpecOf = HandlerSpecs['sleep'];

/** The record retention assumed when the engine does not say (the storages' default `contextTtlMs`). */
const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** The kind of `sleep` steps. */
export const sleepStep: StepKind<SleepSpecOf> = {
  async invoke(scope, step, args) {
    const state = scope.state;
    const now = scope.now();
    // Reached before (parked, or its run reopened by `retry`): the wake-up time it recorded then.
    let wakeAt = recordedWakeAt(state, step.name) ?? state.retryAt?.[step.name];
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
      const at = latestTimeProblem(by === 'ms' ? (durationProblem(raw) ?? now + (raw as number)) : wakeTimeOf(raw), by);
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
      // The wake-up time is recorded in the trace entry (its time plus `delayMs`), for good.
      const entry: Omit<TraceEntry, 'at'> = {
        type: 'pause',
        step: step.name,
        detail: `sleeping until ${new Date(wakeAt).toISOString()}`,
      };
      scope.trace(entry);
      entry.delayMs = wakeAt - (entry as TraceEntry).at;
    }
    if (wakeAt <= now) return new Success<SleepResult>({ sleptUntil: wakeAt });
    // Parked at most half the record's retention at a time: each hop writes the run again, so a
    // sleep longer than the retention (`contextTtlMs`) never outlives its record.
    const hopMs = Math.max(1_000, Math.floor((scope.recordRetentionMs ?? DEFAULT_RETENTION_MS) / 2));
    const next = Math.min(wakeAt, now + hopMs);
    state.retryAt = Object.assign({}, state.retryAt, { [step.name]: next });
    return new Suspended('map', next - now);
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
    const due = state.retryAt?.[name];
    return due === undefined ? undefined : { step: name, wakeAt: recordedWakeAt(state, name) ?? due };
  }
  const child = step?.handler.kind === 'compose' ? state.children[name] : undefined;
  const inner = child ? sleepingStep(child, definitionOf, depth + 1) : undefined;
  return inner ? { step: `${name}.${inner.step}`, wakeAt: inner.wakeAt } : undefined;
}

/** The wake-up time sleep `step` recorded when the run reached it (its latest `pause` trace entry). */
function recordedWakeAt(state: RunState, step: string): number | undefined {
  for (let i = state.trace.length - 1; i >= 0; i--) {
    const entry = state.trace[i];
    if (entry.step === step && entry.type === 'pause' && entry.delayMs !== undefined) return entry.at + entry.delayMs;
  }
  return undefined;
}

/** The latest time a Date can hold (ms since the epoch): a wake-up time after it cannot be shown or stored. */
const LATEST_TIME_MS = 8.64e15;

/** `at`, or the problem with it when it lies past the latest time a Date can hold. */
function latestTimeProblem(at: number | string, by: 'ms' | 'until'): number | string {
  if (typeof at === 'string' || at <= LATEST_TIME_MS) return at;
  return by === 'ms'
    ? `ms is too long: the run would wake after the latest time a date can hold (${new Date(LATEST_TIME_MS).toISOString()})`
    : `until must be no later than ${new Date(LATEST_TIME_MS).toISOString()} (got ${at})`;
}
