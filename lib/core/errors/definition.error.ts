import { ReactorError } from './reactor.error';

/**
 * A reactor definition is invalid: a cycle, an unknown step reference, a duplicate name, a
 * required step input that nothing wires, or a bad option. Raised when the definition is built,
 * so a Nest application fails at boot instead of at the first run.
 */
export class DefinitionError extends ReactorError {
  constructor(
    message: string,
    /** The reactor whose definition is invalid. */
    readonly reactorName: string,
    /** The step at fault, when one is. */
    readonly stepName?: string,
  ) {
    super('DEFINITION_INVALID', message);
  }
}
