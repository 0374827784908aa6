/**
 * A worker process of the `scaling` benchmark (bench/scaling.bench.ts), and the reactor both sides
 * of it declare.
 *
 * Run as a child process (`node .bench-build/bench/scaling-worker.js`) it boots a Nest application
 * context with `ReactorModule.forRoot` and the scaling reactor, its BullMQ worker consuming the
 * module's queue, prints `READY` on stdout once `app.init()` is done, and closes the application on
 * SIGTERM. Its settings come from the environment: BENCH_SCALING_REDIS_URL, BENCH_SCALING_PREFIX,
 * BENCH_SCALING_CONCURRENCY (worker concurrency) and BENCH_SCALING_WORK (iterations of CPU work
 * per step, calibrated once by the parent so that every process burns the same work). With
 * BENCH_SCALING_SIDE=bare it runs the bare design instead (bench/bare-design.ts): a BullMQ worker on
 * {@link BARE_SCALING_QUEUE} executing the same steps inline, one fenced checkpoint script each.
 */
import 'reflect-metadata';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Worker } from 'bullmq';
import { Reactor, ReactorModule, success, type ReactorBuilder, type Ref } from '../lib';
import { BareStore } from './bare-design';
import { stepResult } from './harness';

export const SCALING_REACTOR = 'scaling-10';
export const SCALING_STEPS = 10;
/** The queue of the bare design's side (its keys under the scenario's prefix). */
export const BARE_SCALING_QUEUE = 'scaling-bare';

/** A step's result: a ~300-byte object with the checksum of `work` iterations of CPU. */
export function scalingStep(work: number, seed: number, step: number): Record<string, unknown> {
  return stepResult(seed, step, { checksum: burn(work, seed * 31 + step) });
}

/**
 * CPU work: `iterations` rounds of xorshift32, with no allocation and no I/O. The result goes into
 * the step's value, so the loop cannot be optimised away.
 */
export function burn(iterations: number, seed: number): number {
  let x = seed | 0 || 1;
  for (let i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
  }
  return x;
}

/** The reactor: {@link SCALING_STEPS} steps in a chain, each burning `work` iterations of CPU. */
export function scalingReactor(work: number) {
  @Reactor(SCALING_REACTOR, { maxConcurrency: 1 })
  class ScalingReactor {
    build(r: ReactorBuilder<{ seed: number }>) {
      const seed = r.input('seed', { type: 'number' });
      let prev: Ref<unknown> = seed;
      for (let i = 0; i < SCALING_STEPS; i++) {
        const step = i;
        prev = r.step(`s${i}`, ({ seed: s }: { seed: number; prev?: unknown }) => success(scalingStep(work, s, step)), {
          seed,
          prev,
        });
      }
      return prev;
    }
  }
  return ScalingReactor;
}

export interface ScalingModuleOptions {
  url: string;
  prefix: string;
  /** Consume jobs in this process (`false`: a producer that only starts runs). */
  workers: boolean;
  concurrency: number;
  work: number;
}

/** The application module of either side, and the reactor class it registers. */
export function scalingModule(options: ScalingModuleOptions) {
  const ReactorClass = scalingReactor(options.work);
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: { url: options.url },
        prefix: options.prefix,
        workers: options.workers,
        workerConcurrency: options.concurrency,
        sweeper: { enabled: false },
      }),
    ],
    providers: [ReactorClass],
  })
  class ScalingModule {}
  return { ScalingModule, ReactorClass };
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`scaling worker: ${name} is not set`);
  return value;
}

/** On SIGTERM: `close`, then exit (1 when it failed). */
function exitOnSigterm(close: () => Promise<void>): void {
  process.once('SIGTERM', () => {
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}

/** The bare design's worker (BENCH_SCALING_SIDE=bare): its runs' steps inline, one script per step. */
async function bareWorker(work: number): Promise<void> {
  const url = env('BENCH_SCALING_REDIS_URL');
  const prefix = env('BENCH_SCALING_PREFIX');
  const store = new BareStore(url, prefix);
  const execute = store.processor(SCALING_STEPS, (seed, step) => scalingStep(work, seed, step));
  const worker = new Worker(BARE_SCALING_QUEUE, execute, {
    connection: { url },
    prefix,
    concurrency: Number(env('BENCH_SCALING_CONCURRENCY')),
  });
  exitOnSigterm(async () => {
    await worker.close();
    store.disconnect();
  });
  await worker.waitUntilReady();
  process.stdout.write('READY\n');
}

async function main(): Promise<void> {
  const work = Number(env('BENCH_SCALING_WORK'));
  // Warm the loop up (JIT) before any job arrives.
  for (let i = 0; i < 100; i++) burn(work, i);
  if (process.env.BENCH_SCALING_SIDE === 'bare') return bareWorker(work);
  const { ScalingModule } = scalingModule({
    url: env('BENCH_SCALING_REDIS_URL'),
    prefix: env('BENCH_SCALING_PREFIX'),
    workers: true,
    concurrency: Number(env('BENCH_SCALING_CONCURRENCY')),
    work,
  });
  const app: INestApplicationContext = await NestFactory.createApplicationContext(ScalingModule, {
    logger: ['error', 'warn'],
  });
  exitOnSigterm(() => app.close());
  await app.init();
  process.stdout.write('READY\n');
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
