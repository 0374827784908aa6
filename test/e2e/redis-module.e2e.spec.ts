import { BullModule, InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Job, Queue } from 'bullmq';
import { ReactorEngine } from '../../lib/core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { REACTOR_OPTIONS, REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { bullMqPrefix, REACTOR_QUEUE_NAME } from '../../lib/queue/queue.constants';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { CapturingLogger } from '../nest/fixtures';
import { bullMqConnection, cleanupPrefix, reactorRedisOption, scanKeys, uniquePrefix } from '../setup/redis';
import { createServer, type AddressInfo } from 'node:net';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { MemoryLockManager } from '../../lib/storage/memory';
import { makeRunState, T0 } from '../conformance/run-state.factory';
import { BackgroundAllReactor, createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 10_000 };

/** The app's configuration: the test Redis (a url, or the test cluster's connection) and a prefix. */
@Injectable()
class ConfigService {
  constructor(
    readonly prefix: string,
    readonly redis: ReturnType<typeof reactorRedisOption>['redis'],
  ) {}
}

describe('ReactorModule on Redis (e2e)', () => {
  const files = useRedisPrefixes();
  const prefix = files.prefix;

  it('says at boot that the durable runtime is on, with its prefix and queue', async () => {
    const p = prefix('e2e-boot');
    const { app, logger } = await createRedisApp(p);
    try {
      expect(logger.messages('log')).toContainEqual(
        `Durable runtime on Redis and BullMQ: keys under '${p}', BullMQ queue '${REACTOR_QUEUE_NAME}' ` +
          `(prefix '${bullMqPrefix(p)}'), this process runs workers.`,
      );
      expect(logger.messages('warn').filter((m) => m.includes('embedded'))).toEqual([]);
      // Every key the module wrote lives under the prefix, BullMQ's included.
      const started = await app.get(ReactorClient).start(BackgroundAllReactor, { word: 'abc' });
      await app.get(ReactorClient).wait(started.runId, WAIT);
      const all = await scanKeys(files.redis(), `${p}*`);
      expect(all.some((k) => k.startsWith(`${bullMqPrefix(p)}:${REACTOR_QUEUE_NAME}:`))).toBe(true);
    } finally {
      await app.close();
    }
  });

  it("builds the interrupt store on the runtime's connection and keys", async () => {
    const p = prefix('e2e-interrupts');
    // No sweeper: it would find the hand-made run (of no registered reactor) and fail it.
    const { app } = await createRedisApp(p, { sweeper: { enabled: false } });
    try {
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      const state = makeRunState({ status: 'paused' });
      await runtime.storage.save(state);
      const claim = { kind: 'timeout' as const, at: T0 };
      await expect(
        runtime.interrupts.claim(state.runId, 'approve', claim, { now: T0, retentionMs: 60_000 }),
      ).resolves.toEqual({ won: true, status: 'paused' });
      expect(runtime.keys.resumeKey(state.runId).startsWith(p)).toBe(true);
      expect(await files.redis().hget(runtime.keys.resumeKey(state.runId), 'c:approve')).toBe(JSON.stringify(claim));
    } finally {
      await app.close();
    }
  });

  it("builds the coordination store on the runtime's connection and keys", async () => {
    const p = prefix('e2e-coordination');
    const { app } = await createRedisApp(p, { sweeper: { enabled: false } });
    try {
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      await expect(runtime.coordination.acquireLock('invoice:42', 'run-a', 60_000)).resolves.toEqual({
        acquired: true,
        fence: 1,
        count: 1,
      });
      const held = runtime.keys.coordinationKey('lock', encodeURIComponent('invoice:42'), 'held');
      expect(held.startsWith(p)).toBe(true);
      expect(await files.redis().hgetall(held)).toEqual({ owner: 'run-a', count: '1', fence: '1' });
    } finally {
      await app.close();
    }
  });

  it('forRootAsync with runtime redis builds the Redis runtime from the factory', async () => {
    const p = prefix('e2e-async');
    const target = reactorRedisOption();
    @Module({
      providers: [{ provide: ConfigService, useValue: new ConfigService(p, target.redis) }],
      exports: [ConfigService],
    })
    class ConfigModule {}

    const { app, client } = await createRedisApp(
      p,
      {},
      {
        module: ReactorModule.forRootAsync({
          runtime: 'redis',
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({ redis: config.redis, prefix: config.prefix }),
        }),
      },
    );
    try {
      expect(app.get(REACTOR_OPTIONS).prefix).toBe(p);
      expect(app.get(REACTOR_RUNTIME).kind).toBe('redis');
      const started = await client.run(BackgroundAllReactor, { word: 'xyz' });
      expect(started.status).toBe('dispatched');
      const done = await client.wait(started.runId, WAIT);
      expect(done.status === 'completed' && done.value).toBe('Z');
    } finally {
      await app.close();
      await target.close();
    }
  });

  it('fails the boot when the factory and the declared runtime disagree, naming the fix', async () => {
    const redisWithoutRuntime = Test.createTestingModule({
      // Refused before any connection is made: the url is never dialled.
      imports: [ReactorModule.forRootAsync({ useFactory: () => ({ redis: { url: 'redis://127.0.0.1:1' } }) })],
    }).setLogger(new CapturingLogger());
    await expect(redisWithoutRuntime.compile()).rejects.toThrow(
      "the async options have a 'redis' option, but the module was declared with the embedded runtime (the default). " +
        "Pass runtime: 'redis' beside the factory",
    );

    const runtimeWithoutRedis = Test.createTestingModule({
      imports: [ReactorModule.forRootAsync({ runtime: 'redis', useFactory: () => ({}) })],
    }).setLogger(new CapturingLogger());
    await expect(runtimeWithoutRedis.compile()).rejects.toThrow(
      "ReactorModule.forRootAsync({ runtime: 'redis' }): the async options have no 'redis' option",
    );

    expect(() => ReactorModule.forRootAsync({ runtime: 'cluster' as never, useFactory: () => ({}) })).toThrow(
      "ReactorModule option 'runtime' must be 'embedded' or 'redis' (got 'cluster').",
    );
  });

  it('marks a run failed with JOB_RETRIES_EXHAUSTED when its job keeps throwing', async () => {
    const p = prefix('e2e-exhausted');
    const { app, client } = await createRedisApp(p, { jobRetryCount: 1 });
    try {
      const engine = app.get(ReactorEngine);
      const handleJob = jest.spyOn(engine, 'handleJob').mockRejectedValue(new TypeError('redis went away'));

      const started = await client.start(BackgroundAllReactor, { word: 'abc' });
      const done = await client.wait(started.runId, WAIT);

      expect(handleJob).toHaveBeenCalledTimes(2); // jobRetryCount 1: two attempts
      expect(done.status).toBe('failed');
      if (done.status !== 'failed') return;
      expect(done.failure).toMatchObject({
        code: 'JOB_RETRIES_EXHAUSTED',
        exceptionClass: 'TypeError',
        errorMessage: 'job retries exhausted after 2 attempts: redis went away',
        rollbackFailures: [],
      });
      expect(done.failure.message).toBe(
        `Run '${started.runId}' of reactor 'e2e-bg-all' failed: job retries exhausted after 2 attempts: redis went away`,
      );
    } finally {
      await app.close();
    }
  });

  it("leaves the app's own BullModule.forRoot configuration and queues alone", async () => {
    const p = prefix('e2e-app-bull');
    // A hash tag, as BullMQ needs on a cluster (its scripts touch several keys of a queue).
    const appPrefix = `{${p}app}`;
    const appRedis = bullMqConnection();
    const seen: string[] = [];

    @Processor('app-emails')
    class EmailProcessor extends WorkerHost {
      async process(job: Job<{ to: string }>): Promise<void> {
        seen.push(job.data.to);
      }
      @OnWorkerEvent('error')
      onError(): void {}
    }
    @Injectable()
    class Mailer {
      constructor(@InjectQueue('app-emails') readonly queue: Queue) {}
    }

    const { app, client } = await createRedisApp(
      p,
      {},
      {
        imports: [
          BullModule.forRoot({ connection: appRedis.connection, prefix: appPrefix }),
          BullModule.registerQueue({ name: 'app-emails' }),
        ],
        providers: [EmailProcessor, Mailer],
      },
    );
    try {
      const mailer = app.get(Mailer);
      expect(mailer.queue.opts.prefix).toBe(appPrefix);
      await mailer.queue.add('send', { to: 'ada@example.com' });
      const started = await client.start(BackgroundAllReactor, { word: 'uvw' });
      expect((await client.wait(started.runId, WAIT)).status).toBe('completed');
      await pollUntil(() => seen.length > 0, 10_000);
      expect(seen).toEqual(['ada@example.com']);
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      expect(runtime.dispatcher.queue.opts.prefix).toBe(bullMqPrefix(p));
    } finally {
      await app.close();
      await cleanupPrefix(files.redis(), appPrefix);
      await appRedis.close();
    }
  });
});

describe('Redis unreachable', () => {
  it('fails the application bootstrap within connectTimeoutMs with an error that says what to do', async () => {
    // A port where nothing listens: bound, then closed.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));

    const app = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot({
          redis: { url: `redis://127.0.0.1:${port}` },
          prefix: uniquePrefix('unreachable'),
          connectTimeoutMs: 300,
          sweeper: { enabled: false },
        }),
      ],
    })
      .setLogger(new CapturingLogger())
      .compile();
    try {
      await expect(app.init()).rejects.toMatchObject({
        code: 'CONFIGURATION_INVALID',
        option: 'redis',
        message: expect.stringContaining('Redis did not answer a PING within 300 ms'),
      });
    } finally {
      // Nest's close() re-throws a failed bootstrap's error; the runtime let go of its connections itself.
      await app.close().catch(() => undefined);
    }
  });

  it('a client call while the storage does not answer fails with a coded, retryable error', async () => {
    const engine = new ReactorEngine({
      storage: {
        save: () => Promise.reject(new Error('Reached the max retries per request limit (which is 20).')),
        load: () => Promise.reject(new Error('Connection is closed.')),
        acquireAndLoad: () => Promise.reject(new Error('Connection is closed.')),
        listActive: () => Promise.resolve([]),
        markBroken: () => Promise.resolve(),
      },
      locks: new MemoryLockManager(),
    });
    const def = defineReactor('unreachable', (r: ReactorBuilder<object>) => r.step('s', () => success(1), {}));
    await expect(engine.run(def, {})).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE', retryable: true });
    await expect(engine.get('some-run')).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      message: expect.stringContaining('Connection is closed.'),
    });
  });
});
