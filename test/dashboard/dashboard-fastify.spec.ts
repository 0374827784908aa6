import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { ReactorDashboardModule } from '../../lib/dashboard';
import type { DashboardRun, ReactorDashboardOptions } from '../../lib/dashboard';
import { ConfigurationError } from '../../lib/core/errors/configuration.error';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { CARD, DASHBOARD_PROVIDERS, Switches, TOKEN, TokenGuard, forgedActions } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const BASE = '/admin/reactor';
const ACTION = { ...AUTH, 'content-type': 'application/json', 'x-reactor-dashboard': '1' };

/** A Fastify app with the dashboard at `admin/reactor`, granting CORS with credentials (as the probe's app did). */
async function fastifyApp(options: ReactorDashboardOptions = {}): Promise<NestFastifyApplication> {
  const module = await Test.createTestingModule({
    imports: [
      ReactorModule.forRoot(),
      ReactorDashboardModule.forRoot({ path: 'admin/reactor', guard: TokenGuard, ...options }),
    ],
    providers: DASHBOARD_PROVIDERS,
  }).compile();
  const app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  app.enableCors({ origin: true, credentials: true });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

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

describe('the dashboard on Fastify: cross-site actions and the origin check', () => {
  const HOST = 'dash.test:3000';

  it('refuses every forged cancel (403), and each one leaves the run untouched', async () => {
    const app = await fastifyApp();
    try {
      const client = app.get(ReactorClient);
      // Each attempt against a paused run of its own, so one that gets through shows by name.
      const results = [];
      for (const [i, forged] of forgedActions(HOST).entries()) {
        const target = await client.run('dash-approval', { requestId: `csrf-fastify-${i}` });
        const before = JSON.stringify(await client.get(target.runId));
        const reply = await app.inject({
          method: 'POST',
          url: `${BASE}/api/runs/${target.runId}/cancel`,
          headers: { ...AUTH, host: HOST, ...forged.headers },
          payload: forged.body,
        });
        const untouched = JSON.stringify(await client.get(target.runId)) === before;
        results.push({ attempt: forged.name, status: reply.statusCode, untouched });
      }
      expect(results).toEqual(
        forgedActions(HOST).map((forged) => ({
          attempt: forged.name,
          status: forged.fastifyStatus ?? 403,
          untouched: true,
        })),
      );
      const paused = await client.run('dash-approval', { requestId: 'csrf-fastify' });
      expect(paused.status).toBe('paused');
      const accepted = await app.inject({
        method: 'POST',
        url: `${BASE}/api/runs/${paused.runId}/cancel`,
        headers: { ...ACTION, host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' },
        payload: { reason: 'from the page' },
      });
      expect(accepted.statusCode).toBe(200);
      expect((await client.wait(paused.runId, { timeoutMs: 10_000 })).status).toBe('cancelled');
    } finally {
      await app.close();
    }
  });

  it('publicOrigin: only the configured origin; trustProxy: the forwarded scheme and host', async () => {
    /** On an app with `options`: a paused run's cancel is refused (403, still paused), then accepted (200). */
    async function refusedThenAccepted(
      options: ReactorDashboardOptions,
      requestId: string,
      refused: Record<string, string>,
      accepted: Record<string, string>,
    ): Promise<void> {
      const app = await fastifyApp(options);
      try {
        const client = app.get(ReactorClient);
        const paused = await client.run('dash-approval', { requestId });
        const cancel = (headers: Record<string, string>) =>
          app.inject({
            method: 'POST',
            url: `${BASE}/api/runs/${paused.runId}/cancel`,
            headers: { ...ACTION, host: HOST, ...headers },
            payload: {},
          });
        expect((await cancel(refused)).statusCode).toBe(403);
        expect((await client.get(paused.runId))?.status).toBe('paused');
        expect((await cancel(accepted)).statusCode).toBe(200);
      } finally {
        await app.close();
      }
    }

    await refusedThenAccepted(
      { publicOrigin: 'https://ops.example.com' },
      'fastify-public',
      { origin: `http://${HOST}` },
      { origin: 'https://ops.example.com' },
    );
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'ops.example.com' };
    await refusedThenAccepted(
      { trustProxy: true },
      'fastify-proxy',
      { ...forwarded, origin: `http://${HOST}` },
      { ...forwarded, origin: 'https://ops.example.com' },
    );
  });

  it.each(['../x', '//evil.com', 'a/../b'])('refuses the path %j before mounting, naming the option', (path) => {
    expect(() => ReactorDashboardModule.forRoot({ path, guard: TokenGuard })).toThrow(ConfigurationError);
    expect(() => ReactorDashboardModule.forRoot({ path, guard: TokenGuard })).toThrow(
      /'path' must be a plain URL path/,
    );
  });

  it('mounts at a plain path given with its slashes', async () => {
    const app = await fastifyApp({ path: '/ops/reactor/' });
    try {
      expect((await app.inject({ method: 'GET', url: '/ops/reactor/api/settings', headers: AUTH })).statusCode).toBe(
        200,
      );
    } finally {
      await app.close();
    }
  });
});
