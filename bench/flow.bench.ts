/**
 * Flow control (issue 24): what a fair queued start costs against a plain one, on Redis.
 *
 * One process, one pass: a Nest application context with `ReactorModule.forRoot({ redis })` and
 * the module's own BullMQ worker (concurrency {@link WORKERS}), a `@Reactor` of one small step
 * returning a ~300-byte object, runs started with `ReactorClient.start` by `c` concurrent callers
 * (each awaits its start, then starts the next), for c = 1, 10 and 50. Each scenario has an app of
 * its own on the module's default prefix; the database is flushed between scenarios.
 *
 * - plain: the reactor with no flow control; N runs, timed until every run completed.
 * - queued: the same reactor with `concurrency: { key: (i) => i.tenant, limit: 5 }`, the runs
 *   spread over 20 tenants (start i is tenant i % 20): past the first 100 live runs a start waits
 *   in its tenant's queue (stored `pending`, no job) and is admitted (its job enqueued) by the run
 *   that frees its slot. Timed until every run completed.
 * - throttle and debounce (start-call cost only, nothing awaited after the starts):
 *   `throttle: { key: tenant, limit: 5, periodMs: 60000 }` (past the first 5 per tenant a start is
 *   stored `pending` with a delayed job), `debounce: { key: tenant, periodMs: 60000 }` (every start
 *   joins its tenant's gather; the first one stores the gather's run and its delayed job).
 *
 * Measured per scenario: starts/s (N over the time until the last start call resolved), runs/s (N
 * over the time until the last run completed, counted from BullMQ's QueueEvents: one job per run
 * here, and every run's status is checked afterwards), start-call latency p50 / p99, how many
 * starts the flow control held back, Redis commands per run sent by this process (every ioredis
 * client, BullMQ's included; a script is one: {@link CommandCounter}) and executed by the server
 * (`INFO commandstats` calls delta: commands run inside scripts included, the private server has no
 * other client), and Node CPU per run.
 *
 * Each (callers, side) scenario runs BENCH_FLOW_ROUNDS times (default 5), the sides taking turns
 * within a round, and the tables give medians; queued / plain is taken round by round (the two ran
 * one after the other) and its median and range are given. The worst number of callers is the
 * headline.
 *
 * BENCH_FLOW_RUNS (default 2000), BENCH_FLOW_CALLERS (default 1,10,50), BENCH_FLOW_WORKERS
 * (default 50), BENCH_FLOW_SIDES (default plain,queued,throttle,debounce), BENCH_FLOW_ROUNDS and
 * BENCH_FLOW_WARMUP (runs of the unmeasured warm-up of each side, default 500) override.
 */
import 'reflect-metadata';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { QueueEvents } from 'bullmq';
import Redis from 'ioredis';
import { Reactor, ReactorClient, ReactorModule, success, type ReactorBuilder, type ReactorClass } from '../lib';
import { fmt, stepResult } from './harness';
import { benchRedis, CommandCounter, printCommandNames } from './redis-counter';

const RUNS = Number(process.env.BENCH_FLOW_RUNS ?? 2_000);
const CALLERS = (process.env.BENCH_FLOW_CALLERS ?? '1,10,50').split(',').map(Number);
const WORKERS = Number(process.env.BENCH_FLOW_WORKERS ?? 50);
const SIDES = (process.env.BENCH_FLOW_SIDES ?? 'plain,queued,throttle,debounce').split(',') as FlowSide[];
const WARMUP_RUNS = Number(process.env.BENCH_FLOW_WARMUP ?? 500);
/** Rounds of every side at each number of callers (the sides take turns within a round). */
const ROUNDS = Number(process.env.BENCH_FLOW_ROUNDS ?? 5);
const TENANTS = 20;
const LIMIT = 5;
/** A scenario fails when no run completes for this long. */
const STALL_MS = 60_000;
/** The module's default prefix. */
const PREFIX = 'reactor';

export type FlowSide = 'plain' | 'queued' | 'throttle' | 'debounce';

export interface FlowResult {
  side: FlowSide;
  /** Which round of its side and callers (1 to {@link ROUNDS}). */
  round?: number;
  callers: number;
  runs: number;
  startsPerSecond: number;
  /** Plain and queued only: N over the time until the last run completed. */
  runsPerSecond?: number;
  startP50Ms: number;
  startP99Ms: number;
  /** Starts the flow control held back (their outcome carried a `flow` handle: queued, delayed, debounced). */
  held: number;
  /** Commands this process sent per start (every ioredis client; a script is one). */
  commandsPerRun: number;
  /** Commands the server executed per start (`INFO commandstats`, inside scripts included). */
  serverCommandsPerRun: number;
  nodeCpuUsPerRun: number;
}

type FlowInput = { seed: number; tenant: string };

function oneStep(r: ReactorBuilder<FlowInput>) {
  return r.step('work', ({ seed }: FlowInput) => success(stepResult(seed, 0)), {
    seed: r.input('seed', { type: 'number' }),
    tenant: r.input('tenant', { type: 'string' }),
  });
}
const tenantOf = (inputs: Record<string, unknown>) => String(inputs.tenant);

@Reactor('flow-plain')
class PlainReactor {
  build(r: ReactorBuilder<FlowInput>) {
    return oneStep(r);
  }
}

@Reactor('flow-queued', { concurrency: { key: tenantOf, limit: LIMIT } })
class QueuedReactor {
  build(r: ReactorBuilder<FlowInput>) {
    return oneStep(r);
  }
}

@Reactor('flow-throttle', { throttle: { key: tenantOf, limit: LIMIT, periodMs: 60_000 } })
class ThrottleReactor {
  build(r: ReactorBuilder<FlowInput>) {
    return oneStep(r);
  }
}

@Reactor('flow-debounce', { debounce: { key: tenantOf, periodMs: 60_000 } })
class DebounceReactor {
  build(r: ReactorBuilder<FlowInput>) {
    return oneStep(r);
  }
}

const REACTORS: Record<FlowSide, ReactorClass> = {
  plain: PlainReactor,
  queued: QueuedReactor,
  throttle: ThrottleReactor,
  debounce: DebounceReactor,
};

/** Every command the server executed so far (the sum of `INFO commandstats` calls). */
async function serverCommands(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) calls += Number(match[1]);
  return calls;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function scenario(
  url: string,
  redis: Redis,
  counter: CommandCounter,
  side: FlowSide,
  callers: number,
  runs: number,
): Promise<FlowResult> {
  const ReactorClass = REACTORS[side];
  @Module({
    imports: [
      ReactorModule.forRoot({
        redis: { url },
        prefix: PREFIX,
        workerConcurrency: WORKERS,
        sweeper: { enabled: false },
      }),
    ],
    providers: [ReactorClass],
  })
  class FlowBenchModule {}
  const app: INestApplicationContext = await NestFactory.createApplicationContext(FlowBenchModule, { logger: false });
  await app.init();
  const waitRuns = side === 'plain' || side === 'queued';
  // One job per run (a plain start's hand-off, or a queued run's admission): its completion is
  // counted from BullMQ's event stream, so the engine runs with no middleware or listener.
  let finished = 0;
  let lastProgress = Date.now();
  let resolveAll!: () => void;
  const all = new Promise<void>((resolve) => (resolveAll = resolve));
  const events = new QueueEvents('nest-reactor', { connection: { url }, prefix: `${PREFIX}:{${PREFIX}:queue}` });
  events.on('completed', () => {
    lastProgress = Date.now();
    if (++finished === runs) resolveAll();
  });
  await events.waitUntilReady();
  const client = app.get(ReactorClient);
  const latencies = new Float64Array(runs);
  const runIds: string[] = new Array<string>(runs);
  let held = 0;
  let next = 0;
  const caller = async () => {
    for (let i = next++; i < runs; i = next++) {
      const at = process.hrtime.bigint();
      const outcome = await client.start(ReactorClass, { seed: i, tenant: `t${i % TENANTS}` });
      latencies[i] = Number(process.hrtime.bigint() - at) / 1e6;
      if (outcome.status !== 'dispatched') throw new Error(`start ${i} of ${side}: ${outcome.status}`);
      if ('flow' in outcome && outcome.flow) held++;
      runIds[i] = outcome.runId;
    }
  };

  printCommandNames(`${side}, ${callers} caller(s): set-up`);
  global.gc?.();
  const serverBefore = await serverCommands(redis);
  await counter.begin();
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: callers }, caller));
  const startsSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  let runsSeconds: number | undefined;
  if (waitRuns) {
    const stall = setInterval(() => {
      if (Date.now() - lastProgress > STALL_MS) resolveAll();
    }, 1_000);
    await all;
    clearInterval(stall);
    if (finished < runs)
      throw new Error(
        `${side} at ${callers} callers: ${finished}/${runs} runs completed, then none for ${STALL_MS} ms`,
      );
    runsSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  }
  const used = process.cpuUsage(cpu);
  // The INFO below is this measurement's own: counted before it is sent.
  const commands = await counter.end();
  const serverCalls = (await serverCommands(redis)) - serverBefore - 1;
  printCommandNames(`${side}, ${callers} caller(s)`);

  if (waitRuns) {
    // Every run completed (not only as many jobs), each once.
    for (let i = 0; i < runs; i += 200) {
      const views = await Promise.all(runIds.slice(i, i + 200).map((runId) => client.get(runId)));
      const open = views.filter((view) => view?.status !== 'completed');
      if (open.length > 0)
        throw new Error(`${side} at ${callers} callers: run ${open[0]?.runId ?? '?'} is ${open[0]?.status ?? 'gone'}`);
    }
    if (side === 'queued') {
      const queues = await client.flowQueues(ReactorClass);
      const left = queues?.keys.filter((key) => key.live.length > 0 || key.queued > 0) ?? [];
      if (left.length > 0) throw new Error(`queued: key ${left[0].key} still holds runs after every run completed`);
    }
  }
  await events.close();
  await app.close();
  await redis.flushdb();
  const sorted = latencies.slice().sort();
  return {
    side,
    callers,
    runs,
    startsPerSecond: runs / startsSeconds,
    ...(runsSeconds !== undefined ? { runsPerSecond: runs / runsSeconds } : {}),
    startP50Ms: percentile(sorted, 50),
    startP99Ms: percentile(sorted, 99),
    held,
    commandsPerRun: commands / runs,
    serverCommandsPerRun: serverCalls / runs,
    nodeCpuUsPerRun: (used.user + used.system) / runs,
  };
}

export async function flowControl(): Promise<FlowResult[]> {
  const url = await benchRedis();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const counter = new CommandCounter();
  const results: FlowResult[] = [];
  try {
    await redis.flushdb();
    if (WARMUP_RUNS > 0) for (const side of SIDES) await scenario(url, redis, counter, side, 10, WARMUP_RUNS);
    // The sides take turns within each round, so a change in the machine's load falls on both.
    for (const callers of CALLERS) {
      for (let round = 1; round <= ROUNDS; round++) {
        for (const side of SIDES)
          results.push({ ...(await scenario(url, redis, counter, side, callers, RUNS)), round });
      }
    }
    return results;
  } finally {
    redis.disconnect();
  }
}

const SIDE_NAMES: Record<FlowSide, string> = {
  plain: 'plain',
  queued: `concurrency ${LIMIT}/key, ${TENANTS} keys`,
  throttle: `throttle ${LIMIT}/60 s/key (starts only)`,
  debounce: 'debounce 60 s/key (starts only)',
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function printFlowControl(results: FlowResult[]): void {
  console.log(
    `\n## Flow control: a queued start against a plain one (${RUNS} runs of one step per scenario, worker concurrency ${WORKERS}, Redis + BullMQ in process, median of ${ROUNDS} rounds)\n`,
  );
  console.log(
    '| callers | side | starts/s | runs/s | start p50 ms | start p99 ms | held at start | commands per run (sent) | commands per run (server) | Node CPU µs/run |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const of = (side: FlowSide, callers: number) => results.filter((r) => r.side === side && r.callers === callers);
  for (const callers of CALLERS) {
    for (const side of SIDES) {
      const rs = of(side, callers);
      if (rs.length === 0) continue;
      const m = (pick: (r: FlowResult) => number) => median(rs.map(pick));
      const runs = rs.every((r) => r.runsPerSecond !== undefined)
        ? fmt(
            m((r) => r.runsPerSecond!),
            0,
          )
        : '';
      console.log(
        `| ${callers} | ${SIDE_NAMES[side]} | ${fmt(
          m((r) => r.startsPerSecond),
          0,
        )} | ${runs} | ${fmt(
          m((r) => r.startP50Ms),
          2,
        )} | ${fmt(
          m((r) => r.startP99Ms),
          2,
        )} | ${fmt(
          m((r) => r.held),
          0,
        )} | ${fmt(
          m((r) => r.commandsPerRun),
          1,
        )} | ${fmt(
          m((r) => r.serverCommandsPerRun),
          1,
        )} | ${fmt(
          m((r) => r.nodeCpuUsPerRun),
          0,
        )} |`,
      );
    }
  }
  // Queued against plain, round by round (the two ran one after the other), then the median.
  const rows = CALLERS.map((callers) => {
    const pairs = Array.from({ length: ROUNDS }, (_, i) => ({
      plain: of('plain', callers).find((r) => r.round === i + 1),
      queued: of('queued', callers).find((r) => r.round === i + 1),
    })).filter((p) => p.plain?.runsPerSecond && p.queued?.runsPerSecond) as Array<{
      plain: FlowResult;
      queued: FlowResult;
    }>;
    const ratio = (pick: (r: FlowResult) => number) => pairs.map((p) => pick(p.queued) / pick(p.plain));
    const runs = ratio((r) => r.runsPerSecond!);
    return {
      callers,
      pairs: pairs.length,
      runs: pairs.length ? median(runs) : NaN,
      runsRange: pairs.length ? [Math.min(...runs), Math.max(...runs)] : [NaN, NaN],
      starts: pairs.length ? median(ratio((r) => r.startsPerSecond)) : NaN,
      p50: pairs.length ? median(ratio((r) => r.startP50Ms)) : NaN,
      p99: pairs.length ? median(ratio((r) => r.startP99Ms)) : NaN,
      commands: pairs.length ? median(pairs.map((p) => p.queued.commandsPerRun - p.plain.commandsPerRun)) : NaN,
      server: pairs.length
        ? median(pairs.map((p) => p.queued.serverCommandsPerRun - p.plain.serverCommandsPerRun))
        : NaN,
    };
  }).filter((row) => row.pairs > 0);
  if (rows.length === 0) return;
  console.log('');
  console.log(
    '| callers | queued / plain runs/s (median, range over rounds) | queued / plain starts/s | start p50 queued / plain | start p99 queued / plain | commands per run, queued - plain (sent / server) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  const pct = (x: number) => `${fmt(x * 100, 0)}%`;
  for (const row of rows) {
    console.log(
      `| ${row.callers} | ${pct(row.runs)} (${pct(row.runsRange[0])}-${pct(row.runsRange[1])}) | ${pct(row.starts)} | ${fmt(row.p50, 2)}x | ${fmt(row.p99, 2)}x | +${fmt(row.commands, 1)} / +${fmt(row.server, 1)} |`,
    );
  }
  const worst = rows.reduce((a, b) => (b.runs < a.runs ? b : a));
  console.log('');
  console.log(
    `- worst queued / plain runs/s: ${pct(worst.runs)} at ${worst.callers} caller(s) (median of ${worst.pairs} rounds, range ${pct(worst.runsRange[0])}-${pct(worst.runsRange[1])}; starts/s ${pct(worst.starts)}, start p50 ${fmt(worst.p50, 2)}x, p99 ${fmt(worst.p99, 2)}x)`,
  );
}
