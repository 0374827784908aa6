import { InvalidArgumentError } from '../errors/invalid-argument.error';
import { RunNotFoundError, WaitTimeoutError } from '../errors/run-state.error';
import { isTerminal, type RunState } from '../model/run-state';
import { systemClock, type Clock } from '../ports/clock.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import type { RunEventBus, RunLiveEvent, RunWakeUp, RunWatchEvent, RunWatchOptions } from '../ports/run-events.port';
import { ENGINE_DEFAULTS } from './engine-options';

/**
 * How often `wait` and `watch` read storage when a run event bus wakes them: only a fallback, for
 * a wake-up lost on the way (a reconnect) or a run that settled without one.
 */
export const LIVE_FALLBACK_POLL_MS = 1_000;

/** Wake-ups that may mean a run was stored settled (what `wait` reads storage again for). */
const SETTLING = new Set<RunWakeUp>(['settled', 'run.finished', 'run.paused']);
/** A cursor as the adapters hand them out (a sequence number, or a Redis stream id). */
const CURSOR = /^\d{1,20}(-\d{1,20})?$/;

/** One sleeper that a wake-up ends early; a wake-up while it is not sleeping ends its next sleep at once. */
export class Waker {
  private woken = false;
  private resolve?: () => void;

  wake(): void {
    this.woken = true;
    this.resolve?.();
  }

  async sleep(clock: Clock, ms: number): Promise<void> {
    if (!this.woken) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const woken = new Promise<void>((resolve) => (this.resolve = resolve));
      // The real clock's timer is cleared on a wake-up: a long fallback poll keeps nothing alive.
      const slept =
        clock === systemClock ? new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))) : clock.sleep(ms);
      await Promise.race([slept, woken]);
      clearTimeout(timer);
      this.resolve = undefined;
    }
    this.woken = false;
    // NOTE: a test clock's sleep resolves at once; let timers due now (in-process jobs) run before
    // the next poll, so a waiter on a fake clock never starves the work it waits for.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/**
 * Callers waiting for runs to finish, and watchers of runs: woken at once by runs settling in this
 * process, by the run event bus (runs settling elsewhere), else by polling storage.
 */
export class Waiters {
  private readonly waiting = new Map<string, Set<Waker>>();
  /**
   * Whether a paused run has an answer waiting to be applied (a resume deferred to a worker): such
   * a run is not settled yet, so `wait` right after `continue` does not return the stale pause.
   */
  pendingResume?: (state: RunState) => Promise<boolean>;
  /** The run event bus: {@link notify} signals on it, waits and watches wake on it. */
  bus?: RunEventBus;
  /**
   * Whether {@link notify} logs the run's pause or end on the bus (`run.paused`, `run.finished`,
   * read from the stored run): the module's `liveEvents`.
   */
  logSettles = false;

  constructor(
    private readonly storage: ReactorStorage,
    private readonly clock: Clock,
  ) {}

  /**
   * Load the run until it is terminal (or paused; `settled` says otherwise), up to `timeoutMs` on
   * the engine's clock. With a run event bus it subscribes to the run (after a first look, so a
   * run already settled costs one read), reads storage once more, then sleeps until a wake-up
   * (or `pollMs`, default 1 s); without one it polls every `pollMs` (default 100 ms). Runs
   * settling in this process ({@link notify}) wake it at once either way.
   */
  async until(
    runId: string,
    options: { timeoutMs?: number; pollMs?: number; settled?: (state: RunState) => boolean } = {},
  ): Promise<RunState> {
    const settled = options.settled ?? ((state: RunState) => isTerminal(state.status) || state.status === 'paused');
    const pending = async (state: RunState): Promise<boolean> =>
      state.status === 'paused' && options.settled === undefined && ((await this.pendingResume?.(state)) ?? false);
    const timeoutMs = options.timeoutMs ?? ENGINE_DEFAULTS.waitTimeoutMs;
    const deadline = this.clock.now() + timeoutMs;
    const waker = new Waker();
    let unsubscribe: (() => void) | undefined;
    let subscribed = this.bus === undefined;
    const local = this.register(runId, waker);
    try {
      for (;;) {
        const state = await this.storage.load(runId);
        if (!state) throw new RunNotFoundError(runId);
        if (settled(state) && !(await pending(state))) return state;
        if (!subscribed) {
          subscribed = true;
          unsubscribe = await this.subscribe(runId, (wakeUp) => SETTLING.has(wakeUp) && waker.wake());
          // Subscribed: what settles from now on wakes us; look once more for what settled before.
          if (unsubscribe) continue;
        }
        const left = deadline - this.clock.now();
        if (left <= 0) throw new WaitTimeoutError(runId, timeoutMs);
        const pollMs = options.pollMs ?? (unsubscribe ? LIVE_FALLBACK_POLL_MS : ENGINE_DEFAULTS.waitPollMs);
        await waker.sleep(this.clock, Math.min(pollMs, left));
      }
    } finally {
      unsubscribe?.();
      local();
    }
  }

  /**
   * The events of run `runId` as they happen, replayed first from its log (after `options.after`).
   * Ends after `run.finished`, when `options.signal` aborts, or when the consumer stops (`break`).
   * Without live events in the log (not enabled, or no bus), it still yields `run.paused` and
   * `run.finished`, read from storage when the run settles.
   */
  watch(runId: string, options: RunWatchOptions = {}): AsyncIterableIterator<RunWatchEvent> {
    if (options.after !== undefined && (typeof options.after !== 'string' || !CURSOR.test(options.after))) {
      throw new InvalidArgumentError('watch', 'options.after', 'the id of an event a watch yielded', options.after);
    }
    return new RunWatch(this, runId, options);
  }

  /**
   * A run was stored settled (terminal or paused) here: wake its waiters and watchers, here and
   * elsewhere (`announced`: the write that stored it woke those elsewhere, see
   * `ReactorStorage.announcesSettled`).
   */
  notify(runId: string, announced = false): void {
    this.wakeLocal(runId);
    // Best effort: a wake-up lost here is found by the waiters' fallback polling.
    if (!announced) this.bus?.signal(runId).catch(() => undefined);
    if (this.logSettles) void this.logSettled(runId);
  }

  /**
   * Log the pause or end of run `runId` as stored. Every way a run settles in a process calls
   * {@link notify} (an execution's end, a cancel, a run marked failed or broken), so the log has
   * them all; sent after the lifecycle events the execution logged, on the same connection.
   */
  private async logSettled(runId: string): Promise<void> {
    try {
      const state = await this.storage.load(runId);
      if (!state || !this.bus) return;
      if (isTerminal(state.status)) await this.bus.append(finishedEvent(state));
      else if (state.status === 'paused') await this.bus.append(pausedEvent(state));
    } catch {
      // Best effort: watchers read the pause and the end from storage too.
    }
  }

  /** @internal */
  wakeLocal(runId: string): void {
    const set = this.waiting.get(runId);
    if (set) for (const waker of set) waker.wake();
  }

  /** @internal Wake `waker` on this process's wake-ups of `runId` until the returned function is called. */
  register(runId: string, waker: Waker): () => void {
    let set = this.waiting.get(runId);
    if (!set) this.waiting.set(runId, (set = new Set()));
    set.add(waker);
    return () => {
      const current = this.waiting.get(runId);
      if (current?.delete(waker) && current.size === 0) this.waiting.delete(runId);
    };
  }

  /** @internal Subscribe to the bus's wake-ups of `runId`; undefined without a bus or when it refused. */
  async subscribe(runId: string, listener: (wakeUp: RunWakeUp) => void): Promise<(() => void) | undefined> {
    if (!this.bus) return undefined;
    try {
      return await this.bus.subscribe(runId, listener);
    } catch {
      // A bus that cannot subscribe now (a connection down): poll as without one.
      return undefined;
    }
  }

  /** @internal */
  get parts(): { storage: ReactorStorage; clock: Clock; bus?: RunEventBus } {
    return { storage: this.storage, clock: this.clock, bus: this.bus };
  }
}

/** The async iterator of {@link Waiters.watch}. */
class RunWatch implements AsyncIterableIterator<RunWatchEvent> {
  private readonly buffer: RunWatchEvent[] = [];
  private readonly waker = new Waker();
  private cursor: string | undefined;
  private done = false;
  private started = false;
  /** Whether the run has a log (live events are on): its pauses are read from it, not from storage. */
  private logged = false;
  /** The pause last yielded (its interrupts and when it was reached): a pause is yielded once. */
  private pause?: string;
  /** Whether the watch already waited once for the logged end of a run stored terminal. */
  private awaitedEnd = false;
  private unsubscribe?: () => void;
  private unregister?: () => void;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly onAbort = () => void this.return();

  constructor(
    private readonly waiters: Waiters,
    private readonly runId: string,
    private readonly options: RunWatchOptions,
  ) {
    this.cursor = options.after;
    if (options.signal?.aborted) this.done = true;
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<RunWatchEvent> {
    return this;
  }

  next(): Promise<IteratorResult<RunWatchEvent>> {
    // One pull at a time, in call order.
    const pulled = this.queue.then(() => this.pull());
    this.queue = pulled.catch(() => undefined);
    return pulled;
  }

  async return(): Promise<IteratorResult<RunWatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  private close(): void {
    if (this.done && !this.unsubscribe && !this.unregister) return;
    this.done = true;
    this.buffer.length = 0;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.unsubscribe?.();
    this.unregister?.();
    this.unsubscribe = this.unregister = undefined;
    this.waker.wake();
  }

  private async pull(): Promise<IteratorResult<RunWatchEvent>> {
    try {
      for (;;) {
        const event = this.buffer.shift();
        if (event) {
          if (event.type === 'run.finished') this.close();
          return { value: event, done: false };
        }
        if (this.done) return { value: undefined, done: true };
        await this.fill();
        if (this.buffer.length > 0 || this.done) continue;
        const { clock, bus } = this.waiters.parts;
        const pollMs =
          this.options.pollMs ?? (bus && this.unsubscribe ? LIVE_FALLBACK_POLL_MS : ENGINE_DEFAULTS.waitPollMs);
        await this.waker.sleep(clock, pollMs);
      }
    } catch (error) {
      this.close();
      throw error;
    }
  }

  private async fill(): Promise<void> {
    const { storage, bus } = this.waiters.parts;
    if (!this.started) {
      this.started = true;
      this.unregister = this.waiters.register(this.runId, this.waker);
      this.unsubscribe = await this.waiters.subscribe(this.runId, () => this.waker.wake());
      if (this.done) return this.close();
      // Replaying after a cursor: whether the run has a log at all (its pauses are logged then).
      if (this.cursor !== undefined && bus) this.logged = (await bus.read(this.runId, { limit: 1 })).length > 0;
    }
    const entries = bus ? await bus.read(this.runId, { after: this.cursor, limit: 100 }) : [];
    if (this.done) return;
    if (entries.length > 0) {
      this.logged = true;
      this.cursor = entries[entries.length - 1].id;
      for (const { id, event } of entries) {
        if (event.type === 'run.paused' && this.seenPause(event)) continue;
        this.buffer.push({ ...event, id } as RunWatchEvent);
        if (event.type === 'run.finished') break;
      }
      return;
    }
    const state = await storage.load(this.runId);
    if (this.done) return;
    if (!state) {
      // Its record expired (or never was): a watch that saw its events ends; else it was not found.
      if (this.logged) return this.close();
      throw new RunNotFoundError(this.runId);
    }
    const id = this.cursor ?? '0';
    if (isTerminal(state.status)) {
      // A run with a log that just ended: the last lifecycle events and its logged end may still
      // be on their way (they are sent after the final save). Wait for them once (a wake-up, or
      // one poll), then make the end from the record.
      const { clock } = this.waiters.parts;
      const endedAt = state.finishedAt ?? state.updatedAt;
      if (this.logged && !this.awaitedEnd && clock.now() - endedAt < LIVE_FALLBACK_POLL_MS) {
        this.awaitedEnd = true;
        return;
      }
      this.buffer.push({ ...finishedEvent(state), id });
      return;
    }
    // A run with a log has its pauses logged (the `run.paused` entry follows its wake-up).
    if (state.status !== 'paused' || this.logged) return;
    const paused = pausedEvent(state);
    if (!this.seenPause(paused)) this.buffer.push({ ...paused, id });
  }

  /** Whether this pause was yielded already (from the log or from storage); remembers it. */
  private seenPause(event: Extract<RunLiveEvent, { type: 'run.paused' }>): boolean {
    const key = JSON.stringify([event.interrupts, event.at]);
    if (key === this.pause) return true;
    this.pause = key;
    return false;
  }
}

/**
 * The `run.paused` event of a paused run, from its record: the interrupts it waits at (its
 * composed children's included), `at` when it reached the last of them.
 */
export function pausedEvent(state: RunState): Extract<RunLiveEvent, { type: 'run.paused' }> {
  const waiting = Object.entries(state.interrupts ?? {})
    .filter(([step]) => !state.completed.includes(step))
    .map(([, record]) => record);
  return {
    type: 'run.paused',
    runId: state.runId,
    reactorName: state.reactorName,
    at: waiting.length > 0 ? Math.max(...waiting.map((i) => i.pausedAt)) : state.updatedAt,
    interrupts: waiting.map((i) => i.path),
  };
}

/** The `run.finished` event of a terminal run, from its record (`error`: a failure's message). */
export function finishedEvent(state: RunState): Extract<RunLiveEvent, { type: 'run.finished' }> {
  const error = state.status === 'failed' ? state.failure?.message : undefined;
  return {
    type: 'run.finished',
    runId: state.runId,
    reactorName: state.reactorName,
    at: state.finishedAt ?? state.updatedAt,
    status: state.status as Extract<RunLiveEvent, { type: 'run.finished' }>['status'],
    ...(error === undefined ? {} : { error }),
  };
}
