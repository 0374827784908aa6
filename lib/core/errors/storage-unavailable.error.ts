import { ReactorError } from './reactor.error';
import { errorText, sentences } from './sentence';

/**
 * The run storage did not answer (Redis unreachable, a connection dropped mid-command). Retryable:
 * the same call may succeed once the storage is back. A `start` or `run` that failed this way may
 * or may not have stored its run: retry it with the same `runId` to be sure of one run only.
 */
export class StorageUnavailableError extends ReactorError {
  constructor(operation: string, cause: unknown) {
    super(
      'STORAGE_UNAVAILABLE',
      sentences(
        `The run storage did not answer during ${operation}: ${errorText(cause)}`,
        'Retry when it is back (pass the same runId to start or run so that a retry cannot start a second run).',
      ),
      { retryable: true, cause },
    );
  }
}
