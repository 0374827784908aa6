import { DefinitionError, defineReactorMetadata, type ReactorOptions } from '../core';
import { messages } from '../config';
import { markInjectable } from './mark-injectable';

/**
 * Declare an injectable reactor class under a stable `name`. Its `build(r)` wires inputs and steps
 * (see `ReactorBlueprint`); the ReactorModule discovers it at boot, builds and validates its
 * definition, and fails the boot if anything is wrong. List the class in some module's `providers`.
 *
 * ```ts
 * @Reactor('checkout', { maxConcurrency: 4 })
 * export class CheckoutReactor implements ReactorBlueprint<CheckoutInput> {
 *   build(r: ReactorBuilder<CheckoutInput>) {
 *     const order = r.input('order', OrderDto);
 *     const reservation = r.step('reserve', ReserveInventory, { order });
 *     return r.step('charge', ChargePayment, { order }, { waitFor: [reservation] });
 *   }
 * }
 * ```
 *
 * @param name stable, non-empty reactor name (stored with runs)
 * A reactor whose jobs should not share the default queue's worker names its own queue:
 * `@Reactor('import', { queue: 'imports', concurrency: 2, priority: 5 })` (see `ReactorOptions`;
 * validated at boot, the queue and its worker created then).
 *
 * @param options reactor options: `maxConcurrency`, `background`, `description`, `version`,
 *   `queue`, `concurrency`, `priority`, ...
 * @throws DefinitionError at class definition time when `name` is not a non-empty string,
 *   `options` is not an object, or the class has no `build` method.
 */
export function Reactor(name: string, options: ReactorOptions = {}): ClassDecorator {
  return (target) => {
    const invalid = (message: string) => new DefinitionError(message, typeof name === 'string' ? name : '');
    if (typeof target !== 'function') throw invalid(messages.decoratorNotOnClass('@Reactor', target));
    if (typeof name !== 'string' || name.trim().length === 0) {
      throw invalid(messages.decoratorNameInvalid('@Reactor', target, name));
    }
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw invalid(messages.decoratorOptionsInvalid('@Reactor', target, options));
    }
    if (typeof (target.prototype as { build?: unknown } | undefined)?.build !== 'function') {
      throw invalid(messages.reactorWithoutBuild(name, target));
    }
    defineReactorMetadata(target, { ...options, name });
    markInjectable(target);
  };
}
