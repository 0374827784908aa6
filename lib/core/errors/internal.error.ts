import { ReactorError } from './reactor.error';

/**
 * Something nest-reactor assumed did not hold: a corrupt resumed state, an adapter answering
 * out of contract, a script returning an unknown code. The message says what; it is a bug to
 * report unless a stored record was edited by hand.
 */
export class InternalError extends ReactorError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('INTERNAL', message, options);
  }
}
