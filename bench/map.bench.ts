/**
 * Fan-out maps on Redis and BullMQ (issue: maps).
 *
 * Scenario: a 10,000-element fan-out map of trivial elements, with batchSize 100 and 1,000, on one
 * worker (this process, BullMQ worker concurrency = batchSize, capped at 100). Reported: elements
 * per second from the start of the run to its completion, and the worker's peak RSS and heap.
 *
 * Baseline, same run, same Redis: `addBulk` of 10,000 jobs processed by a BullMQ worker with the
 * same concurrency, each job doing the same trivial work.
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { defineReactor, type ReactorBuilder } from '../lib/core/definition/builder';
import { ReactorEngine } from '../lib/core';
import { success } from '../lib/core/results/step-outcome';
import { BullMqJobDispatcher } from '../lib/queue/bullmq-job.dispatcher';
import { RedisKeys, RedisLockManager, RedisMapStore, RedisReactorStorage } from '../lib/storage/redis';
import { fmt } from './harness';
import { benchRedis, CommandCounter, printCommandNames } from './redis-counter';

const ELEMENTS = Number(process.env.BENCH_ELEMENTS ?? 10_000);

export interface MapBenchResult {
  name: string;
  batchSize: number;
  concurrency: number;
  elementsPerSecond: number;
  commandsPerElement: number;
  peakRssMb: number;
  peakHeapMb: number;
}

function peakSampler() {
  let rss = 0;
  let heap = 0;
  const sample = () => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  };
  const timer = setInterval(sample, 20);
  sample();
  return () => {
    clearInterval(timer);
    sample();
    return { rssMb: rss / 2 ** 20, heapMb: heap / 2 ** 20 };
  };
}

async function baseline(
  url: string,
  counter: CommandCounter,
  prefix: string,
  concurrency: number,
  batchSize: number,
): Promise<MapBenchResult> {
  const connection = { url };
  const queue = new Queue('plain', { connection, prefix });
  let done = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const worker = new Worker(
    'plain',
    async (job) => {
      const value = (job.data as { n: number }).n * 2;
      if (++done === ELEMENTS) resolveAll();
      return value;
    },
    { connection, prefix, concurrency, autorun: false },
  );
  await worker.waitUntilReady();
  global.gc?.();
  const stop = peakSampler();
  await counter.begin();
  const start = process.hrtime.bigint();
  void worker.run();
  for (let i = 0; i < ELEMENTS; i += 1000) {
    await queue.addBulk(
      Array.from({ length: Math.min(1000, ELEMENTS - i) }, (_, j) => ({
        name: 'e',
        data: { n: i + j },
        opts: { removeOnComplete: true },
      })),
    );
  }
  await all;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const commands = await counter.end();
  printCommandNames(String(batchSize));
  const peak = stop();
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  return {
    name: 'BullMQ addBulk baseline',
    batchSize,
    concurrency,
    elementsPerSecond: ELEMENTS / seconds,
    commandsPerElement: commands / ELEMENTS,
    peakRssMb: peak.rssMb,
    peakHeapMb: peak.heapMb,
  };
}

async function fanOut(
  url: string,
  redis: Redis,
  counter: CommandCounter,
  prefix: string,
  batchSize: number,
  concurrency: number,
): Promise<MapBenchResult> {
  const keys = new RedisKeys({ prefix });
  const storage = new RedisReactorStorage(redis, { keys });
  const locks = new RedisLockManager(redis, { keys });
  const maps = new RedisMapStore(redis, { keys });
  const connection = { url };
  const queueName = `runs-${batchSize}`;
  const dispatcher = new BullMqJobDispatcher({ connection, prefix, queueName });
  const engine = new ReactorEngine({ storage, locks, maps, dispatcher });
  engine.register(
    defineReactor('double', (r: ReactorBuilder<{ n: number }>) =>
      r.step('x2', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) }),
    ),
  );
  const def = defineReactor(`bench-map-${batchSize}`, (r: ReactorBuilder<{ count: number }>) =>
    r.map('double-all', {
      source: ({ count }: { count: number }) => Array.from({ length: count }, (_, i) => i),
      args: { count: r.input('count', { type: 'number' }) },
      element: 'double',
      inputs: (n) => ({ n }),
      fanOut: { batchSize },
      collect: (results) => results.count,
    }),
  );
  const worker = new Worker(queueName, async (job) => engine.handleJob(job.data), {
    connection,
    prefix,
    concurrency,
    autorun: false,
  });
  await worker.waitUntilReady();
  global.gc?.();
  const stop = peakSampler();
  await counter.begin();
  const start = process.hrtime.bigint();
  void worker.run();
  const started = await engine.run(def, { count: ELEMENTS });
  const outcome = await engine.wait(started.runId, { timeoutMs: 600_000, pollMs: 20 });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const commands = await counter.end();
  printCommandNames(String(batchSize));
  const peak = stop();
  if (outcome.status !== 'completed' || outcome.value !== ELEMENTS)
    throw new Error(`map bench ended ${outcome.status}`);
  await worker.close();
  await dispatcher.queue.obliterate({ force: true });
  await dispatcher.close();
  return {
    name: `nest-reactor fan-out map`,
    batchSize,
    concurrency,
    elementsPerSecond: ELEMENTS / seconds,
    commandsPerElement: commands / ELEMENTS,
    peakRssMb: peak.rssMb,
    peakHeapMb: peak.heapMb,
  };
}

export async function mapFanOut(): Promise<MapBenchResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const counter = new CommandCounter();
  const prefix = `bench-map-${randomUUID().slice(0, 8)}`;
  const results: MapBenchResult[] = [];
  try {
    for (const batchSize of [100, 1000]) {
      const concurrency = Math.min(batchSize, 100);
      results.push(await baseline(url, counter, prefix, concurrency, batchSize));
      results.push(await fanOut(url, redis, counter, prefix, batchSize, concurrency));
    }
    return results;
  } finally {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (found.length) await redis.unlink(...found);
    } while (cursor !== '0');
    redis.disconnect();
  }
}

export function printMapFanOut(results: MapBenchResult[]): void {
  console.log(`\n## Fan-out map, ${ELEMENTS} trivial elements, one worker process\n`);
  console.log(
    '| scenario | batchSize | worker concurrency | elements/s | Redis commands per element | peak RSS MB | peak heap MB |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.name} | ${r.batchSize} | ${r.concurrency} | ${fmt(r.elementsPerSecond, 0)} | ${fmt(r.commandsPerElement, 2)} | ${fmt(r.peakRssMb, 0)} | ${fmt(r.peakHeapMb, 0)} |`,
    );
  }
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  for (let i = 0; i + 1 < results.length; i += 2) {
    const [base, ours] = [results[i], results[i + 1]];
    const ratio = ours.elementsPerSecond / base.elementsPerSecond;
    const rss = ours.peakRssMb / base.peakRssMb;
    console.log(
      `- batchSize ${base.batchSize}: ${fmt(ratio, 2)}x raw BullMQ's elements/s (target >= 1.0: ${verdict(ratio >= 1)}), ` +
        `${fmt(ours.commandsPerElement, 2)} commands per element (target <= 2.5: ${verdict(ours.commandsPerElement <= 2.5)}), ` +
        `peak RSS ${fmt(rss, 2)}x BullMQ's (target <= 1.2: ${verdict(rss <= 1.2)})`,
    );
  }
}
