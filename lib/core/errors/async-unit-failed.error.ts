import type { RunFailure } from '../model/failure';
import { ReactorError } from './reactor.error';

/**
 * What a failed async unit is read as, inside its `Failure`: by a step that reads the unit, and in
 * the run's `results` and value as callers see them. Carries the unit's failure, as stored.
 */
export class AsyncUnitFailedError extends ReactorError {
  constructor(readonly failure: RunFailure) {
    super('STEP_FAILED', failure.message);
  }
}
