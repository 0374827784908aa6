/**
 * Worker scaling (issue 22): 2 worker processes at least 1.7x one, on steps with 1 ms of CPU.
 *
 * A reactor of 10 steps in a chain, each burning about 1 ms of CPU (a fixed number of iterations
 * of an integer loop, calibrated once in this process from its CPU time, so the work is the same
 * in every process whatever the machine's load) and returning a ~300-byte object. This process is
 * a producer (`workers: false`): it starts the runs with `ReactorClient.start`, in batches of 50,
 * and counts their completions from BullMQ's QueueEvents. N child processes
 * (bench/scaling-worker.ts), each a Nest application context with the module and the same
 * reactor, execute them at worker concurrency 10. N = 1, then 2, each on a fresh prefix, the
 * database flushed between them.
 *
 * Measured: wall time from the first start to the last completion, as steps/s.
 * BENCH_SCALING_RUNS (default 3000) and BENCH_SCALING_CONCURRENCY (default 10) override.
 *
 * Baseline, in the same run: the bare design (bench/bare-design.ts) scaled the same way (the same
 * steps inline in one BullMQ job per run, one fenced checkpoint script each, started by the same
 * kind of producer). On a machine whose cores Redis, the producer and the workers share, its ratio
 * is what the machine allows a durable design; the sides take turns (ours 1, bare 1, ours 2, bare 2).
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, QueueEvents } from 'bullmq';
import Redis from 'ioredis';
import { ReactorClient } from '../lib';
import { BareStore } from './bare-design';
import { fmt } from './harness';
import { benchRedis } from './redis-counter';
import { BARE_SCALING_QUEUE, burn, SCALING_STEPS, scalingModule } from './scaling-worker';

const RUNS = Number(process.env.BENCH_SCALING_RUNS ?? 3_000);
const CONCURRENCY = Number(process.env.BENCH_SCALING_CONCURRENCY ?? 10);
const PROCESSES = [1, 2];
/** ours alone with `BENCH_SCALING_SIDES=ours`. */
const SIDES = (process.env.BENCH_SCALING_SIDES ?? 'ours,bare').split(',') as ScalingSide[];
/** CPU time each step burns. */
const STEP_CPU_MS = 1;
/** Runs started at once by the producer. */
const START_BATCH = 50;
/** A scenario fails when no run completes for this long. */
const STALL_MS = 60_000;
const WORKER_ENTRY = path.join(__dirname, 'scaling-worker.js');

/** nest-reactor, or the bare design with no engine. */
export type ScalingSide = 'ours' | 'bare';

export interface ScalingResult {
  side: ScalingSide;
  processes: number;
  concurrency: number;
  runs: number;
  steps: number;
  /** Iterations of the CPU loop per step (calibrated to {@link STEP_CPU_MS}). */
  workPerStep: number;
  seconds: number;
  stepsPerSecond: number;
}

/** Iterations of {@link burn} that take {@link STEP_CPU_MS} of this process's CPU time (fastest of 5). */
function calibrate(): number {
  const cpuMs = (iterations: number) => {
    const before = process.cpuUsage();
    burn(iterations, 7);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000;
  };
  for (let i = 0; i < 50; i++) burn(100_000, i);
  let iterations = 100_000;
  while (cpuMs(iterations) < 20) iterations *= 2;
  const fastest = Math.min(...Array.from({ length: 5 }, () => cpuMs(iterations)));
  return Math.max(1, Math.round((iterations * STEP_CPU_MS) / fastest));
}

interface WorkerProcess {
  child: ChildProcess;
  exited: Promise<void>;
  ready: Promise<void>;
}

/** A worker process; `ready` resolves when it prints READY (after `app.init()`). */
function spawnWorker(index: number, env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [WORKER_ENTRY], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`scaling worker ${index} not ready after 60 s`)), 60_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`scaling worker ${index} exited (${signal ?? code}) before it was ready`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.trim() === 'READY') {
        clearTimeout(timer);
        resolve();
      } else {
        console.error(`[worker ${index}] ${line}`);
      }
    });
  });
  ready.catch(() => undefined); // awaited by the caller; a worker killed before it is ready is not an error here
  return { child, exited, ready };
}

/** SIGTERM, then wait for the exit (SIGKILL after 20 s). */
async function stopWorker(worker: WorkerProcess): Promise<void> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      worker.child.kill('SIGKILL');
      resolve();
    }, 20_000);
  });
  await Promise.race([worker.exited, killed]);
  clearTimeout(timer);
  await worker.exited;
}

/** The producer of one side: starts a run, and names the queue its completions are counted on. */
interface Producer {
  start(seed: number): Promise<string | undefined>;
  events: { name: string; prefix: string };
  /** Runs not completed at the end (not timed), when the side can tell. */
  notCompleted(runIds: string[]): Promise<number>;
  close(): Promise<void>;
}

async function producerOf(side: ScalingSide, url: string, prefix: string): Promise<Producer> {
  if (side === 'bare') {
    const queue = new Queue(BARE_SCALING_QUEUE, { connection: { url }, prefix });
    const store = new BareStore(url, prefix);
    await queue.waitUntilReady();
    return {
      start: async (seed) => {
        await store.start(queue, 'scaling-bare', seed);
        return undefined;
      },
      events: { name: BARE_SCALING_QUEUE, prefix },
      // One job per run, removed on completion: the completions counted are the runs'.
      notCompleted: async () => 0,
      close: async () => {
        await queue.close();
        store.disconnect();
      },
    };
  }
  const { ScalingModule, ReactorClass } = scalingModule({
    url,
    prefix,
    workers: false,
    concurrency: CONCURRENCY,
    work: 0, // this process executes no step
  });
  const app: INestApplicationContext = await NestFactory.createApplicationContext(ScalingModule, {
    logger: ['error', 'warn'],
  });
  await app.init();
  const client = app.get(ReactorClient);
  return {
    start: async (seed) => (await client.start(ReactorClass, { seed })).runId,
    events: { name: 'nest-reactor', prefix: `${prefix}:{${prefix}:queue}` },
    notCompleted: async (runIds) => {
      let count = 0;
      for (let i = 0; i < runIds.length; i += 100) {
        const views = await Promise.all(runIds.slice(i, i + 100).map((id) => client.get(id)));
        count += views.filter((v) => v?.status !== 'completed').length;
      }
      return count;
    },
    close: () => app.close(),
  };
}

async function scenario(side: ScalingSide, url: string, processes: number, work: number): Promise<ScalingResult> {
  const prefix = `scaling-${side}-${processes}-${randomUUID().slice(0, 8)}`;
  const workers: WorkerProcess[] = [];
  let producer: Producer | undefined;
  let events: QueueEvents | undefined;
  try {
    const active = await producerOf(side, url, prefix);
    producer = active;

    let finished = 0;
    let lastCompletion = 0n;
    let resolveAll!: () => void;
    let rejectAll!: (error: Error) => void;
    const all = new Promise<void>((resolve, reject) => {
      resolveAll = resolve;
      rejectAll = reject;
    });
    all.catch(() => undefined); // awaited below, once the runs are started
    let stall: NodeJS.Timeout | undefined;
    const armStall = () => {
      clearTimeout(stall);
      stall = setTimeout(
        () => rejectAll(new Error(`scaling: no run completed for ${STALL_MS} ms (${finished}/${RUNS} done)`)),
        STALL_MS,
      );
    };
    events = new QueueEvents(active.events.name, { connection: { url }, prefix: active.events.prefix });
    events.on('completed', () => {
      lastCompletion = process.hrtime.bigint();
      if (++finished === RUNS) resolveAll();
      else if (finished < RUNS) armStall();
    });
    events.on('failed', ({ jobId, failedReason }) => console.error(`scaling: job ${jobId} failed: ${failedReason}`));
    await events.waitUntilReady();

    for (let i = 0; i < processes; i++) {
      workers.push(
        spawnWorker(i, {
          BENCH_SCALING_REDIS_URL: url,
          BENCH_SCALING_PREFIX: prefix,
          BENCH_SCALING_CONCURRENCY: String(CONCURRENCY),
          BENCH_SCALING_WORK: String(work),
          BENCH_SCALING_SIDE: side,
        }),
      );
    }
    await Promise.all(workers.map((w) => w.ready));

    const runIds: string[] = [];
    const start = process.hrtime.bigint();
    armStall();
    for (let i = 0; i < RUNS; i += START_BATCH) {
      const ids = await Promise.all(
        Array.from({ length: Math.min(START_BATCH, RUNS - i) }, (_, k) => active.start(i + k)),
      );
      for (const id of ids) if (id !== undefined) runIds.push(id);
    }
    try {
      await all;
    } finally {
      clearTimeout(stall);
    }
    const seconds = Number(lastCompletion - start) / 1e9;

    // Not timed: every run is completed (one job per run, so the count above was the runs').
    const notCompleted = await active.notCompleted(runIds);
    if (notCompleted > 0) throw new Error(`scaling: ${notCompleted} of ${RUNS} runs not completed at the end`);

    const steps = RUNS * SCALING_STEPS;
    return {
      side,
      processes,
      concurrency: CONCURRENCY,
      runs: RUNS,
      steps,
      workPerStep: work,
      seconds,
      stepsPerSecond: steps / seconds,
    };
  } finally {
    await Promise.all(workers.map(stopWorker));
    await events?.close();
    await producer?.close();
  }
}

export async function workerScaling(): Promise<ScalingResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const work = calibrate();
  const results: ScalingResult[] = [];
  try {
    // The sides take turns, so a burst of load from elsewhere does not fall on one side alone.
    for (const processes of PROCESSES) {
      for (const side of SIDES) {
        results.push(await scenario(side, url, processes, work));
        await redis.flushdb();
      }
    }
    return results;
  } finally {
    redis.disconnect();
  }
}

export function printWorkerScaling(results: ScalingResult[]): void {
  const first = results[0];
  console.log(`\n## Worker scaling: 10-step runs, ~${STEP_CPU_MS} ms of CPU per step, ~300-byte results\n`);
  if (first) {
    console.log(
      `${first.runs} runs started by a producer process (workers: false), executed by N worker processes at worker concurrency ${first.concurrency}; ${first.workPerStep} loop iterations per step; ${os.cpus().length} CPUs\n`,
    );
  }
  console.log('| side | worker processes | steps/s | ratio to 1 process |');
  console.log('| --- | --- | --- | --- |');
  const of = (side: ScalingSide, processes: number) =>
    results.find((r) => r.side === side && r.processes === processes);
  for (const r of results) {
    const one = of(r.side, 1);
    const ratio = one ? `${fmt(r.stepsPerSecond / one.stepsPerSecond, 2)}x` : '';
    console.log(
      `| ${r.side === 'ours' ? 'nest-reactor' : 'bare design (no engine)'} | ${r.processes} | ${fmt(r.stepsPerSecond, 0)} | ${ratio} |`,
    );
  }
  console.log('');
  const ratioOf = (side: ScalingSide) => {
    const one = of(side, 1);
    const two = of(side, 2);
    return one && two ? two.stepsPerSecond / one.stepsPerSecond : undefined;
  };
  const ours = ratioOf('ours');
  const bare = ratioOf('bare');
  if (ours !== undefined)
    console.log(
      `- nest-reactor, 2 processes vs 1: ${ours.toFixed(3)}x (target >= 1.7: ${ours >= 1.7 ? 'met' : 'MISSED'})`,
    );
  if (bare !== undefined)
    console.log(
      `- bare design, 2 processes vs 1: ${bare.toFixed(3)}x (what this machine gives a durable design: Redis, the producer and the workers share its ${os.cpus().length} CPUs)`,
    );
  const ours2 = of('ours', 2);
  const bare2 = of('bare', 2);
  if (ours2 && bare2)
    console.log(`- at 2 processes, ours / bare: ${fmt((ours2.stepsPerSecond / bare2.stepsPerSecond) * 100, 0)}%`);
}
