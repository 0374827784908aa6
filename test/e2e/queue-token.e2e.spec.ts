import type { Queue } from 'bullmq';
import type Redis from 'ioredis';
import { bullMqPrefix, reactorQueueToken, REACTOR_QUEUE_NAME } from '../../lib/queue/queue.constants';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { BackgroundAllReactor, createRedisApp, quitAndWait } from './e2e.fixtures';

describe("the module's BullMQ queue is reachable (Bull Board, metrics)", () => {
  const prefix = uniquePrefix('e2e-queue-token');
  let redis: Redis;

  beforeAll(() => {
    redis = createTestRedis();
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('reactorQueueToken() (= @InjectQueue(REACTOR_QUEUE_NAME)) gives the Queue the module uses, with its prefix', async () => {
    // A producer only (no workers): the job a background run queues stays in the queue.
    const { app, client } = await createRedisApp(prefix, { sweeper: { enabled: false }, workers: false });
    try {
      const queue = app.get<Queue>(reactorQueueToken());
      expect(queue.name).toBe(REACTOR_QUEUE_NAME);
      expect(queue.opts.prefix).toBe(bullMqPrefix(prefix));
      const started = await client.start(BackgroundAllReactor, { word: 'queue' });
      const [job] = await queue.getJobs(['waiting']);
      expect(job?.data).toMatchObject({ kind: 'resume', runId: started.runId, reactorName: 'e2e-bg-all' });
    } finally {
      await app.close();
    }
  });
});
