import { BullModule } from '@nestjs/bullmq';
import type { DynamicModule } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { BackgroundAllReactor, E2E_PROVIDERS } from '../e2e/e2e.fixtures';
import { CapturingLogger } from '../nest/fixtures';
import { uniquePrefix } from '../setup/redis';
import { startRedisServer, type PrivateRedisServer } from '../support/redis-server';
import { createHealthApp } from './health.fixtures';

const WARNING =
  "has maxmemory-policy 'allkeys-lru', not 'noeviction': when it reaches maxmemory it evicts keys silently, and an " +
  'evicted BullMQ job, lease or run record is a run lost or executed twice. Set maxmemory-policy noeviction ' +
  "(redis.conf, CONFIG SET maxmemory-policy noeviction, or your provider's parameter group) and size maxmemory for " +
  'your runs (docs/redis-in-production.md).';

/** Boot the module on `url`; resolves to the init's error, or undefined and the app (closed by the caller). */
async function boot(url: string, requireNoEviction?: boolean, imports: DynamicModule[] = []) {
  const logger = new CapturingLogger();
  const app = await Test.createTestingModule({
    imports: [
      ...imports,
      ReactorModule.forRoot({
        redis: { url, ...(requireNoEviction === undefined ? {} : { requireNoEviction }) },
        prefix: uniquePrefix('eviction'),
        sweeper: { enabled: false },
        ...(imports.length > 0 ? { bullmq: { configKey: 'no-info' }, workers: false } : {}),
      }),
    ],
    providers: E2E_PROVIDERS,
  })
    .setLogger(logger)
    .compile();
  const error = await app.init().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { app, logger, error };
}

describe('Redis eviction policy (maxmemory-policy)', () => {
  describe('on a Redis with allkeys-lru', () => {
    let server: PrivateRedisServer;
    beforeAll(async () => {
      server = await startRedisServer(['--maxmemory-policy', 'allkeys-lru']);
    });
    afterAll(() => server.stop());

    it('warns once at boot, naming the policy found and the fix, and runs', async () => {
      const { app, logger, error } = await boot(server.url);
      try {
        expect(error).toBeUndefined();
        expect(logger.messages('warn')).toEqual([
          `Redis ${WARNING} Set ReactorModule option redis.requireNoEviction: true to fail the boot instead of this warning.`,
        ]);
        expect(logger.messages('error')).toEqual([]);
      } finally {
        await app.close();
      }
    });

    it('with redis.requireNoEviction fails the boot, naming the option', async () => {
      const { app, logger, error } = await boot(server.url, true);
      await app.close().catch(() => undefined);
      expect(error).toMatchObject({
        code: 'CONFIGURATION_INVALID',
        option: 'redis.requireNoEviction',
        message: `Redis ${WARNING} The boot fails because ReactorModule option redis.requireNoEviction is true.`,
      });
      expect(logger.messages('warn')).toEqual([]);
    });

    it('the health indicator reports the policy: up with a warning, down with requireNoEviction', async () => {
      const { app, client, check } = await createHealthApp(uniquePrefix('eviction-health'), {
        redis: { url: server.url },
        sweeper: { enabled: false },
      });
      try {
        const started = await client.start(BackgroundAllReactor, { word: 'lru' });
        expect((await client.wait(started.runId, { timeoutMs: 10_000 })).status).toBe('completed');
        const warned = await check();
        expect(warned.status).toBe('ok');
        expect(warned.reactor).toMatchObject({
          status: 'up',
          redis: { reachable: true, evictionPolicy: 'allkeys-lru' },
          warnings: [
            "Redis has maxmemory-policy 'allkeys-lru', not 'noeviction': a full Redis evicts jobs, leases and run " +
              'records silently. Set maxmemory-policy noeviction (docs/redis-in-production.md). Reported as a ' +
              'warning; pass requireNoEviction: true to report it as down.',
          ],
        });
        expect(warned.reactor.problems).toBeUndefined();

        const down = await check({ requireNoEviction: true });
        expect(down.status).toBe('error');
        expect(down.reactor).toMatchObject({ status: 'down', redis: { evictionPolicy: 'allkeys-lru' } });
        expect(down.reactor.warnings).toBeUndefined();
        expect(down.reactor.problems).toEqual([expect.stringContaining('Reported as down because requireNoEviction')]);
        await expect(check({ requireNoEviction: 'yes' as unknown as boolean })).rejects.toThrow(
          "ReactorHealthIndicator.isHealthy(): option requireNoEviction must be true or false (got 'yes').",
        );
      } finally {
        await app.close();
      }
    });
  });

  describe('on a Redis with noeviction (the redis-server default)', () => {
    let server: PrivateRedisServer;
    beforeAll(async () => {
      server = await startRedisServer();
    });
    afterAll(() => server.stop());

    it('says nothing at boot and the health indicator is up without warnings, even with requireNoEviction', async () => {
      const { app, logger, error } = await boot(server.url, true);
      try {
        expect(error).toBeUndefined();
        expect(logger.messages('warn')).toEqual([]);
      } finally {
        await app.close();
      }
      const health = await createHealthApp(uniquePrefix('noeviction-health'), {
        redis: { url: server.url, requireNoEviction: true },
        sweeper: { enabled: false },
      });
      try {
        const result = await health.check();
        expect(result.reactor).toMatchObject({ status: 'up', redis: { evictionPolicy: 'noeviction' } });
        expect(result.reactor.warnings).toBeUndefined();
      } finally {
        await health.app.close();
      }
    });
  });

  describe('on a Redis whose user may not run INFO (an ACL, as some managed services set)', () => {
    let server: PrivateRedisServer;
    let url: string;
    beforeAll(async () => {
      server = await startRedisServer([
        '--maxmemory-policy',
        'allkeys-lru',
        '--user',
        'reactor',
        'on',
        '>pw',
        '~*',
        '&*',
        '+@all',
        '-info',
      ]);
      url = `redis://reactor:pw@127.0.0.1:${server.port}`;
    });
    afterAll(() => server.stop());

    // BullMQ reads INFO for its version check too: a producer-only process (workers: false) passes
    // skipVersionCheck to the module's queues through an application's shared BullMQ configuration
    // (bullmq.configKey). A worker needs INFO: @nestjs/bullmq builds it without that setting.
    const sharedBull = () => BullModule.forRoot('no-info', { connection: {}, skipVersionCheck: true });

    it('boots without a warning (the policy is not known), and the health indicator says null and stays up', async () => {
      const { app, logger, error } = await boot(url, undefined, [sharedBull()]);
      try {
        expect(error).toBeUndefined();
        expect(logger.messages('warn')).toEqual([]);
        // Only the (documented) limit: the worker @nestjs/bullmq builds reads INFO for its version check.
        for (const line of logger.messages('error'))
          expect(line).toMatch(/^Redis connection error \(nest-reactor BullMQ worker, .*NOPERM/);
      } finally {
        await app.close();
      }
      const health = await createHealthApp(
        uniquePrefix('noinfo-health'),
        { redis: { url }, sweeper: { enabled: false }, bullmq: { configKey: 'no-info' }, workers: false },
        { imports: [sharedBull()] },
      );
      try {
        const started = await health.client.start(BackgroundAllReactor, { word: 'acl' });
        expect(started.status).toBe('dispatched');
        const result = await health.check();
        expect(result.reactor).toMatchObject({
          status: 'up',
          redis: { reachable: true, evictionPolicy: null },
          backlog: { waiting: 1 },
        });
        expect(result.reactor.warnings).toBeUndefined();
      } finally {
        await health.app.close();
      }
    });

    it('with requireNoEviction fails the boot, saying the policy could not be read and what to do', async () => {
      const { app, error } = await boot(url, true, [sharedBull()]);
      await app.close().catch(() => undefined);
      expect(error).toMatchObject({
        option: 'redis.requireNoEviction',
        message: expect.stringMatching(
          /^ReactorModule option redis.requireNoEviction is true, but the Redis eviction policy could not be read: INFO memory was refused or did not say \(NOPERM .*\)\. Allow INFO for the module's user, or drop requireNoEviction and make sure maxmemory-policy is noeviction\.$/,
        ),
      });
    });
  });
});
