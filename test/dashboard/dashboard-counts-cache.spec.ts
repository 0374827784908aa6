/**
 * How long the counts of a filter are reused, and how many filters are kept (docs/dashboard.md,
 * "Counts and their cost"): a reading is reused for `countsCacheMs`, or 20 times as long as it took
 * when that is longer, at most a minute; up to 64 filters are kept at once. The service is built
 * with a stub client and both of its clocks stubbed (`performance.now` times a reading, `Date.now`
 * dates its expiry), so a "costly" reading takes no time and nothing sleeps.
 */
import { performance } from 'node:perf_hooks';
import type { ModuleRef } from '@nestjs/core';
import type { ReactorRuntime } from '../../lib/config';
import type { RunSummary } from '../../lib/core';
import { DashboardService } from '../../lib/dashboard/dashboard.service';
import { resolveDashboardOptions } from '../../lib/dashboard/dashboard.options';
import type { ReactorClient } from '../../lib/nest';

const T0 = 1_700_000_000_000;

describe('the counts cache', () => {
  /** The wall clock (`Date.now`) and the monotonic one (`performance.now`), moved by the test. */
  let now: number;
  let perf: number;
  /** How long (ms of `performance.now`) the next reading of the runs index takes. */
  let costMs: number;
  let list: jest.Mock;

  beforeEach(() => {
    now = T0;
    perf = 0;
    costMs = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    jest.spyOn(performance, 'now').mockImplementation(() => perf);
    list = jest.fn(async () => {
      perf += costMs;
      return { runs: [{ runId: 'r-1', reactorName: 'a', status: 'completed', createdAt: T0 } as RunSummary] };
    });
  });
  afterEach(() => jest.restoreAllMocks());

  function service(countsCacheMs: number): DashboardService {
    const engine = { reactorNames: () => ['a'], definition: () => ({}) };
    const moduleRef = { get: () => engine } as unknown as ModuleRef;
    const client = { list } as unknown as ReactorClient;
    const options = resolveDashboardOptions({ countsCacheMs }, 'development');
    const dashboard = new DashboardService(client, {} as ReactorRuntime, options, moduleRef);
    dashboard.onModuleInit();
    return dashboard;
  }

  /** Whether a request for filter `since` at wall time `at` read the runs index (else: reused). */
  async function readAt(dashboard: DashboardService, at: number, since = 1): Promise<boolean> {
    now = at;
    list.mockClear();
    await dashboard.counts({ since });
    return list.mock.calls.length > 0;
  }

  it.each([
    // [countsCacheMs, how long the reading took, how long it is reused]
    [2000, 50, 2000], // 20 × 50 ms = 1 s is shorter: countsCacheMs
    [0, 1000, 20_000], // costly: 20 times as long as it took
    [2000, 400, 8000], // the docs' example: a 0.4 s reading, 8 s
    [0, 10_000, 60_000], // 20 × 10 s = 200 s: at most a minute
    [60_000, 0, 60_000], // the longest countsCacheMs accepted
  ])(
    'countsCacheMs %i, a reading that took %i ms: reused for %i ms, then read again',
    async (countsCacheMs, cost, reusedMs) => {
      const dashboard = service(countsCacheMs);
      costMs = cost;
      expect(await readAt(dashboard, T0)).toBe(true);
      now = T0 + 1;
      expect((await dashboard.counts({ since: 1 })).refreshAfterMs).toBe(reusedMs - 1);
      expect(await readAt(dashboard, T0 + reusedMs - 1)).toBe(false);
      expect(await readAt(dashboard, T0 + reusedMs)).toBe(true);
    },
  );

  it('keeps 64 filters: a 65th drops the oldest, the 64 newest are still reused', async () => {
    const dashboard = service(60_000);
    for (let since = 1; since <= 65; since++) expect(await readAt(dashboard, T0, since)).toBe(true);
    // Filters 2..65 are kept; filter 1 (the oldest) was dropped and is read again.
    for (let since = 2; since <= 65; since++) expect(await readAt(dashboard, T0, since)).toBe(false);
    expect(await readAt(dashboard, T0, 1)).toBe(true);
    // Reading filter 1 again dropped the oldest left, filter 2; 3 and the newest are still kept.
    expect(await readAt(dashboard, T0, 3)).toBe(false);
    expect(await readAt(dashboard, T0, 65)).toBe(false);
    expect(await readAt(dashboard, T0, 2)).toBe(true);
  });

  it('past 64 filters, expired ones are dropped first: the oldest filter, still fresh, is kept', async () => {
    const dashboard = service(2000);
    // Filter 1 is the oldest, but its reading was costly (3 s): reused for a minute.
    costMs = 3000;
    expect(await readAt(dashboard, T0, 1)).toBe(true);
    // Filters 2..64 are reused for countsCacheMs (2 s).
    costMs = 0;
    for (let since = 2; since <= 64; since++) expect(await readAt(dashboard, T0, since)).toBe(true);
    // A 65th filter once 2..64 have expired: they are dropped, not filter 1 (the oldest).
    expect(await readAt(dashboard, T0 + 2000, 65)).toBe(true);
    expect(await readAt(dashboard, T0 + 2000, 1)).toBe(false);
  });
});
