import { DefinitionError, type ReactorEventType } from '../core';
import { messages } from '../config';

/** Where `@OnReactorEvent` keeps the event types and options of a method. */
export const ON_REACTOR_EVENT = Symbol('nest-reactor:on-reactor-event');

/** Options of one `@OnReactorEvent` listener (the last argument, after the event types). */
export interface OnReactorEventOptions {
  /**
   * How many calls of this listener may be in flight (returned a promise that has not settled) at
   * once. An event that arrives while that many are pending is dropped for this listener, and the
   * drops are counted and logged (a warning at most once per 10 s per listener), so a listener that
   * hangs cannot pile up promises without bound. @default 100
   */
  maxInFlight?: number;
}

/** What `@OnReactorEvent` recorded on a method. */
export interface ReactorListenerMetadata {
  readonly types: ReadonlyArray<ReactorEventType | '*'>;
  readonly maxInFlight: number;
}

/** The default of {@link OnReactorEventOptions.maxInFlight}. */
export const LISTENER_MAX_IN_FLIGHT = 100;

/**
 * Call this method of a provider with every reactor lifecycle event of the given types (`'*'`:
 * all), beside the module's `middleware`, the way `@nestjs/bullmq` has `@OnWorkerEvent`. The
 * provider must be a singleton (the default scope).
 *
 * Listeners are fire-and-forget: the method is called when the event happens, and the run goes on
 * without waiting for the promise it returns. A listener that throws or rejects is logged (its
 * class, method and the event) and never affects the run. At most `maxInFlight` calls of one
 * listener are pending at once (default 100); further events are dropped for it and counted in a
 * logged warning. In tests, `ReactorTestingKit.flushListeners()` (and `idle()`) wait for pending calls.
 *
 * @example
 * @Injectable()
 * export class FailureAlerts {
 *   @OnReactorEvent('step.fail', 'reactor.fail')
 *   alert(event: ReactorEvent) { ... }
 *
 *   @OnReactorEvent('reactor.complete', { maxInFlight: 10 })
 *   async audit(event: ReactorEvent) { await this.auditLog.write(event); }
 * }
 */
export function OnReactorEvent(...types: Array<ReactorEventType | '*'>): MethodDecorator;
export function OnReactorEvent(
  ...typesAndOptions: [...Array<ReactorEventType | '*'>, OnReactorEventOptions]
): MethodDecorator;
export function OnReactorEvent(...args: Array<ReactorEventType | '*' | OnReactorEventOptions>): MethodDecorator {
  return (target, key, descriptor) => {
    const where = `${(target as { constructor?: { name?: string } }).constructor?.name ?? '(anonymous class)'}.${String(key)}`;
    const last = args[args.length - 1];
    const options: OnReactorEventOptions = typeof last === 'object' && last !== null ? last : {};
    const types = (options === last ? args.slice(0, -1) : args) as Array<ReactorEventType | '*'>;
    if (types.length === 0) throw new TypeError('@OnReactorEvent needs at least one event type (or "*").');
    const maxInFlight = options.maxInFlight ?? LISTENER_MAX_IN_FLIGHT;
    if (!Number.isInteger(maxInFlight) || maxInFlight < 1) {
      throw new DefinitionError(messages.listenerMaxInFlightInvalid(where, options.maxInFlight), '');
    }
    const metadata: ReactorListenerMetadata = { types, maxInFlight };
    Reflect.defineMetadata(ON_REACTOR_EVENT, metadata, descriptor.value as object);
    return descriptor;
  };
}

/** What `@OnReactorEvent` declared on `method`, if anything. */
export function reactorListenerOf(method: unknown): ReactorListenerMetadata | undefined {
  return typeof method === 'function'
    ? (Reflect.getMetadata(ON_REACTOR_EVENT, method) as ReactorListenerMetadata | undefined)
    : undefined;
}
