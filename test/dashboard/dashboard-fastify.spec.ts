import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { ReactorDashboardModule } from '../../lib/dashboard';
import type { DashboardRun } from '../../lib/dashboard';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { CARD, DASHBOARD_PROVIDERS, Switches, TOKEN, TokenGuard } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const BASE = '/admin/reactor';

describe('the dashboard on Fastify (@nestjs/platform-fastify)', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    const module = await Test.createTestingModule({
      imports: [ReactorModule.forRoot(), ReactorDashboardModule.forRoot({ path: 'admin/reactor', guard: TokenGuard })],
      providers: DASHBOARD_PROVIDERS,
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });
  afterAll(() => app.close());

  it('serves the page and its assets with their headers, behind the guard', async () => {
    // Fastify matches the path as written (no trailing slash), unless the adapter has ignoreTrailingSlash.
    const page = await app.inject({ method: 'GET', url: BASE, headers: AUTH });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.body).toContain('<html');
    expect(page.body).toContain(`${BASE}/`); // the page's base, for its files and API calls
    expect(page.body).not.toContain(TOKEN);
    const script = await app.inject({ method: 'GET', url: `${BASE}/assets/app.js`, headers: AUTH });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await app.inject({ method: 'GET', url: BASE, headers: {} })).statusCode).toBe(401); // the test guard's answer
  });

  it('answers the API and takes an action: a failed run retried as a new run that completes', async () => {
    app.get(Switches).failCharges = 1;
    const client = app.get(ReactorClient);
    const failed = await client.run('dash-checkout', { orderId: 'fastify-1', card: CARD });
    expect(failed.status).toBe('failed');

    const view = await app.inject({ method: 'GET', url: `${BASE}/api/runs/${failed.runId}`, headers: AUTH });
    expect(view.statusCode).toBe(200);
    const run = view.json() as DashboardRun;
    expect(run.status).toBe('failed');
    expect(JSON.stringify(run)).not.toContain(CARD);

    // An action without the dashboard's header is refused (CSRF), with it accepted.
    const refused = await app.inject({
      method: 'POST',
      url: `${BASE}/api/runs/${failed.runId}/retry`,
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: {},
    });
    expect(refused.statusCode).toBe(403);
    const retry = await app.inject({
      method: 'POST',
      url: `${BASE}/api/runs/${failed.runId}/retry`,
      headers: { ...AUTH, 'content-type': 'application/json', 'x-reactor-dashboard': '1' },
      payload: {},
    });
    expect(retry.statusCode).toBe(200);
    const { runId } = retry.json() as { runId: string };
    expect((await client.wait(runId, { timeoutMs: 10_000 })).status).toBe('completed');
  });
});
