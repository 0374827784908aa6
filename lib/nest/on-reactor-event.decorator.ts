import type { ReactorEvent, ReactorEventType, ReactorMiddleware } from '../core';

/** Where `@OnReactorEvent` keeps the event types of a method. */
export const ON_REACTOR_EVENT = Symbol('nest-reactor:on-reactor-event');

/**
 * Call this method of a provider with every reactor lifecycle event of the given types (`'*'`:
 * all), beside the module's `middleware`, the way `@nestjs/bullmq` has `@OnWorkerEvent`. The
 * provider must be a singleton (the default scope). A listener that throws is logged and ignored:
 * it never affects the run.
 *
 * @example
 * @Injectable()
 * export class FailureAlerts {
 *   @OnReactorEvent('step.fail', 'reactor.fail')
 *   alert(event: ReactorEvent) { ... }
 * }
 */
export function OnReactorEvent(...types: Array<ReactorEventType | '*'>): MethodDecorator {
  return (_target, _key, descriptor) => {
    if (types.length === 0) throw new TypeError('@OnReactorEvent needs at least one event type (or "*").');
    Reflect.defineMetadata(ON_REACTOR_EVENT, types, descriptor.value as object);
    return descriptor;
  };
}

/** The event types `@OnReactorEvent` declared on `method`, if any. */
export function reactorEventTypesOf(method: unknown): ReadonlyArray<ReactorEventType | '*'> | undefined {
  return typeof method === 'function'
    ? (Reflect.getMetadata(ON_REACTOR_EVENT, method) as Array<ReactorEventType | '*'> | undefined)
    : undefined;
}

/** A middleware calling `instance[method]` with the events of `types`. */
export function listenerMiddleware(
  instance: Record<string, unknown>,
  method: string,
  types: ReadonlyArray<ReactorEventType | '*'>,
): ReactorMiddleware {
  const all = types.includes('*');
  const fn = instance[method] as (event: ReactorEvent) => unknown;
  return {
    onEvent: async (event) => {
      if (all || types.includes(event.type)) await fn.call(instance, event);
    },
  };
}
