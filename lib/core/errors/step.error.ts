import { ReactorError } from './reactor.error';

/** A step body returned something that is not a step outcome. Not retried; the step is compensated. */
export class UnexpectedResultError extends ReactorError {
  constructor(
    readonly reactorName: string,
    readonly stepName: string,
    received: string,
  ) {
    super(
      'UNEXPECTED_RESULT',
      `Step '${stepName}' of reactor '${reactorName}' returned ${received}; a step must return success(v), skipped(v), halt(reason) or failure(err).`,
      { retryable: false },
    );
  }
}
