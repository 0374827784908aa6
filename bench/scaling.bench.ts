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
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { QueueEvents } from 'bullmq';
import Redis from 'ioredis';
import { ReactorClient } from '../lib';
import { fmt } from './harness';
import { benchRedis } from './redis-counter';
import { burn, SCALING_STEPS, scalingModule } from './scaling-worker';

const RUNS = Number(process.env.BENCH_SCALING_RUNS ?? 3_000);
const CONCURRENCY = Number(process.env.BENCH_SCALING_CONCURRENCY ?? 10);
const PROCESSES = [1, 2];
/** CPU time each step burns. */
const STEP_CPU_MS = 1;
/** Runs started at once by the producer. */
const START_BATCH = 50;
/** A scenario fails when no run completes for this long. */
const STALL_MS = 60_000;
const WORKER_ENTRY = path.join(__dirname, 'scaling-worker.js');

export interface ScalingResult {
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

async function scenario(url: string, processes: number, work: number): Promise<ScalingResult> {
  const prefix = `scaling-${processes}-${randomUUID().slice(0, 8)}`;
  const workers: WorkerProcess[] = [];
  let app: INestApplicationContext | undefined;
  let events: QueueEvents | undefined;
  try {
    const { ScalingModule, ReactorClass } = scalingModule({
      url,
      prefix,
      workers: false,
      concurrency: CONCURRENCY,
      work: 0, // this process executes no step
    });
    app = await NestFactory.createApplicationContext(ScalingModule, { logger: ['error', 'warn'] });
    await app.init();
    const client = app.get(ReactorClient);

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
    events = new QueueEvents('nest-reactor', { connection: { url }, prefix: `${prefix}:{${prefix}:queue}` });
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
        }),
      );
    }
    await Promise.all(workers.map((w) => w.ready));

    const runIds: string[] = [];
    const start = process.hrtime.bigint();
    armStall();
    for (let i = 0; i < RUNS; i += START_BATCH) {
      const outcomes = await Promise.all(
        Array.from({ length: Math.min(START_BATCH, RUNS - i) }, (_, k) => client.start(ReactorClass, { seed: i + k })),
      );
      for (const outcome of outcomes) runIds.push(outcome.runId);
    }
    try {
      await all;
    } finally {
      clearTimeout(stall);
    }
    const seconds = Number(lastCompletion - start) / 1e9;

    // Not timed: every run is completed (one job per run, so the count above was the runs').
    let notCompleted = 0;
    for (let i = 0; i < runIds.length; i += 100) {
      const views = await Promise.all(runIds.slice(i, i + 100).map((id) => client.get(id)));
      notCompleted += views.filter((v) => v?.status !== 'completed').length;
    }
    if (notCompleted > 0) throw new Error(`scaling: ${notCompleted} of ${RUNS} runs not completed at the end`);

    const steps = RUNS * SCALING_STEPS;
    return {
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
    await app?.close();
  }
}

export async function workerScaling(): Promise<ScalingResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const work = calibrate();
  const results: ScalingResult[] = [];
  try {
    for (const processes of PROCESSES) {
      results.push(await scenario(url, processes, work));
      await redis.flushdb();
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
  console.log('| worker processes | steps/s | ratio to 1 process |');
  console.log('| --- | --- | --- |');
  const one = results.find((r) => r.processes === 1);
  for (const r of results) {
    const ratio = one ? `${fmt(r.stepsPerSecond / one.stepsPerSecond, 2)}x` : '';
    console.log(`| ${r.processes} | ${fmt(r.stepsPerSecond, 0)} | ${ratio} |`);
  }
  console.log('');
  const two = results.find((r) => r.processes === 2);
  if (one && two) {
    const ratio = two.stepsPerSecond / one.stepsPerSecond;
    console.log(`- 2 processes vs 1: ${ratio.toFixed(2)}x (target >= 1.7: ${ratio >= 1.7 ? 'met' : 'MISSED'})`);
  }
}
