import type { ReactorEvent, ReactorEventType, ReactorMiddleware } from '../core';

/** Records every event, for asserting event sequences in tests. */
export class RecordingMiddleware implements ReactorMiddleware {
  readonly events: ReactorEvent[] = [];

  onEvent(event: ReactorEvent): void {
    this.events.push(event);
  }

  /**
   * The recorded sequence as compact strings: `reactor.start`, `step.start:charge`, ...
   * Optionally only events of the given types.
   */
  sequence(types?: readonly ReactorEventType[]): string[] {
    return this.events
      .filter((e) => !types || types.includes(e.type))
      .map((e) => ('step' in e ? `${e.type}:${e.step}` : e.type));
  }

  clear(): void {
    this.events.length = 0;
  }
}
