import { Queue } from 'bullmq';
import type Redis from 'ioredis';
import type { ResumeJob } from '../../lib/core/ports/job-dispatcher.port';
import { resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import { BullMqJobDispatcher } from '../../lib/queue/bullmq-job.dispatcher';
import { bullMqPrefix, REACTOR_QUEUE_NAME } from '../../lib/queue/queue.constants';
import { bullMqQueueOptions } from '../../lib/queue/reactor-queue.imports';
import { ReactorQueues } from '../../lib/queue/reactor-queues';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from '../setup/redis';

describe('BullMqJobDispatcher', () => {
  const prefix = uniquePrefix('dispatcher');
  let redis: Redis;
  let queue: Queue;

  beforeAll(() => {
    redis = createTestRedis();
    queue = new Queue(REACTOR_QUEUE_NAME, { connection: redis, prefix });
  });

  afterAll(async () => {
    await queue.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  afterEach(async () => {
    await queue.obliterate({ force: true });
  });

  it('adds one job per dispatch: name = kind, data = identity only, retries and retention set', async () => {
    const dispatcher = new BullMqJobDispatcher(queue, { jobRetryCount: 3 });

    await dispatcher.dispatch({ kind: 'resume', runId: 'r1', reactorName: 'checkout', snoozes: undefined });

    const [job] = await queue.getJobs(['waiting']);
    expect(job.name).toBe('resume');
    expect(job.data).toEqual({ kind: 'resume', runId: 'r1', reactorName: 'checkout' });
    expect(job.opts).toMatchObject({
      attempts: 4,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: { count: 1000 },
    });
    expect(job.opts.delay ?? 0).toBe(0);
    expect(await dispatcher.pending()).toBe(1);
  });

  it('a dedupeId adds the job once while it is pending: another dispatch resolves to false, adding nothing', async () => {
    const dispatcher = new BullMqJobDispatcher(queue);
    const job = { kind: 'resume' as const, runId: 'r-dedupe', reactorName: 'checkout' };

    const first = await dispatcher.dispatch(job, { dedupeId: 'recover-r-dedupe' });
    expect(first).toEqual(expect.stringMatching(/^recover-r-dedupe-/));
    expect(await dispatcher.dispatch(job, { dedupeId: 'recover-r-dedupe' })).toBe(false);
    expect(await dispatcher.dispatch(job, { dedupeId: 'recover-r-dedupe', delayMs: 5000 })).toBe(false);
    expect(await dispatcher.pending()).toBe(1);
    // Without a dedupeId a job is always added (a snooze, a retry).
    expect(typeof (await dispatcher.dispatch(job))).toBe('string');

    // Once the pending job is gone (here removed; completed or failed alike), the id is free again.
    await (await queue.getJob(first as string))!.remove();
    const again = await dispatcher.dispatch(job, { dedupeId: 'recover-r-dedupe' });
    expect(again).toEqual(expect.stringMatching(/^recover-r-dedupe-/));
    expect(again).not.toBe(first);
    expect(await dispatcher.pending()).toBe(2);
  });

  it('delays a job when asked, and keeps the snooze count and map identity', async () => {
    const dispatcher = new BullMqJobDispatcher(queue, { jobRetryCount: 0 });

    await dispatcher.dispatch({ kind: 'resume', runId: 'r2', reactorName: 'checkout', snoozes: 2 }, { delayMs: 5000 });
    await dispatcher.dispatch({ kind: 'map-element', runId: 'r3', reactorName: 'import', mapId: 'm', index: 7 });

    const [delayed] = await queue.getJobs(['delayed']);
    expect(delayed.opts.delay).toBe(5000);
    expect(delayed.opts.attempts).toBe(1);
    expect(delayed.data).toEqual({ kind: 'resume', runId: 'r2', reactorName: 'checkout', snoozes: 2 });
    const [element] = await queue.getJobs(['waiting']);
    expect(element.name).toBe('map-element');
    expect(element.data).toEqual({ kind: 'map-element', runId: 'r3', reactorName: 'import', mapId: 'm', index: 7 });
    // Two jobs for one run are fine: the second delivery finds the lease held and snoozes.
    await dispatcher.dispatch({ kind: 'resume', runId: 'r2', reactorName: 'checkout' });
    expect(await dispatcher.pending()).toBe(3);
  });

  it('keeps the counters a worker reads back (snoozes, contentions, deferrals) and the async unit marker', async () => {
    const dispatcher = new BullMqJobDispatcher(queue, { jobRetryCount: 0 });

    const counted: ResumeJob = {
      kind: 'resume',
      runId: 'p/score',
      reactorName: 'p::score',
      unit: true,
      snoozes: 1,
      contentions: 3,
      deferrals: 2,
    };
    await dispatcher.dispatch(counted);

    const [job] = await queue.getJobs(['waiting']);
    // `contentions` caps the snoozes of a run waiting for its lock (lockSnoozeMaxAttempts): a job
    // that lost it would wait forever.
    expect(job.data).toEqual(counted);
  });

  it('dispatchMany adds the jobs in one bulk, with the same options', async () => {
    const dispatcher = new BullMqJobDispatcher(queue, { jobRetryCount: 1 });
    const jobs = [0, 1, 2].map((index) => ({
      kind: 'map-element' as const,
      runId: 'r5',
      reactorName: 'import',
      mapId: 'm5',
      index,
    }));

    await dispatcher.dispatchMany(jobs, { delayMs: 1000 });
    await dispatcher.dispatchMany([]);

    const delayed = await queue.getJobs(['delayed']);
    expect(delayed.map((j) => j.data.index).sort()).toEqual([0, 1, 2]);
    expect(delayed.every((j) => j.opts.attempts === 2 && j.opts.delay === 1000 && j.name === 'map-element')).toBe(true);
  });

  it("given ReactorQueues, sends each job to its reactor's queue with its priority (dispatch and dispatchMany)", async () => {
    const queues = new ReactorQueues(queue, (name) => new Queue(name, { connection: redis, prefix }));
    try {
      // Before the routing is known every job goes to the default queue.
      const dispatcher = new BullMqJobDispatcher(queues);
      await dispatcher.dispatch({ kind: 'resume', runId: 'early', reactorName: 'import' });
      queues.route({
        routes: new Map([
          ['import', { queue: 'slow', priority: 4 }],
          ['urgent', { priority: 1 }],
        ]),
        queues: new Map([['slow', { concurrency: 2 }]]),
      });
      expect(queues.namedQueues()).toEqual([{ name: 'slow', concurrency: 2 }]);
      const slow = queues.get('slow')!;

      await dispatcher.dispatch({ kind: 'resume', runId: 'r6', reactorName: 'import' }, { dedupeId: 'recover-r6' });
      await dispatcher.dispatch({ kind: 'resume', runId: 'r7', reactorName: 'urgent' });
      await dispatcher.dispatch({ kind: 'resume', runId: 'r8', reactorName: 'checkout' });
      await dispatcher.dispatchMany(
        [0, 1].map((index) => ({
          kind: 'map-element' as const,
          runId: 'r9',
          reactorName: 'import',
          mapId: 'm9',
          index,
        })),
      );

      const inSlow = await slow.getJobs(['prioritized']);
      expect(inSlow.map((j) => j.data.runId).sort()).toEqual(['r6', 'r9', 'r9']);
      expect(inSlow.every((j) => j.opts.priority === 4)).toBe(true);
      const r6 = inSlow.find((j) => j.data.runId === 'r6');
      expect(r6?.id).toMatch(/^recover-r6-/);
      expect(r6?.opts.deduplication).toEqual({ id: 'recover-r6' });
      const inDefault = await queue.getJobs(['waiting', 'prioritized']);
      expect(inDefault.map((j) => [j.data.runId, j.opts.priority ?? 0]).sort()).toEqual([
        ['early', 0],
        ['r7', 1],
        ['r8', 0],
      ]);
      expect(await dispatcher.pending()).toBe(6);
    } finally {
      await queues.closeNamed(() => undefined);
    }
    expect(queues.get('slow')?.closing).toBeDefined();
    expect(queue.closing).toBeUndefined();
  });

  it('leaves a queue it was given open on close', async () => {
    const dispatcher = new BullMqJobDispatcher(queue);
    await dispatcher.close();
    expect(queue.closing).toBeUndefined();
  });

  it('without Nest, creates its own queue from connection settings and closes it', async () => {
    const own = `${prefix}own`;
    const dispatcher = new BullMqJobDispatcher({ connection: { url: redisUrl() }, prefix: own });
    try {
      await dispatcher.dispatch({ kind: 'resume', runId: 'r4', reactorName: 'checkout' });
      expect(dispatcher.queue.name).toBe(REACTOR_QUEUE_NAME);
      expect(await dispatcher.pending()).toBe(1);
      expect(await redis.exists(`${own}:${REACTOR_QUEUE_NAME}:meta`)).toBe(1);
    } finally {
      await dispatcher.close();
    }
    expect(dispatcher.queue.closing).toBeDefined();
  });
});

describe('bullMqQueueOptions', () => {
  it('gives BullMQ the URL (it owns those connections) and a hash-tagged prefix under the module prefix', () => {
    const options = resolveReactorModuleOptions({ redis: { url: 'redis://cache:6380/2' }, prefix: 'orders' });
    expect(bullMqQueueOptions(options)).toEqual({
      connection: { url: 'redis://cache:6380/2' },
      prefix: 'orders:{orders:queue}',
      defaultJobOptions: { removeOnComplete: true, removeOnFail: { count: 1000 } },
    });
    expect(bullMqPrefix('orders')).toBe('orders:{orders:queue}');
  });

  it("gives BullMQ the application's connection itself (shared, never closed by BullMQ)", () => {
    const connection = { defineCommand() {}, duplicate() {} };
    const options = resolveReactorModuleOptions({ redis: { connection } });
    expect(bullMqQueueOptions(options).connection).toBe(connection);
  });
});
