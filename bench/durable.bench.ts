/**
 * Durable runs on Redis and BullMQ (issue: durable runs).
 *
 * Scenario: many runs of a 10-step background reactor (`background: { all: true }`), executed by
 * one worker process (this one) with BullMQ worker concurrency 10. Reported: steps per second and
 * Redis commands per step (every client's, BullMQ's included; a Lua script is one).
 *
 * Baselines, same run, same Redis:
 *  (a) the floor: one checkpoint (the Lua save a step costs) per step, in a loop;
 *  (b) what a user writes instead: a BullMQ chain, one job per step, each job adding the next,
 *      on the same worker concurrency.
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { newRunState } from '../lib/core';
import { defineReactor, type ReactorBuilder } from '../lib/core/definition/builder';
import type { Ref } from '../lib/core/definition/ref';
import { ReactorEngine, runLeaseKey } from '../lib/core';
import { success } from '../lib/core/results/step-outcome';
import { BullMqJobDispatcher } from '../lib/queue/bullmq-job.dispatcher';
import { RedisKeys, RedisLockManager, RedisReactorStorage } from '../lib/storage/redis';
import { fmt } from './harness';
import { benchRedis, CommandCounter } from './redis-counter';

const RUNS = Number(process.env.BENCH_RUNS ?? 500);
const STEPS = 10;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);

export interface DurableResult {
  name: string;
  stepsPerSecond: number;
  commandsPerStep: number;
}

function tenSteps(onDone: () => void) {
  return defineReactor(
    'bench-durable',
    (r: ReactorBuilder<{ seed: number }>) => {
      let prev: Ref<number> = r.input('seed', { type: 'number' });
      for (let i = 0; i < STEPS; i++) {
        const last = i === STEPS - 1;
        prev = r.step(
          `s${i}`,
          ({ x }: { x: number }) => {
            if (last) onDone();
            return success(x + 1);
          },
          { x: prev },
        );
      }
      return prev;
    },
    { background: { all: true }, maxConcurrency: 1 },
  );
}

async function floor(redis: Redis, counter: CommandCounter, prefix: string): Promise<DurableResult> {
  const keys = new RedisKeys({ prefix });
  const storage = new RedisReactorStorage(redis, { keys });
  const locks = new RedisLockManager(redis, { keys });
  const def = tenSteps(() => undefined);
  const n = Math.min(RUNS, 300);
  await counter.begin();
  const start = process.hrtime.bigint();
  for (let run = 0; run < n; run++) {
    const state = newRunState(def, randomUUID(), { seed: 1 }, Date.now());
    state.status = 'running';
    const lease = (await locks.acquire(runLeaseKey(state.runId), 60_000))!;
    for (let i = 0; i < STEPS; i++) {
      state.results[`s${i}`] = i + 1;
      state.completed.push(`s${i}`);
      state.updatedAt = Date.now();
      if (i === STEPS - 1) state.status = 'completed';
      await storage.save(state, { lease, leaseTtlMs: 60_000, releaseLease: i === STEPS - 1 });
    }
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const commands = await counter.end();
  return {
    name: '(a) floor: one Lua checkpoint per step, in a loop',
    stepsPerSecond: (n * STEPS) / seconds,
    commandsPerStep: commands / (n * STEPS),
  };
}

async function bullmqChain(url: string, counter: CommandCounter, prefix: string): Promise<DurableResult> {
  const connection = { url };
  const queue = new Queue('chain', { connection, prefix });
  let finished = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const worker = new Worker(
    'chain',
    async (job) => {
      const { step, x } = job.data as { step: number; x: number };
      const next = x + 1;
      if (step + 1 < STEPS) await queue.add('s', { step: step + 1, x: next }, { removeOnComplete: true });
      else if (++finished === RUNS) resolveAll();
    },
    { connection, prefix, concurrency: CONCURRENCY, autorun: false },
  );
  await worker.waitUntilReady();
  await counter.begin();
  const start = process.hrtime.bigint();
  void worker.run();
  await queue.addBulk(
    Array.from({ length: RUNS }, () => ({ name: 's', data: { step: 0, x: 1 }, opts: { removeOnComplete: true } })),
  );
  await all;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const commands = await counter.end();
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  return {
    name: '(b) hand-written BullMQ chain, one job per step',
    stepsPerSecond: (RUNS * STEPS) / seconds,
    commandsPerStep: commands / (RUNS * STEPS),
  };
}

async function reactor(
  url: string,
  redis: Redis,
  counter: CommandCounter,
  prefix: string,
  checkpointMinIntervalMs = 0,
): Promise<DurableResult> {
  const keys = new RedisKeys({ prefix });
  const storage = new RedisReactorStorage(redis, { keys });
  const locks = new RedisLockManager(redis, { keys });
  const connection = { url };
  const queueName = `runs-${checkpointMinIntervalMs}`;
  const dispatcher = new BullMqJobDispatcher({ connection, prefix, queueName });
  let finished = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const def = tenSteps(() => undefined);
  // reactor.complete is emitted after the run's final save.
  const middleware = [
    { onEvent: (e: { type: string }) => void (e.type === 'reactor.complete' && ++finished === RUNS && resolveAll()) },
  ];
  const engine = new ReactorEngine({ storage, locks, dispatcher, middleware, checkpointMinIntervalMs });
  engine.register(def);
  const worker = new Worker(queueName, async (job) => engine.handleJob(job.data), {
    connection,
    prefix,
    concurrency: CONCURRENCY,
    autorun: false,
  });
  await worker.waitUntilReady();
  await counter.begin();
  const start = process.hrtime.bigint();
  // As the chain baseline enqueues every chain at once, start every run (50 at a time), then work.
  for (let i = 0; i < RUNS; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, RUNS - i) }, () => engine.start(def, { seed: 1 })));
  }
  void worker.run();
  await all;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const commands = await counter.end();
  await worker.close();
  await dispatcher.close();
  return {
    name: checkpointMinIntervalMs
      ? `nest-reactor, checkpointMinIntervalMs ${checkpointMinIntervalMs}`
      : 'nest-reactor: 10-step background reactor (checkpoint every step)',
    stepsPerSecond: (RUNS * STEPS) / seconds,
    commandsPerStep: commands / (RUNS * STEPS),
  };
}

export async function durableRuns(): Promise<DurableResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const counter = new CommandCounter();
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  try {
    const results = [
      await floor(redis, counter, prefix),
      await bullmqChain(url, counter, prefix),
      await reactor(url, redis, counter, prefix),
      await reactor(url, redis, counter, prefix, 100),
    ];
    return results;
  } finally {
    const stale = await redis.keys(`${prefix}*`);
    for (let i = 0; i < stale.length; i += 500) await redis.unlink(...stale.slice(i, i + 500));
    redis.disconnect();
  }
}

export function printDurable(results: DurableResult[]): void {
  const [fl, chain, ours, coalesced] = results;
  console.log(
    `\n## Durable runs on Redis + BullMQ (${RUNS} runs x ${STEPS} steps, worker concurrency ${CONCURRENCY})\n`,
  );
  console.log('| scenario | steps/s | Redis commands per step |');
  console.log('| --- | --- | --- |');
  for (const r of results) console.log(`| ${r.name} | ${fmt(r.stepsPerSecond, 0)} | ${fmt(r.commandsPerStep, 2)} |`);
  console.log('');
  console.log(
    `- round trips per step: ${fmt(ours.commandsPerStep, 2)} (target <= 1.5: ${ours.commandsPerStep <= 1.5 ? 'met' : 'MISSED'})`,
  );
  console.log(
    `- vs the BullMQ chain: ${fmt(ours.stepsPerSecond / chain.stepsPerSecond, 2)}x (target >= 3x: ${ours.stepsPerSecond / chain.stepsPerSecond >= 3 ? 'met' : 'MISSED'})`,
  );
  console.log(
    `- vs the floor: ${fmt((100 * ours.stepsPerSecond) / fl.stepsPerSecond, 0)}% (target >= 40%: ${ours.stepsPerSecond / fl.stepsPerSecond >= 0.4 ? 'met' : 'MISSED'})`,
  );
  if (coalesced) {
    console.log(
      `- with checkpoints coalesced (checkpointMinIntervalMs 100): ${fmt(coalesced.stepsPerSecond / chain.stepsPerSecond, 2)}x the chain, ${fmt(coalesced.commandsPerStep, 2)} commands per step`,
    );
  }
}
