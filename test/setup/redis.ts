/**
 * Redis helpers for tests.
 *
 * The Jest global setup (./global-setup.ts) finds or starts a Redis and exports its URL as
 * `REDIS_URL`. All test files share that one Redis (and its db 0), so each test file should work
 * under its own key prefix and remove its keys afterwards:
 *
 *   const prefix = uniquePrefix('my-feature');
 *   const redis = createTestRedis();
 *   afterAll(async () => {
 *     await cleanupPrefix(redis, prefix);
 *     await redis.quit();
 *   });
 */
import { randomBytes } from 'node:crypto';
import Redis, { type RedisOptions } from 'ioredis';

/** The URL of the test Redis; throws if the Jest global setup did not provide one. */
export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) {
    throw new Error(
      'REDIS_URL is not set. It is provided by the Jest global setup (test/setup/global-setup.ts): ' +
        'run the tests with `npm test` / `npx jest`, or set REDIS_URL=redis://host:port yourself.',
    );
  }
  return url;
}

/**
 * A key prefix unique to this call, e.g. `t:my-feature:1a2b3c4d5e6f:`. `name` is reduced to
 * `[A-Za-z0-9_.-]` so the prefix never contains glob characters, hash tags or extra colons.
 */
export function uniquePrefix(name: string): string {
  const safeName = name.replace(/[^A-Za-z0-9_.-]+/g, '-') || 'test';
  return `t:${safeName}:${process.pid.toString(36)}${randomBytes(4).toString('hex')}:`;
}

/**
 * A new client for the test Redis. `maxRetriesPerRequest: null` is what BullMQ requires of the
 * connections it is given. The caller must `quit()` it (e.g. in `afterAll`).
 */
export function createTestRedis(options: RedisOptions = {}): Redis {
  return new Redis(redisUrl(), { maxRetriesPerRequest: null, ...options });
}

/**
 * Deletes every key that starts with `prefix` (SCAN + UNLINK) and returns how many were deleted.
 * `redis` must not use ioredis's `keyPrefix` option (SCAN results are not prefix-adjusted).
 */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<number> {
  if (!prefix) throw new Error('cleanupPrefix: refusing to delete every key (empty prefix)');
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}
