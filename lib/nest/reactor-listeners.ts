import { Inject, Injectable, Logger } from '@nestjs/common';
import { isThenable, type Clock, type ReactorEvent, type ReactorEventType, type ReactorMiddleware } from '../core';
import { messages, REACTOR_CLOCK, REACTOR_LOGGER_CONTEXT } from '../config';
import type { ReactorListenerMetadata } from './on-reactor-event.decorator';

/** How often, at most, the drops of one listener are reported. */
export const LISTENER_DROP_REPORT_INTERVAL_MS = 10_000;

/** One `@OnReactorEvent` method, with what it has in flight. */
interface Listener {
  /** `Class.method`, for logs. */
  readonly name: string;
  readonly instance: object;
  readonly method: (event: ReactorEvent) => unknown;
  readonly all: boolean;
  readonly types: ReadonlySet<ReactorEventType | '*'>;
  readonly maxInFlight: number;
  inFlight: number;
  /** Events dropped since the listener was registered. */
  dropped: number;
  /** Events dropped since the last report. */
  unreported: number;
  /** When drops were last reported (clock time), or undefined before the first. */
  reportedAt: number | undefined;
}

/** What one listener has done, from {@link ReactorListeners.stats}. */
export interface ReactorListenerStats {
  /** `Class.method`. */
  listener: string;
  /** Calls whose promise has not settled yet. */
  inFlight: number;
  /** Its bound (`@OnReactorEvent(..., { maxInFlight })`). */
  maxInFlight: number;
  /** Events dropped because `maxInFlight` calls were pending, since boot. */
  dropped: number;
}

/**
 * Delivers lifecycle events to `@OnReactorEvent` methods, off the run's path (as `@nestjs/bullmq`'s
 * `@OnWorkerEvent` is):
 *
 * - the method is called synchronously when the event is emitted, and what it returns is not
 *   awaited: a slow listener never delays a run (a synchronous listener's effects are visible as
 *   soon as the event has been emitted);
 * - a throw or a rejection is logged with the listener's class and method, the event type, the run
 *   and the reactor; the run never sees it;
 * - each listener has at most `maxInFlight` calls pending; an event arriving when it has that many
 *   is dropped for that listener (others still get it), counted ({@link stats}) and reported in a
 *   warning: the first drop at once, then at most once per {@link LISTENER_DROP_REPORT_INTERVAL_MS}
 *   with the count since the last report (and once more when a call settles after the interval).
 *
 * Tests wait for pending calls with {@link settled} (the testing kit's `flushListeners()`).
 */
@Injectable()
export class ReactorListeners {
  private readonly logger = new Logger(REACTOR_LOGGER_CONTEXT);
  private readonly listeners: Listener[] = [];
  private readonly pending = new Set<Promise<void>>();

  constructor(@Inject(REACTOR_CLOCK) private readonly clock: Clock) {}

  /** A middleware delivering the events of `metadata.types` to `instance[method]` (called at boot). */
  middleware(instance: object, method: string, metadata: ReactorListenerMetadata): ReactorMiddleware {
    const listener: Listener = {
      name: `${instance.constructor?.name || '(anonymous class)'}.${method}`,
      instance,
      method: (instance as Record<string, (event: ReactorEvent) => unknown>)[method],
      all: metadata.types.includes('*'),
      types: new Set(metadata.types),
      maxInFlight: metadata.maxInFlight,
      inFlight: 0,
      dropped: 0,
      unreported: 0,
      reportedAt: undefined,
    };
    this.listeners.push(listener);
    return {
      // NOTE: returns nothing, so the engine's middleware runner has nothing to wait for.
      onEvent: (event) => {
        if (listener.all || listener.types.has(event.type)) this.deliver(listener, event);
      },
    };
  }

  /** How many listener calls are pending, all listeners together. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** What each listener has in flight and has dropped. */
  stats(): ReactorListenerStats[] {
    return this.listeners.map((l) => ({
      listener: l.name,
      inFlight: l.inFlight,
      maxInFlight: l.maxInFlight,
      dropped: l.dropped,
    }));
  }

  /**
   * Resolves when no listener call is pending: those pending now have settled, and so have those
   * their settling started (a listener that starts a run whose events reach listeners). For tests;
   * never resolves while a listener hangs.
   */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private deliver(listener: Listener, event: ReactorEvent): void {
    if (listener.inFlight >= listener.maxInFlight) {
      listener.dropped++;
      listener.unreported++;
      this.reportDrops(listener);
      return;
    }
    let result: unknown;
    try {
      result = listener.method.call(listener.instance, event);
    } catch (error) {
      this.logFailure(listener, event, error);
      return;
    }
    if (!isThenable(result)) return;
    listener.inFlight++;
    const done: Promise<void> = Promise.resolve(result).then(
      () => this.finish(listener, done),
      (error: unknown) => {
        this.logFailure(listener, event, error);
        this.finish(listener, done);
      },
    );
    this.pending.add(done);
  }

  private finish(listener: Listener, done: Promise<void>): void {
    listener.inFlight--;
    this.pending.delete(done);
    if (listener.unreported > 0) this.reportDrops(listener);
  }

  /** Report drops now if the interval since the last report has passed (or nothing was reported yet). */
  private reportDrops(listener: Listener): void {
    const now = this.clock.now();
    if (listener.reportedAt !== undefined && now - listener.reportedAt < LISTENER_DROP_REPORT_INTERVAL_MS) return;
    this.logger.warn(
      messages.listenerEventsDropped(listener.name, listener.unreported, listener.dropped, listener.maxInFlight),
    );
    listener.unreported = 0;
    listener.reportedAt = now;
  }

  private logFailure(listener: Listener, event: ReactorEvent, error: unknown): void {
    this.logger.error(
      messages.listenerFailed(listener.name, event.type, event.runId, event.reactorName, error),
      (error as Error)?.stack,
    );
  }
}
