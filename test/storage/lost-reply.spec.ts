/**
 * A lost Redis reply, for real: a TCP proxy between the engine's client and Redis forwards the
 * command that creates a run, then drops the connection before Redis's reply reaches the client.
 * ioredis reconnects and sends the same command again; the run must start once, not be reported
 * "already exists" (a caller retrying on that error would start a second saga).
 */
import { randomUUID } from 'node:crypto';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import Redis from 'ioredis';
import { ReactorEngine } from '../../lib/core';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { RedisKeys, RedisLockManager, RedisReactorStorage } from '../../lib/storage/redis';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from '../setup/redis';

/** Forwards everything, except that it cuts the connection carrying `marker` before its reply. */
class ReplyDroppingProxy {
  private readonly sockets = new Set<Socket>();
  private dropped = 0;
  private constructor(
    readonly server: Server,
    private readonly marker: () => string | undefined,
  ) {}

  static async start(marker: () => string | undefined): Promise<ReplyDroppingProxy> {
    const target = new URL(redisUrl());
    const server = createServer();
    const proxy = new ReplyDroppingProxy(server, marker);
    server.on('connection', (client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      proxy.sockets.add(client).add(upstream);
      let cutting = false;
      client.on('data', (chunk) => {
        const mark = proxy.marker();
        // The first command naming the marker goes through; its reply never comes back.
        if (mark && proxy.dropped === 0 && chunk.includes(mark)) {
          proxy.dropped++;
          cutting = true;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (cutting) {
          client.destroy();
          upstream.destroy();
          return;
        }
        client.write(chunk);
      });
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get replies(): number {
    return this.dropped;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('a lost Redis reply (a TCP proxy drops it; ioredis sends the command again)', () => {
  const prefix = uniquePrefix('lost-reply');
  const redis = createTestRedis();

  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('the run whose create reply was lost starts once and completes: no "already exists"', async () => {
    const runId = `lost-${randomUUID()}`;
    let armed: string | undefined;
    const proxy = await ReplyDroppingProxy.start(() => armed);
    const client = new Redis(proxy.url, { maxRetriesPerRequest: null, retryStrategy: () => 20 });
    try {
      const keys = new RedisKeys({ prefix });
      const engine = new ReactorEngine({
        storage: new RedisReactorStorage(client, { keys }),
        locks: new RedisLockManager(client, { keys }),
      });
      let ran = 0;
      const def = defineReactor('lost-reply', (r: ReactorBuilder<object>) =>
        r.step('charge', () => (ran++, success('charged')), {}),
      );
      armed = runId; // the create is the first command that names the run
      const outcome = await engine.run(def, {}, { runId });

      expect(proxy.replies).toBe(1);
      expect(outcome.status).toBe('completed');
      expect(ran).toBe(1);
      expect((await engine.get(runId))?.status).toBe('completed');
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});
