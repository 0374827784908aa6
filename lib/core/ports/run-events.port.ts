/**
 * Live run events (issue 25): a per-run log of what happened to a run, which a late subscriber
 * replays from a cursor, and wake-ups for those who watch or wait for the run.
 *
 * The log is bounded (the newest `maxLen` entries of a run, about) and kept for the run's retention
 * after its last entry. Wake-ups are best effort: a subscriber that misses one (a reconnect) finds
 * the entries in the log, and waiters fall back to reading storage now and then.
 */

/** Fields of every live event. */
interface LiveEventBase {
  /** The run the event is about (a composed child is watched by its own id, `<root>/<step>`). */
  runId: string;
  reactorName: string;
  /** Clock time of the event (ms since epoch). */
  at: number;
}
interface LiveStepEventBase extends LiveEventBase {
  step: string;
}

/**
 * What happened to a run, as `client.watch` yields it: a closed union on `type`. Nothing of the
 * run's inputs, arguments or results is in it (a failure's message is, as `client.get` shows it).
 */
export type RunLiveEvent =
  /** The run began executing (`run.started`), or went on after a pause, a sleep or a hand-off (`run.resumed`). */
  | (LiveEventBase & { type: 'run.started' | 'run.resumed' })
  | (LiveStepEventBase & { type: 'step.started'; attempt: number })
  | (LiveStepEventBase & { type: 'step.completed'; outcome: 'success' | 'skipped' | 'halt' })
  | (LiveStepEventBase & { type: 'step.failed'; error: string; attempts: number })
  | (LiveStepEventBase & { type: 'step.retrying'; attempt: number; delayMs: number; error: string })
  /** A completed step was rolled back (`compensated` by its failing run, `undone` by a later one); `error` when that failed. */
  | (LiveStepEventBase & { type: 'step.compensated' | 'step.undone'; error?: string })
  /** The run waits at these interrupts (their paths); `at`: when it reached the last of them. */
  | (LiveEventBase & { type: 'run.paused'; interrupts: string[] })
  /** The run ended; the last event of its log. `error`: the failure's message. */
  | (LiveEventBase & {
      type: 'run.finished';
      status: 'completed' | 'failed' | 'halted' | 'cancelled';
      error?: string;
    });

/** The `type` of a {@link RunLiveEvent}. */
export type RunLiveEventType = RunLiveEvent['type'];

/** A {@link RunLiveEvent} with its place in the run's log. */
export type RunWatchEvent = RunLiveEvent & {
  /**
   * The entry's cursor: pass it as `after` to replay only what came after it (an SSE `id`). An
   * event made from the stored run (no log entry: live events off, or a run that ended without
   * one) carries the cursor of the last entry before it, or `'0'`.
   */
  id: string;
};

/** Options of `client.watch` (and `ReactorEngine.watch`). */
export interface RunWatchOptions {
  /**
   * Replay only what came after this cursor (the `id` of an event yielded before: an SSE
   * `Last-Event-ID`). Without it, every event the run's log keeps is replayed first.
   */
  after?: string;
  /** Stop watching when it aborts (the iterator then ends). */
  signal?: AbortSignal;
  /** How often storage is read without a wake-up. @default 1000 with a run event bus, else 100 */
  pollMs?: number;
}

/** One entry of a run's log. */
export interface RunEventEntry {
  /** Opaque, increasing within one run's log. */
  id: string;
  event: RunLiveEvent;
}

/** What a subscriber is told: the `type` of the event appended, or `settled` (see {@link RunEventBus.signal}). */
export type RunWakeUp = RunLiveEventType | 'settled';

/**
 * The port of live run events. Adapters: `MemoryRunEventBus` (one process) and `RedisRunEventBus`
 * (a Redis Stream per run, pub/sub wake-ups).
 */
export interface RunEventBus {
  /** Append `event` to the log of `event.runId` and wake its subscribers. Resolves to the entry's id. */
  append(event: RunLiveEvent): Promise<string>;
  /**
   * Wake the subscribers of run `runId` with `settled`, logging nothing: the run was stored
   * terminal or paused (waiters read storage again).
   */
  signal(runId: string): Promise<void>;
  /** The entries of run `runId` after cursor `after` (all kept ones without it), oldest first, at most `limit` (default 100). */
  read(runId: string, options?: { after?: string; limit?: number }): Promise<RunEventEntry[]>;
  /**
   * Call `listener` on every wake-up of run `runId` until the returned function is called.
   * Resolves once the subscription is in place: an append or signal after that reaches it.
   */
  subscribe(runId: string, listener: (wakeUp: RunWakeUp) => void): Promise<() => void>;
  /** Release what the bus holds (its subscriber connection). Idempotent. */
  close?(): Promise<void>;
}
