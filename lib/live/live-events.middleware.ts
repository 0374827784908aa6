import type { EngineLogger, ReactorEvent, ReactorMiddleware, RunEventBus, RunLiveEvent } from '../core';

/**
 * The live event of a lifecycle event, or undefined for those a run's watchers are not told
 * (`step.snooze`, `compensation.start`, `undo.start`) and for the run's end (`reactor.complete`,
 * `reactor.fail`): the engine logs every pause and end from the stored run when it settles
 * (`useRunEvents` with `logSettles`), ends that no lifecycle event reports (a cancel elsewhere, a
 * run marked failed) included. Carries nothing of inputs, arguments or results.
 */
export function toLiveEvent(event: ReactorEvent): RunLiveEvent | undefined {
  // The event's own fields assigned to its base, not spread after it (DD-speed22-11): two per step.
  const base = <const X extends object>(fields: X) =>
    Object.assign({ runId: event.runId, reactorName: event.reactorName, at: event.at }, fields);
  switch (event.type) {
    case 'reactor.start':
      return base({ type: event.resumed ? 'run.resumed' : 'run.started' });
    case 'step.start':
      return base({ type: 'step.started', step: event.step, attempt: event.attempt });
    case 'step.complete':
      return base({ type: 'step.completed', step: event.step, outcome: event.outcome });
    case 'step.fail':
      return base({ type: 'step.failed', step: event.step, error: event.error, attempts: event.attempts });
    case 'step.retry':
      return base({
        type: 'step.retrying',
        step: event.step,
        attempt: event.attempt,
        delayMs: event.delayMs,
        error: event.error,
      });
    case 'compensation.complete':
      return base({ type: 'step.compensated', step: event.step });
    case 'compensation.fail':
      return base({ type: 'step.compensated', step: event.step, error: event.error });
    case 'undo.complete':
      return base({ type: 'step.undone', step: event.step });
    case 'undo.fail':
      return base({ type: 'step.undone', step: event.step, error: event.error });
    default:
      return undefined;
  }
}

/**
 * Writes each run's lifecycle events to its log on the run event bus, for `client.watch` (the
 * module adds it with `liveEvents: true`). It does not hold the run up: the append is sent and not
 * awaited (appends of one process keep their order on its connection); a failed one is logged
 * once per outage and dropped (watchers still get `run.paused` and `run.finished` from storage).
 */
export class LiveEventsMiddleware implements ReactorMiddleware {
  private failing = false;

  constructor(
    private readonly bus: RunEventBus,
    private readonly logger?: Pick<EngineLogger, 'warn'>,
  ) {}

  onEvent(event: ReactorEvent): void {
    const live = toLiveEvent(event);
    if (!live) return;
    this.bus.append(live).then(
      () => (this.failing = false),
      (error: unknown) => {
        if (this.failing) return;
        this.failing = true;
        this.logger?.warn(
          `nest-reactor live events: appending to the log of run '${live.runId}' failed (${(error as Error)?.message ?? String(error)}); events are dropped until an append succeeds.`,
        );
      },
    );
  }
}
