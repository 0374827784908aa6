import { ReactorError } from './reactor.error';

/**
 * A step's arguments could not be resolved (a path or transform threw). The step's body never
 * started, so it is not compensated and not retried; completed steps are undone.
 */
export class ArgumentResolutionError extends ReactorError {
  constructor(
    message: string,
    readonly reactorName: string,
    readonly stepName: string,
    /** Name of the error the resolver threw. */
    readonly exceptionClass: string,
  ) {
    super('ARGUMENT_RESOLUTION', message, { retryable: false });
  }
}
