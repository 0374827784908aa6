/**
 * Issue 25, bulk actions in the dashboard's API on the Redis runtime: `api/runs/bulk` retries or
 * cancels many runs (a refusal is reported per run), `api/runs/retry-many` is `client.retryMany`
 * (dry run, real, a second call replays). Both are actions: the header, JSON and the guard.
 */
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { CARD, Switches, TOKEN, dashboardApp } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const ACTION = { ...AUTH, 'x-reactor-dashboard': '1', 'content-type': 'application/json' };
const BASE = '/admin/reactor';

describe('dashboard bulk actions on the Redis runtime', () => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  const http = () => request(app.getHttpServer());

  beforeAll(async () => {
    app = await dashboardApp({}, { redis: { url: redisUrl() }, prefix: prefix('dash-bulk') });
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('api/runs/bulk retries failed runs and cancels live ones, reporting refusals per run', async () => {
    app.get(Switches).failCharges = 2;
    const a = await client.run('dash-checkout', { orderId: 'b-1', card: CARD });
    const b = await client.run('dash-checkout', { orderId: 'b-2', card: CARD });
    const done = await client.run('dash-checkout', { orderId: 'b-3', card: CARD });
    expect([a.status, b.status, done.status]).toEqual(['failed', 'failed', 'completed']);
    const reply = await http()
      .post(`${BASE}/api/runs/bulk`)
      .set(ACTION)
      .send({ action: 'retry', runIds: [a.runId, b.runId, done.runId] })
      .expect(200);
    expect(reply.body.action).toBe('retry');
    const [ra, rb, rdone] = reply.body.results;
    expect(ra).toMatchObject({ runId: a.runId, ok: true });
    expect(rb).toMatchObject({ runId: b.runId, ok: true });
    expect(rdone).toMatchObject({ runId: done.runId, ok: false, code: 'INVALID_RUN_STATE' });
    for (const r of [ra, rb]) expect((await client.wait(r.newRunId, { timeoutMs: 15_000 })).status).toBe('completed');

    const paused = await client.run('dash-approval', { requestId: 'b-4' });
    expect(paused.status).toBe('paused');
    const cancel = await http()
      .post(`${BASE}/api/runs/bulk`)
      .set(ACTION)
      .send({ action: 'cancel', runIds: [paused.runId, done.runId], reason: 'bulk' })
      .expect(200);
    expect(cancel.body.results).toEqual([
      expect.objectContaining({ runId: paused.runId, ok: true }),
      expect.objectContaining({ runId: done.runId, ok: false, code: 'INVALID_RUN_STATE' }),
    ]);
    expect((await client.wait(paused.runId, { timeoutMs: 15_000 })).status).toBe('cancelled');

    await http()
      .post(`${BASE}/api/runs/bulk`)
      .set(ACTION)
      .send({ action: 'undo', runIds: [a.runId] })
      .expect(400);
    await http().post(`${BASE}/api/runs/bulk`).set(ACTION).send({ action: 'retry', runIds: [] }).expect(400);
    // An action: without the header it is refused, and nothing is done.
    await http()
      .post(`${BASE}/api/runs/bulk`)
      .set({ ...AUTH, 'content-type': 'application/json' })
      .send({ action: 'retry', runIds: [a.runId] })
      .expect(403);
  });

  it('api/runs/retry-many: a dry run, then each failed run retried once; a second call replays', async () => {
    const since = Date.now();
    app.get(Switches).failCharges = 2;
    const ids = [
      (await client.run('dash-checkout', { orderId: 'm-1', card: CARD })).runId,
      (await client.run('dash-checkout', { orderId: 'm-2', card: CARD })).runId,
    ];
    const dry = await http()
      .post(`${BASE}/api/runs/retry-many`)
      .set(ACTION)
      .send({ reactor: 'dash-checkout', since, dryRun: true })
      .expect(200);
    expect(dry.body).toEqual({ dryRun: true, refused: [], retried: [{ runId: ids[1] }, { runId: ids[0] }] });
    const real = await http().post(`${BASE}/api/runs/retry-many`).set(ACTION).send({ reactor: 'dash-checkout', since });
    expect(real.status).toBe(200);
    expect(real.body.retried.map((r: { runId: string }) => r.runId)).toEqual([ids[1], ids[0]]);
    for (const r of real.body.retried as Array<{ newRunId: string }>)
      expect((await client.wait(r.newRunId, { timeoutMs: 15_000 })).status).toBe('completed');
    const again = await http()
      .post(`${BASE}/api/runs/retry-many`)
      .set(ACTION)
      .send({ reactor: 'dash-checkout', since });
    expect(again.body.retried.every((r: { replayed?: boolean }) => r.replayed === true)).toBe(true);
    await http().post(`${BASE}/api/runs/retry-many`).set(ACTION).send({}).expect(400);
    await http()
      .post(`${BASE}/api/runs/retry-many`)
      .set(ACTION)
      .send({ reactor: 'dash-checkout', limit: 0 })
      .expect(400);
  });
});
