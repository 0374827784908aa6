import type { FieldErrors } from '../model/failure';
import { ReactorError } from './reactor.error';

export type { FieldErrors } from '../model/failure';

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
    code: 'INPUT_VALIDATION' | 'PAYLOAD_INVALID' = 'INPUT_VALIDATION',
  ) {
    super(code, message, { retryable: false });
  }

  override toJSON() {
    return { ...super.toJSON(), fieldErrors: this.fieldErrors };
  }
}
