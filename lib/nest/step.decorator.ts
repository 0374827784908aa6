import { DefinitionError, defineStepMetadata, type StepOptions } from '../core';
import { markInjectable } from './mark-injectable';
import { messages } from '../config';

/**
 * Declare an injectable step class under a stable `name`. The class is an ordinary Nest provider
 * (constructor injection works as usual) and must be listed in some module's `providers`; the
 * ReactorModule discovers it at boot and resolves it from the container when a run needs it.
 *
 * `options` are the step's defaults (retries, input/output contracts, redaction); one use of the
 * step in a reactor may override them.
 *
 * ```ts
 * @Step('charge-card', { retries: { maxAttempts: 3, backoff: 'exponential', baseDelayMs: 200 } })
 * export class ChargeCard implements StepHandler<ChargeArgs, Charge> {
 *   constructor(private readonly payments: PaymentsService) {}
 *   async run(args: ChargeArgs) { return success(await this.payments.charge(args.amount)); }
 *   async undo(charge: Charge) { await this.payments.refund(charge.id); }
 * }
 * ```
 *
 * Steps must be singletons: a request-scoped or transient step is refused at boot.
 *
 * @param name stable, non-empty step name (stored with runs; never rename a step in use)
 * @param options step defaults
 * @throws DefinitionError at class definition time when `name` is not a non-empty string,
 *   `options` is not an object, or the class has no `run` method.
 */
export function Step(name: string, options: StepOptions = {}): ClassDecorator {
  return (target) => {
    // NOTE: a step belongs to no one reactor, so the error's reactorName is empty.
    const invalid = (message: string) => new DefinitionError(message, '', typeof name === 'string' ? name : undefined);
    if (typeof target !== 'function') throw invalid(messages.decoratorNotOnClass('@Step', target));
    if (typeof name !== 'string' || name.trim().length === 0) {
      throw invalid(messages.decoratorNameInvalid('@Step', target, name));
    }
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw invalid(messages.decoratorOptionsInvalid('@Step', target, options));
    }
    if (typeof (target.prototype as { run?: unknown } | undefined)?.run !== 'function') {
      throw invalid(messages.stepWithoutRun(name, target));
    }
    defineStepMetadata(target, { ...options, name });
    markInjectable(target);
  };
}
