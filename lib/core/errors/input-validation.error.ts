import { ReactorError } from './reactor.error';

/** Field path (dot-separated) to the messages of every constraint it violated. */
export type FieldErrors = Record<string, string[]>;

/**
 * Input, step-contract or output validation failed. Never retried. {@link fieldErrors} names
 * every violated field; redacted values never appear in the message.
 */
export class InputValidationError extends ReactorError {
  constructor(
    message: string,
    readonly fieldErrors: FieldErrors,
    readonly reactorName: string,
    readonly stepName?: string,
  ) {
    super('INPUT_VALIDATION', message, { retryable: false });
  }

  override toJSON() {
    return { ...super.toJSON(), fieldErrors: this.fieldErrors };
  }
}
