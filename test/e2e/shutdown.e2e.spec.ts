import type Redis from 'ioredis';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorModule } from '../../lib/nest/reactor.module';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { RunProcessor } from '../../lib/queue/run.processor';
import { createTestRedis } from '../setup/redis';
import {
  createRedisApp,
  Gate,
  GatedReactor,
  pollUntil,
  quitAndWait,
  useRedisPrefixes,
  type StepLog,
} from './e2e.fixtures';

describe('ReactorModule shutdown on Redis (e2e)', () => {
  const files = useRedisPrefixes();
  const prefix = files.prefix;

  it('never closes a connection the application passed in', async () => {
    const connection = createTestRedis();
    try {
      const p = prefix('e2e-close-conn');
      const { app, client } = await createRedisApp(
        p,
        {},
        { module: ReactorModule.forRoot({ redis: { connection }, prefix: p }) },
      );
      const runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
      expect(runtime.ownsConnection).toBe(false);
      expect(runtime.redis).toBe(connection);
      const started = await client.start(GatedReactor, {});
      app.get(Gate).open();
      expect((await client.wait(started.runId, { timeoutMs: 10_000 })).status).toBe('completed');

      await app.close();

      expect(connection.status).toBe('ready');
      expect(await connection.ping()).toBe('PONG');
    } finally {
      await quitAndWait(connection);
    }
  });

  it('refuses a passed-in connection BullMQ workers cannot use, saying how to create it', async () => {
    const connection = createTestRedis({ maxRetriesPerRequest: 20 });
    try {
      const p = prefix('e2e-conn-retries');
      await expect(
        createRedisApp(p, {}, { module: ReactorModule.forRoot({ redis: { connection }, prefix: p }) }),
      ).rejects.toThrow(
        "ReactorModule option 'redis.connection' has maxRetriesPerRequest 20; BullMQ workers need null",
      );
      expect(connection.status).not.toBe('end');
    } finally {
      await quitAndWait(connection);
    }
  });

  it('lets the worker finish the job in hand before it closes', async () => {
    const drainPrefix = prefix('e2e-drain');
    const { app, client, log } = await createRedisApp(drainPrefix);
    const started = await client.start(GatedReactor, {});
    await app.get(Gate).entered();

    const closing = app.close();
    // The worker is draining: it waits for the run at the gate.
    await pollUntil(() => app.get(RunProcessor).state === 'draining', 5_000);
    app.get(Gate).open();
    await closing;

    expect(log.of(started.runId)).toEqual(['run:gate']);
    const state = await app.get<RedisReactorRuntime>(REACTOR_RUNTIME).storage;
    expect(state).toBeDefined();
    const check = createTestRedis();
    try {
      const stored = await readStatus(check, drainPrefix, started.runId);
      expect(stored).toBe('completed');
    } finally {
      await quitAndWait(check);
    }
  });

  it('after shutdownGraceMs closes the worker anyway; the run keeps its last checkpoint', async () => {
    const connection = createTestRedis();
    const p = prefix('e2e-force');
    try {
      const { app, client, log, logger } = await createRedisApp(
        p,
        {},
        { module: ReactorModule.forRoot({ redis: { connection }, prefix: p, shutdownGraceMs: 100 }) },
      );
      const started = await client.start(GatedReactor, {});
      await app.get(Gate).entered();

      await app.close(); // does not wait for the gate

      expect(app.get(RunProcessor).state).toBe('stopped');
      expect(logger.messages('warn')).toContainEqual(
        expect.stringContaining('Shutdown: 1 job still running after shutdownGraceMs (100 ms)'),
      );
      expect(await readStatus(connection, p, started.runId)).toBe('running');
      // The run was let go, not killed: on the application's connection it still finishes.
      app.get(Gate).open();
      await pollUntil(async () => (await readStatus(connection, p, started.runId)) === 'completed', 10_000);
      expect(logOf(log, started.runId)).toEqual(['run:gate']);
    } finally {
      await quitAndWait(connection);
    }
  });
});

function logOf(log: StepLog, runId: string): string[] {
  return log.of(runId);
}

/** The stored status of a run, read straight from Redis through a fresh runtime-independent lookup. */
async function readStatus(redis: Redis, prefix: string, runId: string): Promise<string | null> {
  const { RedisKeys } = await import('../../lib/storage/redis/redis.keys');
  return redis.hget(new RedisKeys({ prefix }).runKey(runId), 'status');
}
