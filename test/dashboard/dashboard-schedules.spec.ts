/**
 * The dashboard's schedules (issue 23): `api/schedules` lists every schedule with its timing, its
 * next tick and its last run (with the run's status), and never its input.
 */
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { dashboardApp, TOKEN } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };

describe('dashboard: api/schedules', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await dashboardApp();
  });
  afterAll(async () => {
    await app.close();
  });

  it('lists each schedule with its next tick and last run, without its input; behind the guard', async () => {
    const client = app.get(ReactorClient);
    await request(app.getHttpServer()).get('/admin/reactor/api/schedules').expect(401);
    expect((await request(app.getHttpServer()).get('/admin/reactor/api/schedules').set(AUTH).expect(200)).body).toEqual(
      {
        schedules: [],
      },
    );

    const view = await client.schedules.upsert({
      id: 'yearly:acme',
      reactor: 'dash-checkout',
      cron: '0 0 1 1 *',
      tz: 'Europe/Paris',
      input: { orderId: 'o-1', card: 'secret-card' },
    });
    const started = await client.schedules.trigger('yearly:acme');
    expect(started.status).toBe('started');
    const runId = (started as { runId: string }).runId;
    await client.wait(runId);

    const { body } = await request(app.getHttpServer()).get('/admin/reactor/api/schedules').set(AUTH).expect(200);
    expect(body).toEqual({
      schedules: [
        {
          id: 'yearly:acme',
          reactor: 'dash-checkout',
          cron: '0 0 1 1 *',
          tz: 'Europe/Paris',
          overlap: 'skip',
          paused: false,
          declared: false,
          nextTickAt: view.nextTickAt,
          lastRun: { runId, at: expect.any(Number), status: 'completed' },
          lastTick: { runId, at: expect.any(Number) },
        },
      ],
    });
    expect(JSON.stringify(body)).not.toContain('secret-card');
  });
});
