import type { RunFailure, RunOutcome } from '../results/run-outcome';

interface EventBase {
  runId: string;
  reactorName: string;
  /** Clock time of the event (ms since epoch). */
  at: number;
}
interface StepEventBase extends EventBase {
  step: string;
}

/**
 * Every lifecycle event, a closed union on `type`. Arguments in events are redacted.
 *
 * Order for a failing run: `step.start`, `step.retry`..., `compensation.start`,
 * `compensation.complete|fail`, `undo.start`, `undo.complete|fail` (newest completed step first)
 * ..., `step.fail`, `reactor.fail`. As in ruby_reactor, rollback events come before the failing
 * step's `step.fail`.
 */
export type ReactorEvent =
  | (EventBase & {
      type: 'reactor.start';
      resumed: boolean;
      /** The run's inputs, redacted (declared `redact: true`, or given from a redacted value). */
      inputs: Record<string, unknown>;
    })
  | (EventBase & { type: 'reactor.complete'; outcome: RunOutcome })
  | (EventBase & { type: 'reactor.fail'; failure: RunFailure })
  | (StepEventBase & { type: 'step.start'; attempt: number; arguments: Record<string, unknown> })
  | (StepEventBase & { type: 'step.complete'; outcome: 'success' | 'skipped' | 'halt' })
  | (StepEventBase & { type: 'step.fail'; error: string; attempts: number })
  | (StepEventBase & { type: 'step.retry'; attempt: number; delayMs: number; error: string })
  /**
   * The step's own lock or semaphore (or a composed child's coordination) is held elsewhere: the
   * step did not start, spends no attempt, and is tried again in `delayMs` (ruby_reactor's
   * `snooze_step`). Never followed by `step.fail` unless the snoozes run out
   * (`lockSnoozeMaxAttempts`).
   */
  | (StepEventBase & {
      type: 'step.snooze';
      /** The contended coordination key. */
      key: string;
      /** `LOCK_CONTENDED`, `SEMAPHORE_FULL`, `RATE_LIMITED` or `ORDER_WAIT`. */
      code: string;
      delayMs: number;
      /** How many times in a row this step has snoozed, this one included. */
      snoozes: number;
    })
  | (StepEventBase & { type: 'compensation.start' })
  | (StepEventBase & { type: 'compensation.complete' })
  | (StepEventBase & { type: 'compensation.fail'; error: string })
  | (StepEventBase & { type: 'undo.start' })
  | (StepEventBase & { type: 'undo.complete' })
  | (StepEventBase & { type: 'undo.fail'; error: string })
  /**
   * This process found the run's lease lost (it expired, or another process took the run over) and
   * stopped executing the run, writing nothing more: the new holder carries it on. Also for a map
   * element's lease (`runId` is then the element's). Delivered to the engine's middleware (the
   * module's `middleware` and `@OnReactorEvent` listeners), not to a reactor's own.
   */
  | (EventBase & { type: 'lease.lost' });

/** The `type` of a {@link ReactorEvent}. */
export type ReactorEventType = ReactorEvent['type'];

/**
 * An observer of run lifecycle events. Return values are ignored; a throw (or rejected promise) is
 * logged and swallowed, so a middleware can never break a run.
 */
export interface ReactorMiddleware {
  onEvent(event: ReactorEvent): void | Promise<void>;
}
