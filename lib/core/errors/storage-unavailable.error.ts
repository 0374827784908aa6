import { InternalError } from './internal.error';
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

/** Whether `code` is one of Node's codes of a network connection that is down, refused or cut. */
export function isNetworkErrorCode(code: unknown): boolean {
  return typeof code === 'string' && NETWORK_CODES.has(code);
}

/** Node's codes of a network connection that is down, refused or cut. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EPIPE',
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
]);

/** The error classes of the Redis client (ioredis, redis-errors): Redis answered with an error, or did not answer. */
const REDIS_ERROR_NAMES = new Set([
  'RedisError',
  'ReplyError',
  'AbortError',
  'InterruptError',
  'ParserError',
  'MaxRetriesPerRequestError',
  'ClusterAllFailedError',
]);

/** The Redis client's own messages for a connection that is not there (plain `Error`s). */
const REDIS_CLIENT_MESSAGES =
  /^(Connection is closed|Reached the max retries per request limit|Command timed out|Stream isn't writeable|Socket closed unexpectedly|connect ETIMEDOUT|None of startup nodes is available|Failed to refresh slots cache|Too many Cluster redirections|Cluster isn't ready|Connection in subscriber mode|Redis connection (lost|to .* failed))/;

/**
 * Whether `error` says the storage failed: a network error, an error class of the Redis client, one
 * of its messages for a connection that is not there, or such an error as the `cause` of another.
 * Anything else (a `TypeError`, a `URIError`, what a getter threw) is not the storage's.
 */
export function isStorageFailure(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const { code, name, cause } = error as { code?: unknown; name?: unknown; cause?: unknown };
  if (isNetworkErrorCode(code)) return true;
  if (typeof name === 'string' && REDIS_ERROR_NAMES.has(name)) return true;
  if (error instanceof Error && REDIS_CLIENT_MESSAGES.test(errorText(error))) return true;
  return cause !== undefined && isStorageFailure(cause, depth + 1);
}

/**
 * The error a client call (`operation`: `start`, `continue`, ...) throws for `error`: the library's
 * own as it is; a storage failure ({@link isStorageFailure}) as {@link StorageUnavailableError}
 * (retryable); anything else as an {@link InternalError} saying that it is not the storage's and
 * that retrying the same call will not help. A storage adapter of its own signals "unavailable" by
 * throwing `StorageUnavailableError` (or an error with a network `code`).
 */
export function clientCallError(operation: string, error: unknown): ReactorError {
  if (error instanceof ReactorError) return error;
  if (isStorageFailure(error)) return new StorageUnavailableError(operation, error);
  const kind = error instanceof Error ? error.name : typeof error;
  return new InternalError(
    sentences(
      `${operation} failed with an error that is not the storage's (${kind}): ${errorText(error)}`,
      'Retrying the same call will not help: if it comes from your code (an input getter or proxy, a key or correlationId function), fix that; otherwise report it as a bug of nest-reactor',
    ),
    { cause: error },
  );
}
