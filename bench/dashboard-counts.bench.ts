/**
 * The dashboard's counts on Redis (issue 26: "one open tab keeps ~30% of the app's event loop busy").
 *
 * A Nest app with `ReactorModule.forRoot({ redis })` and `ReactorDashboardModule` listening on a free
 * port, and `BENCH_COUNTS_RUNS` runs (default 10,000) of a one-step reactor in Redis. Then:
 *
 * - **one open tab**: a poller in a child process (so its own work is not the app's) does what the
 *   page's runs view does: `GET api/runs` and, when due, `GET api/counts`, together, then waits
 *   `pollIntervalMs` (1500) after the answers, for `BENCH_COUNTS_SECONDS` (default 20). Counts are
 *   due every tick, unless a counts answer carries `refreshAfterMs` (the page waits that long
 *   before asking again). Measured: the app's event-loop utilisation over the window
 *   (`performance.eventLoopUtilization`), and how many counts answers the tab got.
 * - **a burst**: 20 `GET api/counts` at once (a fresh filter each round, so nothing is cached from
 *   the tab): wall time until the last answer.
 * - **one counts computation**: one `GET api/counts` with a filter nothing has asked yet.
 *
 * `npx ts-node --transpile-only bench/dashboard-counts.bench.ts` runs it alone (a private
 * `redis-server`, or BENCH_REDIS_URL).
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Injectable, Module, type CanActivate, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Reactor, ReactorClient, ReactorModule, success, type ReactorBuilder } from '../lib';
import { ReactorDashboardModule } from '../lib/dashboard';
import { fmt } from './harness';
import { benchRedis, stopBenchRedis } from './redis-counter';

const RUNS = Number(process.env.BENCH_COUNTS_RUNS ?? 10_000);
const SECONDS = Number(process.env.BENCH_COUNTS_SECONDS ?? 20);
const POLL_MS = 1500;
const BURST = 20;

export interface DashboardCountsResult {
  runs: number;
  seconds: number;
  /** The app's event-loop utilisation while one tab polled, in %. */
  tabElu: number;
  /** Counts answers the tab got, and runs pages. */
  tabCounts: number;
  tabPolls: number;
  /** One counts request on a cold filter, ms. */
  coldMs: number;
  /** 20 concurrent counts requests on a cold filter: wall time to the last answer, ms. */
  burstMs: number;
}

@Injectable()
class OpenGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Reactor('bench-dash')
class BenchDashReactor {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step('one', ({ n }: { n: number }) => success(n + 1), { n: r.input('n', { type: 'number' }) });
  }
}

/** The tab: a child process (plain JavaScript) polling as the page does, printing `<polls> <counts>` at the end. */
const TAB = `
const [base, seconds, pollMs] = process.argv.slice(1);
const end = Date.now() + Number(seconds) * 1000;
let polls = 0, counts = 0, countsDue = 0;
(async () => {
  while (Date.now() < end) {
    const work = [fetch(base + 'api/runs').then((r) => r.json())];
    if (Date.now() >= countsDue) {
      work.push(fetch(base + 'api/counts').then((r) => r.json()).then((c) => {
        counts++;
        countsDue = Date.now() + Math.max(Number(pollMs), Number(c.refreshAfterMs) || 0);
      }));
    }
    await Promise.all(work);
    polls++;
    await new Promise((r) => setTimeout(r, Number(pollMs)));
  }
  console.log(polls + ' ' + counts);
})();
`;

function openTab(base: string): Promise<{ polls: number; counts: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', TAB, base, String(SECONDS), String(POLL_MS)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const [polls, counts] = out.trim().split(' ').map(Number);
      if (code === 0) resolve({ polls, counts });
      else reject(new Error(`the tab exited with ${code}`));
    });
  });
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

export async function dashboardCounts(): Promise<DashboardCountsResult> {
  const url = await benchRedis();
  @Module({
    imports: [
      ReactorModule.forRoot({ redis: { url }, prefix: `bench-dash-${randomUUID().slice(0, 8)}` }),
      ReactorDashboardModule.forRoot({ path: 'reactor', guard: OpenGuard, pollIntervalMs: POLL_MS }),
    ],
    providers: [OpenGuard, BenchDashReactor],
  })
  class BenchDashModule {}
  const app: INestApplication = await NestFactory.create(BenchDashModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  try {
    const client = app.get(ReactorClient);
    for (let started = 0; started < RUNS;) {
      const batch = Math.min(200, RUNS - started);
      await Promise.all(Array.from({ length: batch }, (_, i) => client.run('bench-dash', { n: started + i })));
      started += batch;
    }
    const base = `${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/reactor/`;
    const before = performance.eventLoopUtilization();
    const tab = await openTab(base);
    const elu = performance.eventLoopUtilization(before);
    // Cold filters (`until` in the future: every run, a filter no one asked yet).
    let until = Date.now() + 3_600_000;
    const coldMs = await timed(() => fetch(`${base}api/counts?until=${until++}`).then((r) => r.json()));
    const burstMs = await timed(() =>
      Promise.all(Array.from({ length: BURST }, () => fetch(`${base}api/counts?until=${until}`).then((r) => r.json()))),
    );
    return {
      runs: RUNS,
      seconds: SECONDS,
      tabElu: elu.utilization * 100,
      tabCounts: tab.counts,
      tabPolls: tab.polls,
      coldMs,
      burstMs,
    };
  } finally {
    await app.close();
  }
}

export function printDashboardCounts(r: DashboardCountsResult): void {
  console.log(`\n## Dashboard counts (${r.runs} runs on Redis, one tab polling for ${r.seconds} s)\n`);
  console.log('| app event loop busy (one tab) | runs polls | counts answers | one counts request | 20 at once |');
  console.log('| --- | --- | --- | --- | --- |');
  console.log(
    `| ${fmt(r.tabElu, 1)} % | ${r.tabPolls} | ${r.tabCounts} | ${fmt(r.coldMs, 0)} ms | ${fmt(r.burstMs, 0)} ms |`,
  );
}

if (require.main === module) {
  dashboardCounts()
    .then(printDashboardCounts)
    .then(
      () => {
        stopBenchRedis();
        process.exit(0);
      },
      (error: unknown) => {
        console.error(error);
        stopBenchRedis();
        process.exit(1);
      },
    );
}
