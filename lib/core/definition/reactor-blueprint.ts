import type { ReactorBuilder } from './builder';
import type { ReactorOptions } from './definition';
import type { Ref } from './ref';

/**
 * A reactor declared as a class: `build` wires inputs and steps on the builder and returns the
 * ref whose value is the run's result (or nothing, for the map of all results).
 *
 * ```ts
 * @Reactor('checkout')
 * class CheckoutReactor implements ReactorBlueprint<CheckoutInput> {
 *   build(r: ReactorBuilder<CheckoutInput>) {
 *     const order = r.input('order', OrderDto);
 *     return r.step('charge', ChargeCard, { amount: order.path('total') });
 *   }
 * }
 * ```
 */
export interface ReactorBlueprint<I = Record<string, unknown>, O = unknown> {
  build(r: ReactorBuilder<I>): Ref<O> | void;
}

/** A class implementing {@link ReactorBlueprint}. */
export type ReactorClass<I = unknown, O = unknown> = new (...deps: never[]) => ReactorBlueprint<I, O>;

/** The input type of a reactor class. */
export type ReactorInputOf<C> = C extends new (...deps: never[]) => { build(r: ReactorBuilder<infer I>): unknown }
  ? I
  : never;

/** The result type of a reactor class. */
export type ReactorOutputOf<C> = C extends new (...deps: never[]) => { build(r: never): infer R }
  ? R extends Ref<infer O>
    ? O
    : Record<string, unknown>
  : never;

/** Metadata recorded by `@Reactor`. */
export interface ReactorClassMetadata extends ReactorOptions {
  name: string;
}

const reactorMetadata = new WeakMap<object, ReactorClassMetadata>();

/** Record reactor metadata for a class (used by the `@Reactor` decorator). */
export function defineReactorMetadata(reactorClass: object, metadata: ReactorClassMetadata): void {
  reactorMetadata.set(reactorClass, metadata);
}

/** The metadata of a reactor class, or undefined when it is not a reactor. */
export function getReactorMetadata(reactorClass: object): ReactorClassMetadata | undefined {
  let current: object | null = reactorClass;
  while (current && current !== Function.prototype) {
    const found = reactorMetadata.get(current);
    if (found) return found;
    current = Object.getPrototypeOf(current) as object | null;
  }
  return undefined;
}
