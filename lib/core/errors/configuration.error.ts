import { ReactorError } from './reactor.error';

/**
 * The module or an adapter is configured in a way that cannot work: a bad `forRoot` option, a
 * Redis connection that BullMQ cannot use, a runtime that is missing a part, or a client used
 * before the application initialized. Raised at boot (or at the misused call) with what to change.
 */
export class ConfigurationError extends ReactorError {
  constructor(
    message: string,
    /** The option at fault (`redis.connection`, `sweeper.intervalMs`, ...), when one is. */
    readonly option?: string,
  ) {
    super('CONFIGURATION_INVALID', message);
  }
}
