/**
 * The per-file Redis setup of a Redis adapter spec (the storage conformance specs and their
 * Redis-only checks), on the helpers of test/setup/redis.ts:
 *
 *   const { redis, filePrefix, nextPrefix, client, itLeavesNoKeysBehind } = redisSpecFile('redis-flow');
 *
 * - `redis`: the file's client on the test Redis (it connects on first use), quit after the file;
 * - `filePrefix`: the file's own key prefix, `t:<name>:<id>` (no trailing colon);
 * - `nextPrefix(label)`: a fresh prefix under it for one test, `<filePrefix>:<label><n>`;
 * - `client()`: one more client (a connection of its own), disconnected after the file;
 * - `itLeavesNoKeysBehind()`: the file's last test, that its tests removed every key they wrote.
 *
 * Every key under `filePrefix` is removed after the file, whatever the tests left.
 */
import type { Redis } from 'ioredis';
import { cleanupPrefix, createTestRedis, scanKeys, uniquePrefix } from '../setup/redis';

/** What {@link redisSpecFile} gives a spec file. */
export interface RedisSpecFile {
  readonly redis: Redis;
  readonly filePrefix: string;
  /** A prefix no other test of the file uses: `<filePrefix>:<label><n>`. */
  nextPrefix(label?: string): string;
  /** A new client on the test Redis, disconnected after the file. */
  client(): Redis;
  /**
   * Declare the check that no key under `filePrefix` is left; call it after the file's suites
   * (tests run in declaration order). `before` runs first (e.g. to remove what a suite keeps on purpose).
   */
  itLeavesNoKeysBehind(before?: () => Promise<unknown>): void;
}

/** The Redis client, prefix and clean-up of one spec file named `name`; see the file's comment. */
export function redisSpecFile(name: string): RedisSpecFile {
  const redis = createTestRedis({ lazyConnect: true });
  const filePrefix = uniquePrefix(name).replace(/:$/, '');
  const clients: Redis[] = [];
  let counter = 0;

  afterAll(async () => {
    await cleanupPrefix(redis, filePrefix);
    for (const client of clients) client.disconnect();
    await redis.quit();
  });

  return {
    redis,
    filePrefix,
    nextPrefix: (label = '') => `${filePrefix}:${label}${++counter}`,
    client() {
      const client = createTestRedis();
      clients.push(client);
      return client;
    },
    itLeavesNoKeysBehind(before) {
      it('leaves no keys of its tests behind in Redis', async () => {
        await before?.();
        const [, found] = await redis.scan('0', 'MATCH', `${filePrefix}:*`, 'COUNT', 10_000);
        expect(found).toEqual([]);
      });
    },
  };
}

/** Every key under `prefix` (`<prefix>:*`), sorted. */
export async function storedKeys(redis: Redis, prefix: string): Promise<string[]> {
  return (await scanKeys(redis, `${prefix}:*`)).sort();
}

/** Redis's own clock (TIME), in milliseconds. */
export async function redisTimeMs(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** The keys of an EVAL/EVALSHA command: `[name, script|sha, numkeys, ...keys, ...args]`. */
export function scriptKeys(command: string[]): string[] {
  return command.slice(3, 3 + Number(command[2]));
}
