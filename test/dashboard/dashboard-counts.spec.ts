/**
 * The counts by status are read once per filter and shared (issue 26: "one counts request reads
 * ~0.6 s over 10,000 runs ... 20 requests at once: 12.5 s"): concurrent requests wait for one
 * reading of the runs index, later ones reuse it until it may be refreshed (`refreshAfterMs`), and a
 * failed reading is not kept. On the embedded runtime (Express and Fastify) and on Redis.
 */
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { ReactorDashboardOptions } from '../../lib/dashboard';
import type { ReactorModuleOptions } from '../../lib/config';
import { ConfigurationError } from '../../lib/core/errors/configuration.error';
import { resolveDashboardOptions } from '../../lib/dashboard/dashboard.options';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { CARD, Switches, TOKEN, platformApp } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const BASE = '/admin/reactor';
/** The longest `countsCacheMs` accepted (counts are never reused for longer than a minute). */
const MINUTE = 60_000;

type Make = (options: ReactorDashboardOptions, prefix: string) => Promise<INestApplication>;
const redis = (prefix: string): ReactorModuleOptions => ({ redis: { url: redisUrl() }, prefix });

describe.each<[string, Make]>([
  ['the embedded runtime, Express', (options) => platformApp('express', options)],
  ['the embedded runtime, Fastify', (options) => platformApp('fastify', options)],
  ['Redis, Express', (options, prefix) => platformApp('express', options, redis(prefix))],
])('the counts on %s', (_name, make) => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  let reads: jest.SpyInstance;
  const http = () => request(app.getHttpServer());
  const counts = (query: Record<string, string | number>) =>
    http().get(`${BASE}/api/counts`).query(query).set(AUTH).expect(200);

  beforeAll(async () => {
    app = await make({ countsCacheMs: MINUTE }, prefix('dash-counts'));
    client = app.get(ReactorClient);
    app.get(Switches).failCharges = 1;
    await client.run('dash-checkout', { orderId: 'n-1', card: CARD });
    await client.run('dash-checkout', { orderId: 'n-2', card: CARD });
    await client.run('dash-parent', { n: 1 });
    reads = jest.spyOn(client, 'list');
  });
  afterEach(() => reads.mockClear());
  afterAll(async () => {
    reads?.mockRestore();
    await app?.close();
  });

  it('20 concurrent requests for the same filter do one reading of the runs index, and get the same answer', async () => {
    await counts({ since: 1 });
    const oneReading = reads.mock.calls.length;
    expect(oneReading).toBeGreaterThan(0);
    reads.mockClear();

    const replies = await Promise.all(Array.from({ length: 20 }, () => counts({ since: 2 })));
    expect(reads.mock.calls.length).toBe(oneReading);
    expect(new Set(replies.map((r) => JSON.stringify(r.body.counts))).size).toBe(1);
    expect(replies[0].body).toMatchObject({ total: 3, counts: { failed: 1, completed: 2 }, capped: false });
  });

  it('a later request for the filter reuses the reading and says when newer counts can be had', async () => {
    const first = await counts({ since: 3 });
    reads.mockClear();
    await client.run('dash-parent', { n: 2 });

    const again = await counts({ since: 3 });
    expect(reads).not.toHaveBeenCalled();
    expect(again.body.total).toBe(first.body.total);
    expect(again.body.computedAt).toBe(first.body.computedAt);
    expect(again.body.refreshAfterMs).toBeGreaterThan(0);
    expect(again.body.refreshAfterMs).toBeLessThanOrEqual(MINUTE);
    // Another filter is another reading: it sees the new run.
    expect((await counts({ since: 4 })).body.total).toBe(first.body.total + 1);
    expect(reads).toHaveBeenCalled();
  });

  it('a failed reading is not kept: the next request reads again', async () => {
    reads.mockRejectedValueOnce(new Error('index unreadable'));
    await http().get(`${BASE}/api/counts`).query({ since: 5 }).set(AUTH).expect(500);
    reads.mockClear();
    const reply = await counts({ since: 5 });
    expect(reads).toHaveBeenCalled();
    expect(reply.body.total).toBeGreaterThan(0);
  });
});

describe('the countsCacheMs option', () => {
  it('defaults to 2000 ms and refuses what is not an integer from 0 to a minute (the longest counts are reused)', () => {
    expect(resolveDashboardOptions({}, 'development').countsCacheMs).toBe(2000);
    expect(resolveDashboardOptions({ countsCacheMs: 0 }, 'development').countsCacheMs).toBe(0);
    expect(resolveDashboardOptions({ countsCacheMs: MINUTE }, 'development').countsCacheMs).toBe(MINUTE);
    for (const bad of [-1, 1.5, MINUTE + 1, 3_600_000, '100'])
      expect(() => resolveDashboardOptions({ countsCacheMs: bad as number }, 'development')).toThrow(
        ConfigurationError,
      );
  });
});
