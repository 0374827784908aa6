import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { answerWithin } from '../../lib/health/answer-within';
import { createTestRedis } from '../setup/redis';

describe('answerWithin (the health check never waits longer than its timeout)', () => {
  it('answers with the value and how long it took', async () => {
    const redis = createTestRedis();
    try {
      const answer = await answerWithin(() => redis.ping(), 2_000);
      expect(answer).toEqual({ ok: true, value: 'PONG', ms: expect.any(Number) });
    } finally {
      await redis.quit();
    }
  });

  it('answers timedOut when the server accepts the connection but never replies (ioredis would wait)', async () => {
    // A server that takes connections and says nothing: ioredis keeps the PING queued. (No ready
    // check: one left unanswered arms an ioredis timer that outlives the disconnect.)
    const sockets: Socket[] = [];
    const server: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const redis = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: null, enableReadyCheck: false });
    try {
      const answer = await answerWithin(() => redis.ping(), 200);
      expect(answer).toEqual({ ok: false, timedOut: true });
    } finally {
      const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
      redis.disconnect();
      await ended;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('answers with the error of a call that fails, without throwing', async () => {
    const failure = new Error('Connection is closed.');
    expect(await answerWithin(() => Promise.reject(failure), 2_000)).toEqual({
      ok: false,
      timedOut: false,
      error: failure,
    });
    expect(
      await answerWithin(() => {
        throw failure;
      }, 2_000),
    ).toEqual({ ok: false, timedOut: false, error: failure });
  });
});
