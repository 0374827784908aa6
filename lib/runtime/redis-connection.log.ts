import type { LoggerService } from '@nestjs/common';
import { errorText, isNetworkErrorCode } from '../core';
import { messages } from '../config';

/**
 * Messages of a Redis connection that is down or refused (its error codes are Node's network codes,
 * `isNetworkErrorCode`): each of the module's connections (storage, BullMQ queues, each worker's
 * two) reports them again on every reconnect attempt, so they are logged once per outage rather
 * than once per attempt and connection.
 */
const CONNECTION_MESSAGES =
  /^(connect ETIMEDOUT|Connection is closed|Socket closed unexpectedly|WRONGPASS|NOAUTH|NOPERM)/;

/** Whether `error` says a connection to Redis is down or refused (rather than a command failed). */
export function isConnectionError(error: unknown): boolean {
  if (isNetworkErrorCode((error as { code?: unknown } | undefined)?.code)) return true;
  return CONNECTION_MESSAGES.test(errorText(error));
}

/**
 * Where the module connects, for messages, without credentials: a URL with its password (and a
 * `password` query parameter) replaced by `***`, or `host:port` of an application's connection
 * (every node of a cluster).
 */
export function describeRedisTarget(redis: { url: string } | { connection: unknown }): string {
  if ('url' in redis) return redactRedisUrl(redis.url);
  const connection = redis.connection as {
    isCluster?: boolean;
    options?: { host?: string; port?: number; path?: string };
    startupNodes?: Array<{ host?: string; port?: number } | string | number>;
  };
  if (connection.isCluster) {
    const nodes = (connection.startupNodes ?? []).map((node) =>
      typeof node === 'object' ? `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}` : String(node),
    );
    return `the cluster given as redis.connection (${nodes.join(', ') || 'no startup nodes'})`;
  }
  const options = connection.options ?? {};
  const where = options.path ?? `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
  return `${where} (the connection given as redis.connection)`;
}

/** `url` with its password hidden; a URL that does not parse is not shown at all. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return '(the redis.url given, not shown: it does not parse as a URL)';
  }
}

/**
 * One log of the Redis connection errors of a runtime's connections: the storage client, the BullMQ
 * queues and the workers report here. A connection error is logged the first time its text is
 * seen, then not again until a connection is back ({@link connected}); any other error (a script,
 * a lock) is logged each time, as before.
 */
export class RedisConnectionLog {
  private readonly seen = new Set<string>();

  constructor(
    private readonly logger: LoggerService,
    /** Where the module connects, redacted ({@link describeRedisTarget}). */
    readonly target: string,
  ) {}

  /** An `error` event of one of the module's connections. */
  report(source: 'storage client' | 'BullMQ queue' | 'BullMQ worker', error: unknown): void {
    if (!isConnectionError(error)) {
      if (source === 'storage client') this.logger.error(messages.redisClientError(error));
      else this.logger.error(messages.queueError(source === 'BullMQ queue' ? 'queue' : 'worker', error));
      return;
    }
    const text = errorText(error);
    if (this.seen.has(text)) return;
    this.seen.add(text);
    this.logger.error(messages.redisConnectionError(source, this.target, error));
  }

  /** A connection is (back) up: the next outage is logged again. */
  connected(): void {
    if (this.seen.size === 0) return;
    this.seen.clear();
    this.logger.log(messages.redisConnectionBack(this.target));
  }
}
