import type Redis from 'ioredis';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from './redis';

describe('test Redis from the global setup', () => {
  const prefix = uniquePrefix('redis-setup');
  let redis: Redis;

  beforeAll(() => {
    redis = createTestRedis();
  });

  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    await redis.quit();
  });

  it('exposes REDIS_URL to the test workers', () => {
    expect(redisUrl()).toMatch(/^rediss?:\/\//);
  });

  it('answers PING', async () => {
    await expect(redis.ping()).resolves.toBe('PONG');
  });

  it('round-trips SET/GET under a unique prefix, and cleanupPrefix removes only those keys', async () => {
    const key = `${prefix}greeting`;
    // Shares the prefix's text up to its final ':' but does not start with the prefix.
    const neighbour = `${prefix.slice(0, -1)}-neighbour`;

    await redis.set(key, 'hello');
    await redis.set(neighbour, 'keep me');
    expect(await redis.get(key)).toBe('hello');

    await expect(cleanupPrefix(redis, prefix)).resolves.toBe(1);
    expect(await redis.exists(key)).toBe(0);
    expect(await redis.get(neighbour)).toBe('keep me');

    await redis.del(neighbour);
  });
});
