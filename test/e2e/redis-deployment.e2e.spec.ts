import { Test } from '@nestjs/testing';
import Redis, { Cluster } from 'ioredis';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Reactor } from '../../lib/nest/reactor.decorator';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { RunProcessor } from '../../lib/queue/run.processor';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { CapturingLogger } from '../nest/fixtures';
import { startRedisServer, type PrivateRedisServer } from '../support/redis-server';
import { redisUrl } from '../setup/redis';
import { BackgroundAllReactor, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

describe('Redis deployment checks at boot', () => {
  const files = useRedisPrefixes();

  it('records the shard count of a deployment and refuses a boot with another one, naming the fix', async () => {
    const p = files.prefix('shards');
    const first = await createRedisApp(p);
    try {
      const runtime = first.app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      expect(runtime.keys.shards).toBe(128);
      expect(await files.redis().get(runtime.keys.shardsKey())).toBe('128');
      const started = await first.client.run(BackgroundAllReactor, { word: 'ok' });
      expect(started.status).toBe('dispatched');
    } finally {
      await first.app.close();
    }

    // The same count boots again; another one is refused before it could strand the runs.
    const again = await createRedisApp(p, { shards: 128 });
    await again.app.close();
    await expect(createRedisApp(p, { shards: 16 })).rejects.toThrow(
      `ReactorModule option 'shards' is 16, but the deployment under prefix '${p}' was made with 128 shards: ` +
        'runs are placed by shard, so with another count the existing ones could no longer be found. ' +
        'Set shards: 128 (the count is fixed per deployment), or use a new prefix for a new deployment.',
    );
  });

  describe('on a Redis Cluster node', () => {
    let node: PrivateRedisServer;
    beforeAll(async () => {
      node = await startRedisServer(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf']);
    });
    afterAll(() => node.stop());

    it('refuses a single-node url with the Cluster form of the fix', async () => {
      const builder = Test.createTestingModule({
        imports: [ReactorModule.forRoot({ redis: { url: node.url }, prefix: files.prefix('cluster-url') })],
      }).setLogger(new CapturingLogger());
      const app = await builder.compile();
      await expect(app.init()).rejects.toThrow(
        "ReactorModule option 'redis.url' reaches a Redis Cluster node (INFO cluster says cluster_enabled:1) " +
          'through a single-node connection: every key of another slot would fail with MOVED. Give the module the ' +
          'cluster: { redis: { connection: new Cluster([{ host, port }, ...], { redisOptions: { maxRetriesPerRequest: null }',
      );
      // Nest's close() re-throws a failed bootstrap's error; the runtime let go of its connections itself.
      await app.close().catch(() => undefined);
    });

    it('refuses a single-node connection the same way, and leaves it open (it is the application’s)', async () => {
      const connection = new Redis(node.url, { maxRetriesPerRequest: null });
      try {
        const app = await Test.createTestingModule({
          imports: [ReactorModule.forRoot({ redis: { connection }, prefix: files.prefix('cluster-conn') })],
        })
          .setLogger(new CapturingLogger())
          .compile();
        await expect(app.init()).rejects.toThrow(/option 'redis\.connection' reaches a Redis Cluster node/);
        await app.close().catch(() => undefined);
        expect(await connection.ping()).toBe('PONG');
      } finally {
        connection.disconnect();
      }
    });
  });

  it('refuses a Cluster with maxRetriesPerRequest set, with the Cluster form of the fix', async () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: Number(new URL(redisUrl()).port) }], {
      lazyConnect: true,
      redisOptions: { maxRetriesPerRequest: 3 },
    });
    try {
      expect(() => ReactorModule.forRoot({ redis: { connection: cluster } })).not.toThrow();
      const app = Test.createTestingModule({
        imports: [ReactorModule.forRoot({ redis: { connection: cluster }, prefix: files.prefix('cluster-retries') })],
      }).setLogger(new CapturingLogger());
      await expect(app.compile()).rejects.toThrow(
        "ReactorModule option 'redis.connection' has maxRetriesPerRequest 3; BullMQ workers need null (they block on " +
          'the connection). Create the cluster with new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null } })',
      );
      // Refused before BullMQ was given the connection: the lazy cluster was never connected.
      expect(cluster.status).toBe('wait');
    } finally {
      // The application's connection is the application's to close.
      cluster.disconnect();
    }
  });
  describe('with redis: { url } (the module owns its connections)', () => {
    @Reactor('e2e-url-encrypted', { encryptInputs: true })
    class EncryptedReactor implements ReactorBlueprint<{ card: string }> {
      build(r: ReactorBuilder<{ card: string }>) {
        return r.step('s', () => success(1), { card: r.input('card', { type: 'string', redact: true }) });
      }
    }

    it('closes the connections it created from the URL, its worker and its queue', async () => {
      const { app } = await createRedisApp(files.prefix('e2e-close-url'));
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      const worker = app.get(RunProcessor).worker;
      expect(runtime.ownsConnection).toBe(true);
      expect(app.get(RunProcessor).state).toBe('running');

      await app.close();

      expect(runtime.redis.status).toBe('end');
      expect(worker.isRunning()).toBe(false);
      expect(worker.closing).toBeDefined();
      expect(app.get(RunProcessor).state).toBe('stopped');
      expect(runtime.dispatcher.queue.closing).toBeDefined();
      // Closing again (as @nestjs/bullmq does for its worker and queue) is harmless.
      await expect(runtime.close()).resolves.toBeUndefined();
    });

    it('refuses to boot without an inputCipher, and the failed boot leaves no connection open', async () => {
      const module = await Test.createTestingModule({
        imports: [
          ReactorModule.forRoot({
            redis: { url: redisUrl() },
            prefix: files.prefix('e2e-enc-nocipher'),
            sweeper: { enabled: false },
          }),
        ],
        providers: [EncryptedReactor],
      })
        .setLogger(new CapturingLogger())
        .compile();
      const runtime = module.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      await expect(module.init()).rejects.toThrow(
        /Reactor 'e2e-url-encrypted' declares encryptInputs, but its storage has no input cipher/,
      );
      // Nest runs no shutdown hook after a failed bootstrap: the module closed what it opened.
      expect(runtime.redis.status).toBe('end');
    });
  });
});
