/**
 * Coordination: a named rate limit held under saturation (issue: "a rate limit of N per second
 * observed within 2% over a 10 s window in the benchmark").
 *
 * A Nest application context with `ReactorModule.forRoot({ redis, rateLimits: { api: { second: N } } })`,
 * a `@Reactor` with `rateLimit: 'api'` and `background: { all: true }` whose one step records when
 * it executes, and the module's own BullMQ worker in this process (concurrency 20). N * 14 runs are
 * started at once, so the limit stays saturated for about 14 s: every run refused by the limit is
 * snoozed (`retryAfterMs`, to the next window) without spending retries, up to
 * `lockSnoozeMaxAttempts` (10000 here: nothing gives up).
 *
 * Measured over the 10 whole seconds from second 2 to second 12 after the first execution (Redis
 * time, on which the windows are aligned): executions per second, their deviation from N, the most
 * executions in one 1-second window, and the most uses Redis counted in one window (the limit's own
 * counters, read while they live: the figure the limit enforces; an execution is stamped a few ms
 * after its charge, so one charged at the very end of a window can be stamped in the next), and
 * how far into its window each window's last execution came (how fast the worker gets through the
 * refused runs that all wake at the window's start).
 *
 * `BENCH_RATE=50,200` runs several limits (default 50).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { Reactor, ReactorClient, ReactorModule, RedisKeys, success, type ReactorBuilder } from '../lib';
import { fmt } from './harness';
import { benchRedis } from './redis-counter';

const RATES = (process.env.BENCH_RATE ?? '50').split(',').map(Number);
/** Seconds of saturation: runs started = N * this. */
const SECONDS_OF_WORK = Number(process.env.BENCH_RATE_SECONDS ?? 14);
const WORKER_CONCURRENCY = 20;
/** The measured span: whole seconds `FROM` to `FROM + SPAN` after the first execution's second. */
const FROM_S = 2;
const SPAN_S = 10;
const TARGET_PCT = 2;
const LIMIT_NAME = 'api';

export interface CoordinationResult {
  limit: number;
  runs: number;
  completed: number;
  failed: number;
  /** Executions of the step beyond one per run (a step executed again). */
  duplicates: number;
  /** Executions per second over the measured span. */
  observedRate: number;
  deviationPct: number;
  /** Executions in each whole second of the measured span. */
  perSecond: number[];
  /** The most executions stamped in one 1-second window, over the whole run. */
  maxExecutedInWindow: number;
  /** The most uses Redis counted in one window of the limit (-1: its counters were never seen). */
  maxChargedInWindow: number;
  /** Median and max over the span's windows of the last execution's offset into its window, in ms. */
  fillMs: { median: number; max: number };
  /** Whether the limit was still saturated after the span (an execution stamped after it). */
  saturated: boolean;
  /** Start of the first execution to the last, in s. */
  durationS: number;
  met: boolean;
}

function reactorOf(name: string, stamp: (runId: string) => void) {
  @Reactor(name, { rateLimit: LIMIT_NAME, background: { all: true } })
  class RateLimitedReactor {
    build(r: ReactorBuilder<{ seed: number }>) {
      const seed = r.input('seed', { type: 'number' });
      return r.step(
        'hit',
        (args: { seed: number }, ctx: { runId: string }) => {
          stamp(ctx.runId);
          return success(args.seed);
        },
        { seed },
      );
    }
  }
  return RateLimitedReactor;
}

/** Redis `TIME` minus `Date.now()`, in ms (the midpoint of the round trip). */
async function clockOffset(redis: Redis): Promise<number> {
  let best = { rtt: Infinity, offset: 0 };
  for (let i = 0; i < 5; i++) {
    const before = Date.now();
    const [seconds, micros] = await redis.time();
    const after = Date.now();
    const redisMs = Number(seconds) * 1000 + Number(micros) / 1000;
    if (after - before < best.rtt) best = { rtt: after - before, offset: redisMs - (before + after) / 2 };
  }
  return best.offset;
}

/**
 * Reads the limit's window counters every 100 ms (the current and the previous window, Redis
 * time), keeping the highest value seen for each window. `stop` returns them by window index.
 */
function chargeSampler(redis: Redis, prefix: string): { stop(): Promise<Map<number, number>> } {
  // The named limit's key, as `RedisCoordinationStore.consumeRate` builds it (see its key layout).
  const base = new RedisKeys({ prefix }).coordinationKey('rate', encodeURIComponent(`named:${LIMIT_NAME}`));
  const seen = new Map<number, number>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const [seconds] = await redis.time();
      const index = Number(seconds);
      const values = await redis.mget(`${base}:1000:${index - 1}`, `${base}:1000:${index}`);
      values.forEach((value, i) => {
        if (value !== null) seen.set(index - 1 + i, Math.max(seen.get(index - 1 + i) ?? 0, Number(value)));
      });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

async function saturate(url: string, redis: Redis, limit: number): Promise<CoordinationResult> {
  const runs = limit * SECONDS_OF_WORK;
  const prefix = `bench-coord-${limit}-${randomUUID().slice(0, 8)}`;
  const stamps = new Map<string, number>();
  let duplicates = 0;
  const ReactorClass = reactorOf(`rate-limited-${limit}`, (runId) => {
    if (stamps.has(runId)) duplicates++;
    else stamps.set(runId, Date.now());
  });
  let completed = 0;
  let failed = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const settle = () => void (completed + failed === runs && resolveAll());
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: { url },
        prefix,
        workerConcurrency: WORKER_CONCURRENCY,
        rateLimits: { [LIMIT_NAME]: { second: limit } },
        snoozeDelayMs: 50,
        lockSnoozeMaxAttempts: 10_000,
        sweeper: { enabled: false },
        middleware: [
          {
            onEvent: (e) => {
              if (e.type === 'reactor.complete') completed++;
              else if (e.type === 'reactor.fail') failed++;
              else return;
              settle();
            },
          },
        ],
      }),
    ],
    providers: [ReactorClass],
  })
  class BenchModule {}
  const app: INestApplicationContext = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  await app.init();
  const client = app.get(ReactorClient);
  const offset = await clockOffset(redis);
  const sampler = chargeSampler(redis, prefix);
  for (let i = 0; i < runs; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, runs - i) }, (_, k) => client.start(ReactorClass, { seed: i + k })),
    );
  }
  // Never hang: three times the work's length, plus 30 s.
  const deadline = setTimeout(resolveAll, (3 * SECONDS_OF_WORK + 30) * 1000);
  await all;
  clearTimeout(deadline);
  const charged = await sampler.stop();
  await app.close();
  await redis.flushdb();

  // Execution stamps on Redis time, where the limit's windows are.
  const times = [...stamps.values()].map((t) => t + offset).sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times[times.length - 1] ?? 0;
  const start = (Math.floor(first / 1000) + FROM_S) * 1000;
  const perSecond = Array.from({ length: SPAN_S }, () => 0);
  const byWindow = new Map<number, number>();
  for (const t of times) {
    const window = Math.floor(t / 1000);
    byWindow.set(window, (byWindow.get(window) ?? 0) + 1);
    const second = Math.floor((t - start) / 1000);
    if (second >= 0 && second < SPAN_S) perSecond[second]++;
  }
  const lastIn = Array.from({ length: SPAN_S }, () => 0);
  for (const t of times) {
    const second = Math.floor((t - start) / 1000);
    if (second >= 0 && second < SPAN_S) lastIn[second] = Math.max(lastIn[second], t - start - second * 1000);
  }
  const fills = [...lastIn].sort((a, b) => a - b);
  const observedRate = perSecond.reduce((a, b) => a + b, 0) / SPAN_S;
  const deviationPct = ((observedRate - limit) / limit) * 100;
  return {
    limit,
    runs,
    completed,
    failed,
    duplicates,
    observedRate,
    deviationPct,
    perSecond,
    maxExecutedInWindow: Math.max(0, ...byWindow.values()),
    maxChargedInWindow: charged.size > 0 ? Math.max(...charged.values()) : -1,
    fillMs: { median: fills[Math.floor(fills.length / 2)], max: fills[fills.length - 1] },
    saturated: last >= start + SPAN_S * 1000,
    durationS: (last - first) / 1000,
    met: Math.abs(deviationPct) <= TARGET_PCT,
  };
}

export async function coordinationRates(): Promise<CoordinationResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const results: CoordinationResult[] = [];
  try {
    for (const limit of RATES) results.push(await saturate(url, redis, limit));
    return results;
  } finally {
    redis.disconnect();
  }
}

export function printCoordination(results: CoordinationResult[]): void {
  console.log(
    `\n## Coordination: a named rate limit under saturation (N * ${SECONDS_OF_WORK} runs at once, worker concurrency ${WORKER_CONCURRENCY})\n`,
  );
  console.log(
    `| limit N/s | runs | observed/s (s ${FROM_S}-${FROM_S + SPAN_S}) | deviation | executions per second | max executed in a 1-s window | max charged in a window (Redis) | window filled after ms (median / max) | saturated | first to last execution s | target ±${TARGET_PCT}% |`,
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    const charged = r.maxChargedInWindow < 0 ? 'n/a' : String(r.maxChargedInWindow);
    console.log(
      `| ${r.limit} | ${r.runs} | ${fmt(r.observedRate, 1)} | ${r.deviationPct >= 0 ? '+' : ''}${fmt(r.deviationPct, 2)}% | ${r.perSecond.join(' ')} | ${r.maxExecutedInWindow} | ${charged} | ${fmt(r.fillMs.median, 0)} / ${fmt(r.fillMs.max, 0)} | ${r.saturated ? 'yes' : 'NO'} | ${fmt(r.durationS, 1)} | ${r.met ? 'met' : 'MISSED'} |`,
    );
  }
  console.log('');
  for (const r of results) {
    const problems = [
      r.completed + r.failed < r.runs ? `${r.runs - r.completed - r.failed} runs unfinished at the deadline` : '',
      r.failed > 0 ? `${r.failed} runs failed` : '',
      r.duplicates > 0 ? `${r.duplicates} steps executed again` : '',
      r.maxChargedInWindow > r.limit ? `a window charged ${r.maxChargedInWindow} > ${r.limit}` : '',
    ].filter(Boolean);
    console.log(
      `- N=${r.limit}: ${r.completed}/${r.runs} completed${problems.length ? `; ${problems.join('; ')}` : ''}`,
    );
  }
  console.log(
    `- target: observed rate within ${TARGET_PCT}% of N over ${SPAN_S} s, no window above N (fixed windows aligned on the epoch, Redis TIME)`,
  );
}
