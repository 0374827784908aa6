import { createServer, type AddressInfo } from 'node:net';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { ReactorEngine } from '../../lib/core/engine/reactor-engine';
import { errorText, sentence, sentences } from '../../lib/core/errors/sentence';
import { StorageUnavailableError } from '../../lib/core/errors/storage-unavailable.error';
import { ReactorModule } from '../../lib/nest/reactor.module';
import {
  describeRedisTarget,
  isConnectionError,
  redactRedisUrl,
  RedisConnectionLog,
} from '../../lib/runtime/redis-connection.log';
import { MemoryLockManager } from '../../lib/storage/memory/memory-lock.manager';
import { RedisReactorStorage } from '../../lib/storage/redis/redis-reactor.storage';
import { RedisKeys } from '../../lib/storage/redis/redis.keys';
import { CapturingLogger } from '../nest/fixtures';
import { uniquePrefix } from '../setup/redis';
import { E2E_PROVIDERS } from './e2e.fixtures';

/** A port where nothing listens: bound, then closed. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('Redis down at boot', () => {
  it('logs one connection error, then fails the bootstrap naming the URL tried (password hidden) and what to do', async () => {
    const port = await deadPort();
    const logger = new CapturingLogger();
    const consoleError = jest.spyOn(console, 'error');
    const app = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot({
          redis: { url: `redis://app:s3cret-pw@127.0.0.1:${port}/0` },
          prefix: uniquePrefix('boot-down'),
          // Long enough for every connection (storage, queue, worker) to fail and retry more than once.
          connectTimeoutMs: 2_500,
          sweeper: { enabled: false },
        }),
      ],
      providers: E2E_PROVIDERS,
    })
      .setLogger(logger)
      .compile();
    let failure: unknown;
    try {
      await app.init();
    } catch (error) {
      failure = error;
    } finally {
      await app.close().catch(() => undefined);
    }
    const target = `redis://app:***@127.0.0.1:${port}/0`;
    expect(failure).toMatchObject({
      code: 'CONFIGURATION_INVALID',
      option: 'redis',
      message:
        'Redis did not answer a PING within 2500 ms at application bootstrap ' +
        `(at ${target}: connect ECONNREFUSED 127.0.0.1:${port}). Start Redis there, or fix ReactorModule option redis.url ` +
        '(the URL above, with its credentials hidden). connectTimeoutMs sets how long the bootstrap waits.',
    });

    // Before: ~27 "BullMQ worker/queue error ... ECONNREFUSED" lines. Now one, through the app's logger.
    const errors = logger.messages('error');
    expect(errors).toHaveLength(1);
    // Whichever connection failed first (storage client, BullMQ queue or worker) says so.
    expect(errors[0]).toMatch(/^Redis connection error \(nest-reactor (storage client|BullMQ queue|BullMQ worker), /);
    expect(errors[0]).toContain(
      `, ${target}): connect ECONNREFUSED 127.0.0.1:${port}. The module keeps reconnecting; the same error from ` +
        'its other connections (storage, BullMQ queues and workers) is not logged again until a connection is back.',
    );
    expect(logger.messages('warn')).toEqual([]);
    const everything = [...logger.entries.map((e) => e.message), ...consoleError.mock.calls.flat().map(String)];
    expect(everything.join('\n')).not.toContain('s3cret-pw');
    expect(consoleError).not.toHaveBeenCalled();
    consoleError.mockRestore();
  });

  it('logs a new outage again once a connection was back, and other errors every time', () => {
    const logger = new CapturingLogger();
    const log = new RedisConnectionLog(logger, 'redis://127.0.0.1:1');
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    log.report('storage client', refused);
    log.report('BullMQ worker', refused);
    log.report('BullMQ queue', refused);
    log.report('BullMQ worker', new Error('Missing lock for job 1. moveToFinished'));
    log.report('BullMQ worker', new Error('Missing lock for job 1. moveToFinished'));
    log.connected();
    log.connected();
    log.report('BullMQ queue', refused);
    const again =
      ' The module keeps reconnecting; the same error from its other connections (storage, BullMQ queues and workers) is not logged again until a connection is back.';
    expect(logger.entries.map((e) => `${e.level}: ${e.message}`)).toEqual([
      `error: Redis connection error (nest-reactor storage client, redis://127.0.0.1:1): connect ECONNREFUSED 127.0.0.1:1.${again}`,
      'error: BullMQ worker error (nest-reactor): Missing lock for job 1. moveToFinished',
      'error: BullMQ worker error (nest-reactor): Missing lock for job 1. moveToFinished',
      'log: Redis connection back (nest-reactor, redis://127.0.0.1:1).',
      `error: Redis connection error (nest-reactor BullMQ queue, redis://127.0.0.1:1): connect ECONNREFUSED 127.0.0.1:1.${again}`,
    ]);
  });

  it('hides credentials in the target it names', () => {
    expect(redactRedisUrl('rediss://default:p%40ss@cache.example.com:6380/2?family=6')).toBe(
      'rediss://default:***@cache.example.com:6380/2?family=6',
    );
    expect(redactRedisUrl('redis://:only-password@host:6379')).toBe('redis://:***@host:6379');
    expect(redactRedisUrl('redis://host:6379?password=secret')).toBe('redis://host:6379?password=***');
    expect(redactRedisUrl('redis://host:6379')).toBe('redis://host:6379');
    expect(redactRedisUrl('not a url with secret')).toBe(
      '(the redis.url given, not shown: it does not parse as a URL)',
    );
    const connection = new Redis({ host: '10.0.0.7', port: 6390, password: 'secret', lazyConnect: true });
    expect(describeRedisTarget({ connection })).toBe('10.0.0.7:6390 (the connection given as redis.connection)');
    connection.disconnect();
    expect(isConnectionError(Object.assign(new Error('x'), { code: 'ENOTFOUND' }))).toBe(true);
    expect(isConnectionError(new Error('WRONGPASS invalid username-password pair'))).toBe(true);
    expect(isConnectionError(new Error('NOSCRIPT No matching script'))).toBe(false);
  });
});

describe('messages built from other messages', () => {
  it('end each sentence once, whatever the embedded message ends with', () => {
    expect(sentence('Refer to "maxRetriesPerRequest" option for details.')).toBe(
      'Refer to "maxRetriesPerRequest" option for details.',
    );
    expect(sentence('no period')).toBe('no period.');
    expect(sentence('a question?')).toBe('a question?');
    expect(sentence('(quoted.)')).toBe('(quoted.)');
    expect(sentence('  trailing space.  ')).toBe('trailing space.');
    expect(sentence('')).toBe('');
    expect(sentences('One: details.', undefined, false, 'Two', '')).toBe('One: details. Two.');
    expect(errorText('plain')).toBe('plain');
    expect(errorText(new Error(' spaced. '))).toBe('spaced.');
  });

  it('a storage error wrapping ioredis\'s "... for details." ends in one period, not "details.."', async () => {
    const port = await deadPort();
    // maxRetriesPerRequest: 0 makes ioredis fail the command with MaxRetriesPerRequestError, whose
    // message ends in "Refer to "maxRetriesPerRequest" option for details."
    const redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    redis.on('error', () => undefined);
    try {
      const engine = new ReactorEngine({
        storage: new RedisReactorStorage(redis, { keys: new RedisKeys({ prefix: uniquePrefix('details') }) }),
        locks: new MemoryLockManager(),
      });
      const failure = await engine.get('some-run').catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StorageUnavailableError);
      const message = (failure as Error).message;
      expect(message).toContain('option for details. Retry when it is back');
      expect(message).not.toMatch(/\.\./);
    } finally {
      redis.disconnect();
    }
  });
});
