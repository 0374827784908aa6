/**
 * Live runs on Redis (issue 25).
 *
 * 1. Step end -> waiter: a worker application finishes a run's last step; an API application
 *    (`workers: false`, same Redis and prefix) waits for it with `client.wait`. The latency is from
 *    the moment the step returned (its own clock) to `wait` resolving. Before issue 25 `wait`
 *    polled storage every 100 ms (measured here with the API engine's bus detached, which is that
 *    path exactly); now it wakes on the run's `settled` wake-up (pub/sub), polling only as a 1 s
 *    fallback.
 * 2. Step end -> watcher: with `liveEvents: true`, from the step returning to `client.watch` in the
 *    API application yielding its `step.completed`.
 * 3. The hot path: Node CPU per step and commands per run of the user's path (10-step runs through
 *    `ReactorClient.start` and the module's own BullMQ worker, concurrency 10), with `liveEvents`
 *    off (the default: one PUBLISH per run settling) and on (one script per lifecycle event).
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { QueueEvents } from 'bullmq';
import Redis from 'ioredis';
import { Reactor, ReactorClient, ReactorEngine, ReactorModule, success, type ReactorBuilder, type Ref } from '../lib';
import { fmt, stepResult } from './harness';
import { benchRedis, CommandCounter } from './redis-counter';

const LATENCY_RUNS = Number(process.env.BENCH_LIVE_RUNS ?? 50);
const CPU_STEPS = Number(process.env.BENCH_LIVE_STEPS ?? 10_000);

/** Holds the last step until released; records when the step returned (ms, performance clock of this process). */
@Injectable()
class Hold {
  private release?: () => void;
  private entered?: () => void;
  endedAt = 0;
  arm(): { entered: Promise<void>; release: () => void } {
    const entered = new Promise<void>((resolve) => (this.entered = resolve));
    const gate = new Promise<void>((resolve) => (this.release = resolve));
    this.gate = gate;
    return { entered, release: () => this.release?.() };
  }
  gate: Promise<void> = Promise.resolve();
  async pass(): Promise<void> {
    this.entered?.();
    await this.gate;
  }
}

@Reactor('live-bench', { background: { all: true } })
class LiveBenchReactor {
  constructor(private readonly hold: Hold) {}
  build(r: ReactorBuilder<{ n: number }>) {
    const n = r.input('n', { type: 'number' });
    const first = r.step('first', ({ n: x }: { n: number }) => success(x + 1), { n });
    const hold = this.hold;
    return r.step(
      'last',
      async ({ first: x }: { first: number }) => {
        await hold.pass();
        hold.endedAt = performance.timeOrigin + performance.now();
        return success(x);
      },
      { first },
    );
  }
}

function cpuReactor(length: number) {
  @Reactor(`live-cpu-${length}`, { maxConcurrency: 1 })
  class LiveCpuReactor {
    build(r: ReactorBuilder<{ seed: number }>) {
      const seed = r.input('seed', { type: 'number' });
      let prev: Ref<unknown> = seed;
      for (let i = 0; i < length; i++) {
        const step = i;
        prev = r.step(`s${i}`, ({ seed: s }: { seed: number; prev?: unknown }) => success(stepResult(s, step)), {
          seed,
          prev,
        });
      }
      return prev;
    }
  }
  return LiveCpuReactor;
}

async function app(
  url: string,
  prefix: string,
  options: { workers?: boolean; liveEvents?: boolean; concurrency?: number },
  providers: unknown[],
): Promise<INestApplicationContext> {
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: { url },
        prefix,
        workers: options.workers ?? true,
        workerConcurrency: options.concurrency ?? 10,
        liveEvents: options.liveEvents ?? false,
        sweeper: { enabled: false },
      }),
    ],
    providers: providers as never[],
  })
  class LiveBenchModule {}
  const context = await NestFactory.createApplicationContext(LiveBenchModule, { logger: false });
  await context.init();
  return context;
}

export interface Latency {
  label: string;
  runs: number;
  p50: number;
  p95: number;
  max: number;
}

function latency(label: string, samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { label, runs: samples.length, p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

async function waitLatency(url: string, prefix: string, polling: boolean): Promise<Latency> {
  const worker = await app(url, prefix, {}, [Hold, LiveBenchReactor]);
  const api = await app(url, prefix, { workers: false }, [Hold, LiveBenchReactor]);
  try {
    if (polling) {
      // The path before issue 25: no bus, so `wait` polls storage every 100 ms.
      (api.get(ReactorEngine) as unknown as { waiters: { bus?: unknown } }).waiters.bus = undefined;
    }
    const client = api.get(ReactorClient);
    const hold = worker.get(Hold);
    const samples: number[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const gate = hold.arm();
      const { runId } = await client.start(LiveBenchReactor, { n: i });
      await gate.entered;
      const waited = client.wait(runId, { timeoutMs: 10_000 }).then(() => performance.timeOrigin + performance.now());
      // Let the waiter settle into its wait (subscribed, or between two polls) at a random phase.
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 100));
      gate.release();
      samples.push((await waited) - hold.endedAt);
    }
    return latency(
      polling ? 'wait(), polling every 100 ms (before)' : 'wait(), woken by the run event bus (after)',
      samples,
    );
  } finally {
    await api.close();
    await worker.close();
  }
}

async function watchLatency(url: string, prefix: string): Promise<Latency> {
  const worker = await app(url, prefix, { liveEvents: true }, [Hold, LiveBenchReactor]);
  const api = await app(url, prefix, { workers: false, liveEvents: true }, [Hold, LiveBenchReactor]);
  try {
    const client = api.get(ReactorClient);
    const hold = worker.get(Hold);
    const samples: number[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const gate = hold.arm();
      const { runId } = await client.start(LiveBenchReactor, { n: i });
      await gate.entered;
      const seen = (async () => {
        for await (const event of client.watch(runId)) {
          if (event.type === 'step.completed' && event.step === 'last')
            return performance.timeOrigin + performance.now();
        }
        throw new Error('no step.completed');
      })();
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 100));
      gate.release();
      samples.push((await seen) - hold.endedAt);
    }
    return latency('watch(): the step.completed event (liveEvents)', samples);
  } finally {
    await api.close();
    await worker.close();
  }
}

export interface HotPath {
  liveEvents: boolean;
  nodeCpuUsPerStep: number;
  commandsPerRun: number;
  stepsPerSecond: number;
}

async function hotPath(url: string, prefix: string, liveEvents: boolean, counter: CommandCounter): Promise<HotPath> {
  const length = 10;
  const runs = Math.max(1, Math.floor(CPU_STEPS / length));
  const ReactorClass = cpuReactor(length);
  const context = await app(url, prefix, { liveEvents, concurrency: 10 }, [ReactorClass]);
  let finished = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const events = new QueueEvents('nest-reactor', { connection: { url }, prefix: `${prefix}:{${prefix}:queue}` });
  events.on('completed', () => void (++finished === runs && resolveAll()));
  await events.waitUntilReady();
  const client = context.get(ReactorClient);
  global.gc?.();
  await counter.begin();
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < runs; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, runs - i) }, (_, k) => client.start(ReactorClass, { seed: i + k })),
    );
  }
  await all;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  const commands = await counter.end();
  await events.close();
  await context.close();
  const steps = runs * length;
  return {
    liveEvents,
    nodeCpuUsPerStep: (used.user + used.system) / steps,
    commandsPerRun: commands / runs,
    stepsPerSecond: steps / seconds,
  };
}

export async function liveRuns(): Promise<{ latencies: Latency[]; hot: HotPath[] }> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const counter = new CommandCounter();
  try {
    const latencies = [
      await waitLatency(url, 'live-poll', true),
      await waitLatency(url, 'live-bus', false),
      await watchLatency(url, 'live-watch'),
    ];
    await redis.flushdb();
    // Warm-up (unmeasured), then off / on twice, alternating, so neither side is measured cold.
    await hotPath(url, 'live-warm', false, counter);
    const hot: HotPath[] = [];
    for (const round of [0, 1]) {
      hot.push(await hotPath(url, `live-off-${round}`, false, counter));
      hot.push(await hotPath(url, `live-on-${round}`, true, counter));
      await redis.flushdb();
    }
    return { latencies, hot };
  } finally {
    redis.disconnect();
  }
}

export function printLiveRuns({
  latencies,
  hot,
}: {
  latencies: Awaited<ReturnType<typeof liveRuns>>['latencies'];
  hot: HotPath[];
}): void {
  console.log(`\n## Live runs on Redis: step end -> waiter / watcher in another application (ms)\n`);
  console.log('| path | runs | p50 | p95 | max |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const l of latencies) {
    console.log(`| ${l.label} | ${l.runs} | ${fmt(l.p50, 1)} | ${fmt(l.p95, 1)} | ${fmt(l.max, 1)} |`);
  }
  console.log(`\n## Live runs: the hot path (10-step runs, ReactorClient.start, worker concurrency 10)\n`);
  console.log('| liveEvents | Node CPU µs/step | commands per run | steps/s |');
  console.log('| --- | --- | --- | --- |');
  for (const h of hot) {
    console.log(
      `| ${h.liveEvents ? 'on' : 'off'} | ${fmt(h.nodeCpuUsPerStep, 1)} | ${fmt(h.commandsPerRun, 1)} | ${fmt(h.stepsPerSecond, 0)} |`,
    );
  }
  const mean = (on: boolean, pick: (h: HotPath) => number) => {
    const side = hot.filter((h) => h.liveEvents === on);
    return side.reduce((sum, h) => sum + pick(h), 0) / side.length;
  };
  const cpu = mean(true, (h) => h.nodeCpuUsPerStep) / mean(false, (h) => h.nodeCpuUsPerStep);
  console.log(
    `\n- liveEvents on / off, Node CPU per step: ${fmt(cpu, 2)}x; commands per run: ${fmt(
      mean(false, (h) => h.commandsPerRun),
      1,
    )} off, ${fmt(
      mean(true, (h) => h.commandsPerRun),
      1,
    )} on`,
  );
}
