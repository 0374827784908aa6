/**
 * The user's path on Redis (issue: durable steps near the speed of Redis).
 *
 * Ours: a Nest application context with `ReactorModule.forRoot({ redis })`, a `@Reactor` of N
 * steps each returning a ~300-byte object, runs started with `ReactorClient.start` and executed by
 * the module's own BullMQ worker in this process, every step checkpointed.
 *
 * Baseline: what a user writes by hand instead, on the same BullMQ and ioredis copies, in the same
 * process, at the same worker concurrency: one BullMQ job per step that computes the same object,
 * stores it with HSET in the run's hash, and adds the next step's job.
 *
 * For each of 10-step and 100-step runs at worker concurrency 1, 10 and 50: steps/s, Redis
 * commands per step (every client's; a Lua script is one), Node CPU and Redis CPU per step (µs),
 * peak RSS, and the ratio ours / baseline.
 */
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker } from 'bullmq';
import Redis from 'ioredis';
import {
  createAesGcmInputCipher,
  Reactor,
  ReactorClient,
  ReactorModule,
  RedisKeys,
  success,
  type ReactorBuilder,
  type Ref,
} from '../lib';
import { BareStore } from './bare-design';
import { fmt, stepResult } from './harness';
import { benchRedis, CommandCounter } from './redis-counter';

const CONCURRENCIES = (process.env.BENCH_CONCURRENCIES ?? '1,10,50').split(',').map(Number);
const LENGTHS = (process.env.BENCH_LENGTHS ?? '10,100').split(',').map(Number);
/**
 * Which sides to run (`ours` alone for a CPU profile: `node --cpu-prof`); `pipelined` adds ours on a
 * connection with ioredis' `enableAutoPipelining` (passed as `redis: { connection }`); `encrypted` adds ours with
 * `encryptInputs` and an AES-GCM `inputCipher` (the cost of sealing).
 */
const SIDES = (process.env.BENCH_SIDES ?? 'bare,chain,ours').split(',');
/** Steps per scenario (runs = STEPS_PER_SCENARIO / length). */
const STEPS_PER_SCENARIO = Number(process.env.BENCH_STEPS ?? 10_000);
/**
 * Steps of the unmeasured warm-up of each side (10-step runs at worker concurrency 10) before the
 * measured scenarios, so that no side is measured while its code is still being compiled
 * (`BENCH_WARMUP_STEPS=0` skips it).
 */
const WARMUP_STEPS = Number(process.env.BENCH_WARMUP_STEPS ?? 5_000);
/** Steps of the scenario being run (the warm-up's, then {@link STEPS_PER_SCENARIO}). */
let scenarioSteps = STEPS_PER_SCENARIO;
/**
 * Rounds of each scenario (`BENCH_ROUNDS`, default 1): the sides take turns in every round, each
 * side's row is its median round (by steps/s), and ours / bare is the median of the rounds' own
 * ratios (each measured minutes apart at most), so a burst of load from elsewhere on shared cores
 * moves one round, not the figure.
 */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
/** Each round's ours / bare (steps/s) per scenario, `<length>x<concurrency>`, when rounds > 1. */
const pairedRatios = new Map<string, number[]>();

export interface UserPathResult {
  side: 'ours' | 'chain' | 'bare' | 'encrypted' | 'pipelined';
  length: number;
  concurrency: number;
  steps: number;
  stepsPerSecond: number;
  commandsPerStep: number;
  /** Bytes Redis received per step (the server's `total_net_input_bytes`, every client's). */
  bytesPerStep: number;
  nodeCpuUsPerStep: number;
  redisCpuUsPerStep: number;
  peakRssMb: number;
}

async function redisReadings(redis: Redis): Promise<{ cpu: number; bytesIn: number }> {
  const info = await redis.info();
  const read = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return { cpu: read('used_cpu_sys') + read('used_cpu_user'), bytesIn: read('total_net_input_bytes') };
}

/** Samples the process's RSS every 20 ms; `stop` returns the peak in MB. */
function rssSampler(): { stop(): number } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage.rss()) / 1024 / 1024;
    },
  };
}

interface Measure {
  begin(): Promise<void>;
  end(steps: number): Promise<Omit<UserPathResult, 'side' | 'length' | 'concurrency'>>;
}

function measurer(redis: Redis, counter: CommandCounter): Measure {
  let start = 0n;
  let cpu = process.cpuUsage();
  let redisAtBegin = { cpu: 0, bytesIn: 0 };
  let rss: { stop(): number };
  return {
    async begin() {
      global.gc?.();
      redisAtBegin = await redisReadings(redis);
      await counter.begin();
      rss = rssSampler();
      cpu = process.cpuUsage();
      start = process.hrtime.bigint();
    },
    async end(steps) {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const used = process.cpuUsage(cpu);
      const peakRssMb = rss.stop();
      // The INFO below is this measurement's own: counted before it is sent.
      const commands = await counter.end();
      const redisAtEnd = await redisReadings(redis);
      return {
        steps,
        stepsPerSecond: steps / seconds,
        commandsPerStep: commands / steps,
        bytesPerStep: (redisAtEnd.bytesIn - redisAtBegin.bytesIn) / steps,
        nodeCpuUsPerStep: (used.user + used.system) / steps,
        redisCpuUsPerStep: ((redisAtEnd.cpu - redisAtBegin.cpu) * 1e6) / steps,
        peakRssMb,
      };
    },
  };
}

async function chain(
  url: string,
  measure: Measure,
  prefix: string,
  length: number,
  concurrency: number,
): Promise<UserPathResult> {
  const runs = Math.max(1, Math.floor(scenarioSteps / length));
  const connection = { url };
  const queueName = `chain-${length}-${concurrency}`;
  const queue = new Queue(queueName, { connection, prefix });
  const store = new Redis(url, { maxRetriesPerRequest: null });
  let finished = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const worker = new Worker(
    queueName,
    async (job) => {
      const { run, step } = job.data as { run: string; seed: number; step: number };
      const result = stepResult(job.data.seed as number, step);
      await store.hset(`${prefix}:chain:{${run}}`, `s${step}`, JSON.stringify(result));
      if (step + 1 < length) {
        await queue.add('s', { run, seed: job.data.seed, step: step + 1 }, { removeOnComplete: true });
      } else if (++finished === runs) resolveAll();
    },
    { connection, prefix, concurrency, autorun: false },
  );
  await worker.waitUntilReady();
  await queue.waitUntilReady();
  await measure.begin();
  void worker.run();
  for (let i = 0; i < runs; i += 500) {
    await queue.addBulk(
      Array.from({ length: Math.min(500, runs - i) }, (_, k) => ({
        name: 's',
        data: { run: randomUUID(), seed: i + k, step: 0 },
        opts: { removeOnComplete: true },
      })),
    );
  }
  await all;
  const measured = await measure.end(runs * length);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  store.disconnect();
  return { side: 'chain', length, concurrency, ...measured };
}

/** The bare design (bench/bare-design.ts): the floor the engine is measured against. */
async function bare(
  url: string,
  measure: Measure,
  prefix: string,
  length: number,
  concurrency: number,
): Promise<UserPathResult> {
  const runs = Math.max(1, Math.floor(scenarioSteps / length));
  const connection = { url };
  const queueName = `bare-${length}-${concurrency}`;
  const queue = new Queue(queueName, { connection, prefix });
  const store = new BareStore(url, prefix);
  const execute = store.processor(length, stepResult);
  let finished = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const worker = new Worker(
    queueName,
    async (job) => {
      await execute(job);
      if (++finished === runs) resolveAll();
    },
    { connection, prefix, concurrency, autorun: false },
  );
  await worker.waitUntilReady();
  await queue.waitUntilReady();
  await measure.begin();
  void worker.run();
  for (let i = 0; i < runs; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, runs - i) }, (_, k) => store.start(queue, `bare-${length}`, i + k)),
    );
  }
  await all;
  const measured = await measure.end(runs * length);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  store.disconnect();
  return { side: 'bare', length, concurrency, ...measured };
}

function reactorOf(name: string, length: number, encryptInputs: boolean, lastStepRan: () => void = () => {}) {
  @Reactor(name, { maxConcurrency: 1, encryptInputs })
  class UserPathReactor {
    build(r: ReactorBuilder<{ seed: number }>) {
      const seed = r.input('seed', { type: 'number' });
      let prev: Ref<unknown> = seed;
      for (let i = 0; i < length; i++) {
        const step = i;
        const last = i === length - 1;
        prev = r.step(
          `s${i}`,
          ({ seed: s }: { seed: number; prev?: unknown }) => {
            if (last) lastStepRan();
            return success(stepResult(s, step));
          },
          { seed, prev },
        );
      }
      return prev;
    }
  }
  return UserPathReactor;
}

async function ours(
  url: string,
  measure: Measure,
  prefix: string,
  length: number,
  concurrency: number,
  encrypted: boolean,
  pipelined = false,
): Promise<UserPathResult> {
  const runs = Math.max(1, Math.floor(scenarioSteps / length));
  let lastSteps = 0;
  let resolveLastSteps!: () => void;
  const lastStepsRan = new Promise<void>((r) => (resolveLastSteps = r));
  const ReactorClass = reactorOf(
    `user-path-${length}`,
    length,
    encrypted,
    () => void (++lastSteps === runs && resolveLastSteps()),
  );
  const connection = pipelined ? new Redis(url, { maxRetriesPerRequest: null, enableAutoPipelining: true }) : undefined;
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: connection ? { connection } : { url },
        prefix: encrypted ? `${prefix}-enc` : prefix,
        workerConcurrency: concurrency,
        inputCipher: encrypted ? createAesGcmInputCipher({ keys: { k1: randomBytes(32) }, current: 'k1' }) : undefined,
        sweeper: { enabled: false },
      }),
    ],
    providers: [ReactorClass],
  })
  class BenchModule {}
  const app: INestApplicationContext = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  await app.init();
  // Completion, counted as the bare design counts its own (in this process, at no cost to the
  // side measured): every run's last step ran, then its final save (one round trip after it) left
  // the index of live runs empty. A listener on BullMQ's event stream, used before, cost ours about
  // 46 µs of Node CPU per run (its XREADs and parsing) that the bare design did not pay.
  const moduleprefix = encrypted ? `${prefix}-enc` : prefix;
  const indexes = new RedisKeys({ prefix: moduleprefix }).allActiveIndexKeys();
  const poller = new Redis(url, { maxRetriesPerRequest: null });
  const liveRuns = async () =>
    Number(
      await poller.eval(
        'local n = 0 for i = 1, #KEYS do n = n + redis.call("ZCARD", KEYS[i]) end return n',
        indexes.length,
        ...indexes,
      ),
    );
  const client = app.get(ReactorClient);
  await measure.begin();
  for (let i = 0; i < runs; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, runs - i) }, (_, k) => client.start(ReactorClass, { seed: i + k })),
    );
  }
  await lastStepsRan;
  while ((await liveRuns()) > 0) await new Promise((r) => setImmediate(r));
  const measured = await measure.end(runs * length);
  poller.disconnect();
  await app.close();
  connection?.disconnect();
  return { side: encrypted ? 'encrypted' : pipelined ? 'pipelined' : 'ours', length, concurrency, ...measured };
}

export async function userPath(): Promise<UserPathResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const counter = new CommandCounter();
  const measure = measurer(redis, counter);
  // The module's default prefix, for every side: the database is flushed after each scenario.
  const prefix = 'reactor';
  const results: UserPathResult[] = [];
  try {
    if (WARMUP_STEPS > 0) {
      scenarioSteps = WARMUP_STEPS;
      if (SIDES.includes('bare')) await bare(url, measure, prefix, 10, 10);
      if (SIDES.includes('chain')) await chain(url, measure, prefix, 10, 10);
      if (SIDES.some((side) => side !== 'bare' && side !== 'chain')) await ours(url, measure, prefix, 10, 10, false);
      await redis.flushdb();
      scenarioSteps = STEPS_PER_SCENARIO;
    }
    for (const length of LENGTHS) {
      for (const concurrency of CONCURRENCIES) {
        const rounds: UserPathResult[][] = [];
        const runs: Array<[UserPathResult['side'], () => Promise<UserPathResult>]> = [
          ['bare', () => bare(url, measure, prefix, length, concurrency)],
          ['chain', () => chain(url, measure, prefix, length, concurrency)],
          ['ours', () => ours(url, measure, prefix, length, concurrency, false)],
          ['encrypted', () => ours(url, measure, prefix, length, concurrency, true)],
          ['pipelined', () => ours(url, measure, prefix, length, concurrency, false, true)],
        ];
        const wanted = runs.filter(([side]) => SIDES.includes(side));
        for (let round = 0; round < ROUNDS; round++) {
          // Each round starts with another side (bare, chain, ours; then chain, ours, bare; ...): no
          // side always runs first in a clean process or last after the others' garbage.
          const one: UserPathResult[] = [];
          for (let k = 0; k < wanted.length; k++) {
            one.push(await wanted[(k + round) % wanted.length][1]());
            await redis.flushdb();
          }
          rounds.push(one);
        }
        // Each side's median round; the paired ratios kept for the summary.
        for (const [side] of wanted) {
          const bySpeed = rounds
            .map((one) => one.find((r) => r.side === side)!)
            .sort((a, b) => a.stepsPerSecond - b.stepsPerSecond);
          results.push(bySpeed[Math.floor((bySpeed.length - 1) / 2)]);
        }
        if (ROUNDS > 1 && SIDES.includes('ours') && SIDES.includes('bare')) {
          pairedRatios.set(
            `${length}x${concurrency}`,
            rounds.map((one) => {
              const o = one.find((r) => r.side === 'ours')!;
              const b = one.find((r) => r.side === 'bare')!;
              return o.stepsPerSecond / b.stepsPerSecond;
            }),
          );
        }
      }
    }
    return results;
  } finally {
    redis.disconnect();
  }
}

const SIDE_NAMES = {
  ours: 'nest-reactor',
  encrypted: 'nest-reactor, encryptInputs',
  pipelined: 'nest-reactor, ioredis auto-pipelining',
  chain: 'hand-written chain',
  bare: 'bare design (no engine)',
} as const;

export function printUserPath(results: UserPathResult[]): void {
  console.log(`\n## The user's path on Redis: ReactorModule.forRoot + ReactorClient.start, ~300-byte results\n`);
  if (ROUNDS > 1)
    console.log(`${ROUNDS} rounds per scenario, the sides in turn; each row is that side's median round.\n`);
  console.log(
    '| steps per run | worker concurrency | side | steps/s | commands per run | bytes to Redis per step | Node CPU µs/step | Redis CPU µs/step | peak RSS MB |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.length} | ${r.concurrency} | ${SIDE_NAMES[r.side]} | ${fmt(r.stepsPerSecond, 0)} | ${fmt(r.commandsPerStep * r.length, 1)} | ${fmt(r.bytesPerStep, 0)} | ${fmt(r.nodeCpuUsPerStep, 1)} | ${fmt(r.redisCpuUsPerStep, 1)} | ${fmt(r.peakRssMb, 0)} |`,
    );
  }
  console.log('');
  const find = (side: string, length: number, concurrency: number) =>
    results.find((r) => r.side === side && r.length === length && r.concurrency === concurrency);
  const ratio = (a: UserPathResult | undefined, b: UserPathResult | undefined, pick: (r: UserPathResult) => number) =>
    a && b ? pick(a) / pick(b) : undefined;
  const steps = (r: UserPathResult) => r.stepsPerSecond;
  if (SIDES.includes('ours') && SIDES.includes('bare')) {
    console.log(
      `| steps per run | worker concurrency | ours / bare (steps/s)${ROUNDS > 1 ? ', median of the rounds’ ratios (each round)' : ''} | ours / chain | bytes per step, ours / bare |`,
    );
    console.log('| --- | --- | --- | --- | --- |');
    let worst = Infinity;
    let worstBytes = 0;
    for (const length of LENGTHS) {
      for (const c of CONCURRENCIES) {
        const o = find('ours', length, c);
        const paired = pairedRatios.get(`${length}x${c}`);
        const toBare = paired
          ? [...paired].sort((a, b) => a - b)[Math.floor((paired.length - 1) / 2)]
          : ratio(o, find('bare', length, c), steps);
        const toChain = ratio(o, find('chain', length, c), steps);
        const bytes = ratio(o, find('bare', length, c), (r) => r.bytesPerStep);
        if (toBare !== undefined) worst = Math.min(worst, toBare);
        if (bytes !== undefined) worstBytes = Math.max(worstBytes, bytes);
        const pct = (x: number | undefined) => (x === undefined ? '' : `${fmt(x * 100, 0)}%`);
        const times = (x: number | undefined) => (x === undefined ? '' : `${fmt(x, 2)}x`);
        const each = paired ? ` (${paired.map((x) => pct(x)).join(', ')})` : '';
        console.log(`| ${length} | ${c} | ${pct(toBare)}${each} | ${times(toChain)} | ${times(bytes)} |`);
      }
    }
    console.log('');
    console.log(
      `- worst ours / bare: ${fmt(worst * 100, 0)}% (target >= 70%: ${worst >= 0.7 ? 'met' : 'MISSED'}); worst bytes per step ours / bare: ${fmt(worstBytes, 2)}x (target <= 1.2: ${worstBytes <= 1.2 ? 'met' : 'MISSED'})`,
    );
  }
  for (const length of LENGTHS) {
    if (!SIDES.includes('encrypted')) continue;
    const sealing = CONCURRENCIES.map((c) => {
      const e = find('encrypted', length, c);
      const o = find('ours', length, c);
      return e && o ? `${fmt(e.stepsPerSecond / o.stepsPerSecond, 2)}x at ${c}` : '';
    });
    console.log(`- ${length}-step runs with encryptInputs vs without: ${sealing.join(', ')}`);
  }
  for (const length of LENGTHS) {
    const ours = results.filter((r) => r.side === 'ours' && r.length === length);
    if (ours.length === 0) continue;
    const worst = Math.max(...ours.map((r) => r.commandsPerStep * r.length));
    console.log(`- commands per ${length}-step run (ours, every client's, BullMQ's included): ${fmt(worst, 1)}`);
  }
}
