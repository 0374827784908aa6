import { Observable } from 'rxjs';
import type { RunWatchEvent, RunWatchOptions } from '../core';

/** An SSE message as Nest's `@Sse()` writes it (its `MessageEvent`). */
export interface RunEventMessage {
  /** The event's cursor: the browser sends it back as `Last-Event-ID` when it reconnects. */
  id: string;
  /** The event (its `type` inside), written as JSON. */
  data: RunWatchEvent;
}

/** Something that watches runs: the `ReactorClient` or the `ReactorEngine`. */
export interface RunWatcher {
  watch(runId: string, options?: RunWatchOptions): AsyncIterable<RunWatchEvent>;
}

/**
 * The events of run `runId` as an Observable of SSE messages, for a Nest `@Sse()` route: replayed
 * after `lastEventId` (the `Last-Event-ID` header of a reconnecting `EventSource`), then live;
 * completes after `run.finished`. Unsubscribing (the client left) stops the watch.
 *
 * ```ts
 * @Sse('runs/:runId/events')
 * events(@Param('runId') runId: string, @Headers('last-event-id') last?: string) {
 *   return runEventsSse(this.client, runId, last);
 * }
 * ```
 *
 * The run id and cursor are checked at once (the call throws `INVALID_RUN_ID` or
 * `INVALID_ARGUMENT`); a run that is not found errors the Observable with `RUN_NOT_FOUND`.
 */
export function runEventsSse(watcher: RunWatcher, runId: string, lastEventId?: string): Observable<RunEventMessage> {
  const controller = new AbortController();
  const after = lastEventId === undefined || lastEventId === '' ? undefined : lastEventId;
  const events = watcher.watch(runId, { after, signal: controller.signal });
  return new Observable<RunEventMessage>((subscriber) => {
    void (async () => {
      try {
        for await (const event of events) {
          if (subscriber.closed) break;
          subscriber.next({ id: event.id, data: event });
        }
        subscriber.complete();
      } catch (error) {
        subscriber.error(error);
      }
    })();
    return () => controller.abort();
  });
}
