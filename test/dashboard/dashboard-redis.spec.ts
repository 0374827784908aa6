import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ReactorClient } from '../../lib/nest/reactor.client';
import type { DashboardRun, DashboardRunList } from '../../lib/dashboard';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { CARD, Switches, TOKEN, dashboardApp } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const ACTION = { ...AUTH, 'x-reactor-dashboard': '1', 'content-type': 'application/json' };
const BASE = '/admin/reactor';

describe('the dashboard on the Redis runtime (runs index, map records and jobs in Redis)', () => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  const http = () => request(app.getHttpServer());

  beforeAll(async () => {
    app = await dashboardApp({}, { redis: { url: redisUrl() }, prefix: prefix('dashboard') });
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('lists, shows and retries a failed run; drills into a fan-out map’s failed elements', async () => {
    app.get(Switches).failCharges = 1;
    const failed = await client.run('dash-checkout', { orderId: 'r-1', card: CARD });
    expect(failed.status).toBe('failed');
    const imported = await client.run('dash-import', { items: ['a', 'bad-1', 'b'] });
    await client.wait(imported.runId, { timeoutMs: 15_000 });

    const list = (await http().get(`${BASE}/api/runs`).set(AUTH).expect(200)).body as DashboardRunList;
    expect(list.runs.map((r) => [r.runId, r.status])).toEqual(
      expect.arrayContaining([
        [failed.runId, 'failed'],
        [imported.runId, 'completed'],
      ]),
    );
    const full = (await http().get(`${BASE}/api/runs/${failed.runId}`).set(AUTH).expect(200)).body as DashboardRun;
    expect(full.steps.map((s) => s.status)).toEqual(['undone', 'failed', 'pending']);
    expect(JSON.stringify(full)).not.toContain(CARD);

    const drill = await http().get(`${BASE}/api/runs/${imported.runId}/maps/lines/elements`).set(AUTH).expect(200);
    expect(drill.body).toMatchObject({ total: 3, elements: [{ index: 1, status: 'failed' }] });

    const retry = await http().post(`${BASE}/api/runs/${failed.runId}/retry`).set(ACTION).send({}).expect(200);
    expect((await client.wait(retry.body.runId, { timeoutMs: 15_000 })).status).toBe('completed');
    const counts = await http().get(`${BASE}/api/counts`).set(AUTH).expect(200);
    expect(counts.body.counts).toMatchObject({ failed: 1, completed: 2 });
  }, 40_000);
});
