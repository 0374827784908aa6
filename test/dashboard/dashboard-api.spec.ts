import { Injectable, Module, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { ConfigurationError } from '../../lib/core/errors/configuration.error';
import { ReactorDashboardModule } from '../../lib/dashboard';
import type { DashboardRun, DashboardRunList } from '../../lib/dashboard';
import { CARD, DASHBOARD_PROVIDERS, Switches, TOKEN, dashboardApp, forgedActions } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const ACTION = { ...AUTH, 'x-reactor-dashboard': '1', 'content-type': 'application/json' };
const BASE = '/admin/reactor';

describe('ReactorDashboardModule.forRoot (mounting)', () => {
  const env = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = env;
  });

  it.each(['production', 'test', undefined])(
    'refuses to mount without a guard when NODE_ENV is %s, saying how to pass one',
    (nodeEnv) => {
      if (nodeEnv === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = nodeEnv;
      expect(() => ReactorDashboardModule.forRoot({ path: 'reactor' })).toThrow(ConfigurationError);
      expect(() => ReactorDashboardModule.forRoot({ path: 'reactor' })).toThrow(
        /no guard.*forRoot\(\{ path: 'reactor', guard/s,
      );
    },
  );

  it('refuses a guard that is not a CanActivate, and a bad path', () => {
    expect(() => ReactorDashboardModule.forRoot({ guard: {} as never })).toThrow(/'guard' must be a CanActivate/);
    expect(() => ReactorDashboardModule.forRoot({ guard: { canActivate: () => true }, path: 'a b' })).toThrow(
      /'path' must be a plain URL path/,
    );
  });

  it.each([
    '../x',
    '//evil.com',
    '/../x',
    'a/../b',
    './a',
    'a/.',
    '...',
    'a//b',
    '///a',
    '/',
    '',
    'a\\b',
    'http://evil.com',
  ])('refuses a path that is not a plain path (%j), naming the option', (path) => {
    const mount = () => ReactorDashboardModule.forRoot({ guard: { canActivate: () => true }, path });
    expect(mount).toThrow(ConfigurationError);
    expect(mount).toThrow(/forRoot\(\): 'path' must be a plain URL path .*no '\.' or '\.\.' segment, no '\/\/'/);
  });

  it.each([
    ['publicOrigin', 'ops.example.com'],
    ['publicOrigin', 'https://ops.example.com/admin'],
    ['publicOrigin', 'https://user@ops.example.com'],
    ['publicOrigin', 'ftp://ops.example.com'],
    ['publicOrigin', []],
    ['publicOrigin', ['https://ops.example.com', 'nope']],
    ['trustProxy', 'yes'],
  ])('refuses %s %j, naming the option', (option, value) => {
    const mount = () => ReactorDashboardModule.forRoot({ guard: { canActivate: () => true }, [option]: value });
    expect(mount).toThrow(ConfigurationError);
    expect(mount).toThrow(new RegExp(`forRoot\\(\\): '${option}' must be`));
  });

  it('refuses publicOrigin and trustProxy together', () => {
    expect(() =>
      ReactorDashboardModule.forRoot({
        guard: { canActivate: () => true },
        publicOrigin: 'https://ops.example.com',
        trustProxy: true,
      }),
    ).toThrow(/'trustProxy' must be false when 'publicOrigin' is set/);
  });

  it('builds a guard class with its dependencies from `imports`, and mounts two dashboards side by side', async () => {
    @Injectable()
    class Allowlist {
      readonly tokens = new Set(['ops-token']);
    }
    @Module({ providers: [Allowlist], exports: [Allowlist] })
    class AuthModule {}
    @Injectable()
    class AllowlistGuard implements CanActivate {
      constructor(private readonly allowlist: Allowlist) {}
      canActivate(context: ExecutionContext): boolean {
        const { headers } = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
        return this.allowlist.tokens.has(headers['x-token'] ?? '');
      }
    }
    const module = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot(),
        ReactorDashboardModule.forRoot({ path: 'ops/reactor', guard: AllowlistGuard, imports: [AuthModule] }),
        ReactorDashboardModule.forRoot({ path: 'admin/reactor', guard: { canActivate: () => false } }),
      ],
      providers: DASHBOARD_PROVIDERS,
    }).compile();
    const app = module.createNestApplication({ logger: false });
    await app.init();
    try {
      await request(app.getHttpServer()).get('/ops/reactor/api/reactors').set('x-token', 'ops-token').expect(200);
      await request(app.getHttpServer()).get('/ops/reactor/api/reactors').set('x-token', 'nope').expect(403);
      await request(app.getHttpServer()).get('/admin/reactor/api/reactors').set('x-token', 'ops-token').expect(403);
    } finally {
      await app.close();
    }
  });

  it('mounts without a guard in development (and then serves without credentials)', async () => {
    process.env.NODE_ENV = 'development';
    const module = await Test.createTestingModule({
      imports: [ReactorModule.forRoot(), ReactorDashboardModule.forRoot({ path: '/dev/reactor/' })],
      providers: DASHBOARD_PROVIDERS,
    }).compile();
    const app = module.createNestApplication({ logger: false });
    await app.init();
    try {
      const reply = await request(app.getHttpServer()).get('/dev/reactor/api/reactors').expect(200);
      expect(reply.body.reactors.map((r: { name: string }) => r.name)).toContain('dash-checkout');
    } finally {
      await app.close();
    }
  });
});

describe('the dashboard (API over the ReactorClient, Express)', () => {
  let app: INestApplication;
  let client: ReactorClient;
  let switches: Switches;
  const http = () => request(app.getHttpServer());

  beforeAll(async () => {
    app = await dashboardApp();
    client = app.get(ReactorClient);
    switches = app.get(Switches);
  });
  afterAll(async () => {
    await app?.close();
  });

  describe('security', () => {
    it('every route, the page and its assets included, goes through the guard', async () => {
      const run = await client.run('dash-checkout', { orderId: 'sec-1', card: CARD });
      for (const path of [
        '',
        '/',
        '/assets/app.js',
        '/assets/app.css',
        '/api/settings',
        '/api/reactors',
        '/api/runs',
        '/api/counts',
        `/api/runs/${run.runId}`,
      ])
        await http().get(`${BASE}${path}`).expect(401);
      for (const action of ['retry', 'undo', 'cancel', 'continue'])
        await http()
          .post(`${BASE}/api/runs/${run.runId}/${action}`)
          .set({ 'x-reactor-dashboard': '1', 'content-type': 'application/json' })
          .send({})
          .expect(401);
      expect((await client.get(run.runId))?.status).toBe('completed');
    });

    it('actions are POST only, need the dashboard header and a JSON body, and refuse another origin', async () => {
      const run = await client.run('dash-checkout', { orderId: 'sec-2', card: CARD });
      await http().get(`${BASE}/api/runs/${run.runId}/undo`).set(AUTH).expect(404);
      // A cross-site form post: no custom header, a form body.
      await http().post(`${BASE}/api/runs/${run.runId}/undo`).set(AUTH).type('form').send('x=1').expect(403);
      await http()
        .post(`${BASE}/api/runs/${run.runId}/undo`)
        .set({ ...AUTH, 'content-type': 'application/json' })
        .send({})
        .expect(403);
      await http()
        .post(`${BASE}/api/runs/${run.runId}/undo`)
        .set({ ...AUTH, 'x-reactor-dashboard': '1' })
        .type('form')
        .send('x=1')
        .expect(403);
      await http()
        .post(`${BASE}/api/runs/${run.runId}/undo`)
        .set({ ...ACTION, origin: 'https://evil.example' })
        .send({})
        .expect(403);
      expect((await client.get(run.runId))?.status).toBe('completed');
    });

    it('serves the page with its base, a strict CSP and no secret: no inputs, no credentials', async () => {
      await client.run('dash-checkout', { orderId: 'sec-3', card: CARD });
      const page = await http().get(`${BASE}`).set(AUTH).expect(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toMatch(/script-src 'self'/);
      expect(page.headers['content-security-policy']).not.toMatch(/unsafe-inline/);
      expect(page.text).toContain(`<base href="${BASE}/" />`);
      const script = await http().get(`${BASE}/assets/app.js`).set(AUTH).expect(200);
      expect(script.headers['content-type']).toMatch(/^text\/javascript/);
      for (const text of [page.text, script.text]) {
        expect(text).not.toContain(TOKEN);
        expect(text).not.toContain(CARD);
      }
    });

    it('redacts inputs and arguments in every read: runs, a run in full, counts', async () => {
      switches.failCharges = 1;
      const run = await client.run('dash-checkout', { orderId: 'sec-4', card: CARD });
      expect(run.status).toBe('failed');
      for (const path of ['/api/runs', `/api/runs/${run.runId}`, '/api/counts', '/api/reactors']) {
        const reply = await http().get(`${BASE}${path}`).set(AUTH).expect(200);
        expect(reply.text).not.toContain(CARD);
      }
      const full = (await http().get(`${BASE}/api/runs/${run.runId}`).set(AUTH)).body as DashboardRun;
      expect(full.inputs).toEqual({ orderId: 'sec-4', card: '[REDACTED]' });
      expect(full.failure?.stepArguments).toEqual({ orderId: 'sec-4', card: '[REDACTED]' });
    });
  });

  describe('cross-site actions, against an app granting CORS with credentials (listening on a real port)', () => {
    let served: INestApplication;
    let host: string;
    const at = () => request(`http://${host}`);

    beforeAll(async () => {
      served = await dashboardApp({}, {}, (app) => app.enableCors({ origin: true, credentials: true }));
      await served.listen(0, '127.0.0.1');
      host = new URL(await served.getUrl()).host;
    });
    afterAll(async () => {
      await served?.close();
    });

    it('refuses every forged cancel (403), and each one leaves its run untouched', async () => {
      const servedClient = served.get(ReactorClient);
      // Each attempt against a paused run of its own, so one that gets through shows by name.
      const results = [];
      for (const [i, forged] of forgedActions(host).entries()) {
        const target = await servedClient.run('dash-approval', { requestId: `csrf-express-${i}` });
        const before = JSON.stringify(await servedClient.get(target.runId));
        const reply = await at()
          .post(`${BASE}/api/runs/${target.runId}/cancel`)
          .set({ ...AUTH, ...forged.headers })
          .send(forged.body);
        const untouched = JSON.stringify(await servedClient.get(target.runId)) === before;
        results.push({ attempt: forged.name, status: reply.status, untouched });
      }
      expect(results).toEqual(
        forgedActions(host).map((forged) => ({ attempt: forged.name, status: 403, untouched: true })),
      );
      const paused = await servedClient.run('dash-approval', { requestId: 'csrf-express' });
      expect(paused.status).toBe('paused');
      // The page's own request (its origin: this scheme, host and port) is accepted.
      await at()
        .post(`${BASE}/api/runs/${paused.runId}/cancel`)
        .set({ ...ACTION, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' })
        .send({ reason: 'from the page' })
        .expect(200);
      expect((await servedClient.wait(paused.runId, { timeoutMs: 10_000 })).status).toBe('cancelled');
    });
  });

  describe('the origin of actions behind a proxy: publicOrigin, trustProxy', () => {
    async function withApp(
      options: Parameters<typeof dashboardApp>[0],
      test: (at: () => request.Agent, host: string, client: ReactorClient) => Promise<void>,
    ): Promise<void> {
      const served = await dashboardApp(options);
      try {
        await served.listen(0, '127.0.0.1');
        const host = new URL(await served.getUrl()).host;
        await test(() => request.agent(`http://${host}`), host, served.get(ReactorClient));
      } finally {
        await served.close();
      }
    }

    /**
     * A paused run's cancel is refused (403, the run stays paused) with each of `refused`'s headers,
     * then accepted (200, the run is cancelled) with `accepted`'s.
     */
    async function expectOnlyAccepted(
      at: () => request.Agent,
      c: ReactorClient,
      requestId: string,
      refused: Array<Record<string, string>>,
      accepted: Record<string, string>,
    ): Promise<void> {
      const paused = await c.run('dash-approval', { requestId });
      for (const headers of refused) {
        await at()
          .post(`${BASE}/api/runs/${paused.runId}/cancel`)
          .set({ ...ACTION, ...headers })
          .send({})
          .expect(403);
        expect((await c.get(paused.runId))?.status).toBe('paused');
      }
      await at()
        .post(`${BASE}/api/runs/${paused.runId}/cancel`)
        .set({ ...ACTION, ...accepted })
        .send({})
        .expect(200);
      expect((await c.wait(paused.runId, { timeoutMs: 10_000 })).status).toBe('cancelled');
    }

    it('publicOrigin: only that origin is accepted, not the request’s own host, and forwarding headers are ignored', () =>
      withApp({ publicOrigin: ['https://ops.example.com', 'https://ops.example.com:8443'] }, (at, host, c) =>
        expectOnlyAccepted(
          at,
          c,
          'public-origin',
          [
            { origin: `http://${host}` },
            { origin: 'http://ops.example.com' },
            { origin: 'https://evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
          ],
          { origin: 'https://ops.example.com:8443' },
        ),
      ));

    it('trustProxy: the scheme and host come from X-Forwarded-Proto and X-Forwarded-Host (the last value)', () => {
      const proxied = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'client-said.example, ops.example.com' };
      return withApp({ trustProxy: true }, (at, host, c) =>
        expectOnlyAccepted(
          at,
          c,
          'trust-proxy',
          [
            { ...proxied, origin: `http://${host}` },
            { ...proxied, origin: 'https://client-said.example' },
            { ...proxied, origin: 'http://ops.example.com' },
          ],
          { ...proxied, origin: 'https://ops.example.com' },
        ),
      );
    });

    it('without trustProxy (the default), the request’s own origin is used and no forwarding header counts', () => {
      const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'ops.example.com' };
      return withApp({}, (at, host, c) =>
        expectOnlyAccepted(at, c, 'no-trust', [{ ...forwarded, origin: 'https://ops.example.com' }], {
          ...forwarded,
          origin: `http://${host}`,
        }),
      );
    });
  });

  describe('reads', () => {
    it('lists every reactor with its DAG: each step’s kind, dependencies and what it runs', async () => {
      const { reactors } = (await http().get(`${BASE}/api/reactors`).set(AUTH).expect(200)).body as {
        reactors: Array<{ name: string; steps: Array<Record<string, unknown>> }>;
      };
      const byName = Object.fromEntries(reactors.map((r) => [r.name, r.steps]));
      expect(byName['dash-checkout']).toEqual([
        expect.objectContaining({ name: 'reserve', kind: 'step', dependsOn: [], undoable: true }),
        expect.objectContaining({ name: 'charge', kind: 'step', dependsOn: ['reserve'], undoable: false }),
        expect.objectContaining({ name: 'ship', kind: 'step', dependsOn: ['charge'] }),
      ]);
      expect(byName['dash-parent'][0]).toMatchObject({ name: 'child', kind: 'compose', reactor: 'dash-child' });
      expect(byName['dash-import'][0]).toMatchObject({
        name: 'lines',
        kind: 'map',
        reactor: 'dash-import-line',
        fanOut: true,
      });
      expect(byName['dash-approval'][0]).toMatchObject({
        name: 'approve',
        kind: 'interrupt',
        payload: {
          kind: 'fields',
          fields: [
            { name: 'approved', type: 'boolean', optional: false },
            { name: 'approver', type: 'string', optional: false },
          ],
        },
      });
    });

    it('lists runs newest first, merged over reactors, filtered by reactor, status and time, a cursor page at a time', async () => {
      const from = Date.now();
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const reactor = i % 2 === 0 ? 'dash-parent' : 'dash-child';
        ids.push((await client.run(reactor, { n: i })).runId);
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = (
          await http()
            .get(`${BASE}/api/runs`)
            .query({ since: from, limit: 3, ...(cursor ? { cursor } : {}) })
            .set(AUTH)
            .expect(200)
        ).body as DashboardRunList;
        expect(page.runs.length).toBeLessThanOrEqual(3);
        seen.push(...page.runs.map((r) => r.runId));
        cursor = page.cursor;
        pages++;
      } while (cursor && pages < 10);
      // The composed children are no runs of their own: the seven top-level runs, newest first (ties
      // in the same millisecond by run id, as client.list orders them), each once.
      expect([...seen].sort()).toEqual([...ids].sort());
      const oneReactor = async (reactor: string) =>
        ((await http().get(`${BASE}/api/runs`).query({ since: from, reactor }).set(AUTH)).body as DashboardRunList)
          .runs;
      const everyRun = [...(await oneReactor('dash-parent')), ...(await oneReactor('dash-child'))].sort(
        (a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : -1),
      );
      expect(seen).toEqual(everyRun.map((r) => r.runId));
      expect(pages).toBe(3);
      const parents = (
        await http().get(`${BASE}/api/runs`).query({ since: from, reactor: 'dash-parent' }).set(AUTH).expect(200)
      ).body as DashboardRunList;
      expect(parents.runs.map((r) => r.runId).sort()).toEqual([ids[6], ids[4], ids[2], ids[0]].sort());
      expect(parents.runs.every((r) => r.status === 'completed' && typeof r.updatedAt === 'number')).toBe(true);
      // until: created at or before; a range that ends before these runs has none of them.
      const before = (
        await http()
          .get(`${BASE}/api/runs`)
          .query({ since: from, until: new Date(from - 1).toISOString() })
          .set(AUTH)
          .expect(200)
      ).body as DashboardRunList;
      expect(before.runs).toEqual([]);
      const none = (await http().get(`${BASE}/api/runs`).query({ since: from, status: 'failed' }).set(AUTH).expect(200))
        .body as DashboardRunList;
      expect(none.runs).toEqual([]);
    });

    it('refuses a bad filter (400) and an unknown reactor (404), naming it', async () => {
      const bad = await http().get(`${BASE}/api/runs`).query({ status: 'weird' }).set(AUTH).expect(400);
      expect(bad.body.message).toMatch(/'status' must be one of/);
      await http().get(`${BASE}/api/runs`).query({ since: 'yesterday-ish' }).set(AUTH).expect(400);
      await http().get(`${BASE}/api/runs`).query({ cursor: 'nope' }).set(AUTH).expect(400);
      const unknown = await http().get(`${BASE}/api/runs`).query({ reactor: 'nope' }).set(AUTH).expect(404);
      expect(unknown.body).toMatchObject({ code: 'UNKNOWN_REACTOR' });
      const missing = await http().get(`${BASE}/api/runs/run-that-never-was`).set(AUTH).expect(404);
      expect(missing.body).toMatchObject({ code: 'RUN_NOT_FOUND' });
    });

    it('counts runs by status in a time range', async () => {
      const from = Date.now();
      switches.failCharges = 1;
      await client.run('dash-checkout', { orderId: 'count-1', card: CARD });
      await client.run('dash-checkout', { orderId: 'count-2', card: CARD });
      await client.run('dash-approval', { requestId: 'count-3' });
      const { body } = await http().get(`${BASE}/api/counts`).query({ since: from }).set(AUTH).expect(200);
      expect(body).toEqual({
        counts: {
          pending: 0,
          running: 0,
          paused: 1,
          rolling_back: 0,
          completed: 1,
          failed: 1,
          halted: 0,
          cancelled: 0,
        },
        total: 3,
        capped: false,
        computedAt: expect.any(Number),
        refreshAfterMs: expect.any(Number),
      });
      const checkout = await http()
        .get(`${BASE}/api/counts`)
        .query({ since: from, reactor: 'dash-checkout' })
        .set(AUTH)
        .expect(200);
      expect(checkout.body.total).toBe(2);
    });

    it('shows a failed run in full: step statuses on the DAG, the failure, the trace, the undo', async () => {
      switches.failCharges = 1;
      const run = await client.run('dash-checkout', { orderId: 'full-1', card: CARD });
      const full = (await http().get(`${BASE}/api/runs/${run.runId}`).set(AUTH).expect(200)).body as DashboardRun;
      expect(full).toMatchObject({ runId: run.runId, reactorName: 'dash-checkout', status: 'failed' });
      expect(full.steps.map((s) => [s.name, s.kind, s.status, s.attempts])).toEqual([
        ['reserve', 'step', 'undone', 1],
        ['charge', 'step', 'failed', 1],
        ['ship', 'step', 'pending', 0],
      ]);
      expect(full.steps[0].rollback).toBe('undone');
      // charge has no compensate: nothing ran for it.
      expect(full.steps[1].rollback).toBeUndefined();
      expect(full.failure).toMatchObject({ stepName: 'charge', errorMessage: 'card declined for full-1' });
      expect(full.failure?.rollbackFailures).toEqual([]);
      expect(full.trace.map((e) => `${e.type}:${e.step}`)).toEqual(
        expect.arrayContaining(['run:reserve', 'complete:reserve', 'run:charge', 'undo:reserve']),
      );
      // Rolled back: nothing is left to undo.
      expect(full.actions).toEqual({ retry: true, undo: false, cancel: false, continue: [] });
      expect(full.currentSteps).toEqual([]);
    });

    it('shows a completed run’s undo stack and composed children in full, with their own DAG', async () => {
      const checkout = await client.run('dash-checkout', { orderId: 'full-2', card: CARD });
      const full = (await http().get(`${BASE}/api/runs/${checkout.runId}`).set(AUTH).expect(200)).body as DashboardRun;
      expect(full.undoStack).toEqual(['reserve', 'charge', 'ship']);
      const parent = await client.run('dash-parent', { n: 20 });
      const composed = (await http().get(`${BASE}/api/runs/${parent.runId}`).set(AUTH).expect(200))
        .body as DashboardRun;
      expect(composed.value).toBe('got 41');
      expect(composed.steps.map((s) => [s.name, s.kind, s.status])).toEqual([
        ['child', 'compose', 'completed'],
        ['report', 'step', 'completed'],
      ]);
      expect(composed.children.child).toMatchObject({ reactorName: 'dash-child', status: 'completed', value: 41 });
      expect(composed.children.child.steps.map((s) => [s.name, s.status, s.dependsOn])).toEqual([
        ['double', 'completed', []],
        ['inc', 'completed', ['double']],
      ]);
      expect(composed.children.child.actions).toEqual({ retry: false, undo: false, cancel: false, continue: [] });
    });

    it('shows a fan-out map’s progress and drills down to its failed elements', async () => {
      const items = ['a', 'bad-1', 'b', 'c', 'bad-2', 'd'];
      const started = await client.run('dash-import', { items });
      await client.wait(started.runId, { timeoutMs: 10_000 });
      const full = (await http().get(`${BASE}/api/runs/${started.runId}`).set(AUTH).expect(200)).body as DashboardRun;
      expect(full.maps.lines).toMatchObject({ mode: 'fanOut', total: 6, settled: 6, succeeded: 4, failed: 2 });
      expect(full.steps[0]).toMatchObject({ name: 'lines', kind: 'map', fanOut: true });
      const drill = await http().get(`${BASE}/api/runs/${started.runId}/maps/lines/elements`).set(AUTH).expect(200);
      expect(drill.body.total).toBe(6);
      expect(drill.body.elements.map((e: { index: number; status: string }) => [e.index, e.status])).toEqual([
        [1, 'failed'],
        [4, 'failed'],
      ]);
      expect(drill.body.elements[0].failure).toMatchObject({ stepName: 'load', errorMessage: "cannot load 'bad-1'" });
      const all = await http()
        .get(`${BASE}/api/runs/${started.runId}/maps/lines/elements`)
        .query({ status: 'all', from: 4 })
        .set(AUTH)
        .expect(200);
      expect(all.body.elements.map((e: { index: number }) => e.index)).toEqual([4, 5]);
      await http().get(`${BASE}/api/runs/${started.runId}/maps/nope/elements`).set(AUTH).expect(400);
    });
    it('drills down to an inline map’s failed elements too', async () => {
      const run = await client.run('dash-inline-import', { items: ['bad-0', 'a', 'b', 'bad-3'] });
      const full = (await http().get(`${BASE}/api/runs/${run.runId}`).set(AUTH).expect(200)).body as DashboardRun;
      expect(full.maps.lines).toMatchObject({ mode: 'inline', total: 4, failed: 2 });
      const drill = await http().get(`${BASE}/api/runs/${run.runId}/maps/lines/elements`).set(AUTH).expect(200);
      expect(drill.body.elements.map((e: { index: number }) => e.index)).toEqual([0, 3]);
    });
  });

  describe('actions', () => {
    it('retries a failed run as a new run, which completes', async () => {
      switches.failCharges = 1;
      const failed = await client.run('dash-checkout', { orderId: 'act-1', card: CARD });
      expect(failed.status).toBe('failed');
      const reply = await http().post(`${BASE}/api/runs/${failed.runId}/retry`).set(ACTION).send({}).expect(200);
      expect(reply.body.status).toBe('dispatched');
      expect(reply.body.runId).not.toBe(failed.runId);
      expect((await client.wait(reply.body.runId, { timeoutMs: 10_000 })).status).toBe('completed');
      const retried = (await http().get(`${BASE}/api/runs/${reply.body.runId}`).set(AUTH)).body as DashboardRun;
      expect(retried).toMatchObject({ retriedFrom: failed.runId, retryCount: 1, status: 'completed' });
      // A run that is not failed cannot be retried: 409 with the code.
      const again = await http().post(`${BASE}/api/runs/${reply.body.runId}/retry`).set(ACTION).send({}).expect(409);
      expect(again.body.code).toBe('INVALID_RUN_STATE');
    });

    it('undoes a completed run', async () => {
      const done = await client.run('dash-checkout', { orderId: 'act-2', card: CARD });
      const reply = await http().post(`${BASE}/api/runs/${done.runId}/undo`).set(ACTION).send({}).expect(200);
      expect(reply.body).toEqual({ runId: done.runId, status: 'cancelled' });
      expect(switches.released).toContain('hold-act-2');
      const full = (await http().get(`${BASE}/api/runs/${done.runId}`).set(AUTH)).body as DashboardRun;
      expect(full.steps.find((s) => s.name === 'reserve')?.status).toBe('undone');
    });

    it('answers an interrupt: an invalid payload is refused with its field errors, a valid one resumes the run', async () => {
      const paused = await client.run('dash-approval', { requestId: 'act-3' });
      expect(paused.status).toBe('paused');
      const full = (await http().get(`${BASE}/api/runs/${paused.runId}`).set(AUTH)).body as DashboardRun;
      expect(full.steps[0]).toMatchObject({ name: 'approve', status: 'paused' });
      expect(full.currentSteps).toEqual(['approve']);
      expect(full.actions).toEqual({ retry: false, undo: false, cancel: true, continue: ['approve'] });
      expect(full.pendingInterrupts).toEqual([
        expect.objectContaining({
          step: 'approve',
          path: 'approve',
          payload: expect.objectContaining({ kind: 'fields' }),
        }),
      ]);
      const invalid = await http()
        .post(`${BASE}/api/runs/${paused.runId}/continue`)
        .set(ACTION)
        .send({ step: 'approve', payload: { approved: 'yes' } })
        .expect(422);
      expect(invalid.body).toMatchObject({ code: 'PAYLOAD_INVALID', attemptsLeft: 2 });
      expect(Object.keys(invalid.body.fieldErrors).sort()).toEqual(['approved', 'approver']);
      expect((await client.get(paused.runId))?.status).toBe('paused');
      const ok = await http()
        .post(`${BASE}/api/runs/${paused.runId}/continue`)
        .set(ACTION)
        .send({ step: 'approve', payload: { approved: true, approver: 'grace' } })
        .expect(200);
      expect(ok.body).toEqual({ runId: paused.runId, status: 'completed', resume: 'applied' });
      const twice = await http()
        .post(`${BASE}/api/runs/${paused.runId}/continue`)
        .set(ACTION)
        .send({ step: 'approve', payload: { approved: true, approver: 'grace' } });
      expect(twice.status).toBe(409);
      await http().post(`${BASE}/api/runs/${paused.runId}/continue`).set(ACTION).send({}).expect(400);
    });

    it('answers an interrupt inside a composed child by its path', async () => {
      const paused = await client.run('dash-approval-parent', { requestId: 'act-5' });
      expect(paused.status).toBe('paused');
      const full = (await http().get(`${BASE}/api/runs/${paused.runId}`).set(AUTH)).body as DashboardRun;
      expect(full.actions.continue).toEqual(['approval.approve']);
      expect(full.steps[0]).toMatchObject({ name: 'approval', kind: 'compose', status: 'paused' });
      expect(full.currentSteps).toEqual(['approval']);
      expect(full.children.approval.pendingInterrupts).toEqual([
        expect.objectContaining({ step: 'approve', path: 'approval.approve' }),
      ]);
      const ok = await http()
        .post(`${BASE}/api/runs/${paused.runId}/continue`)
        .set(ACTION)
        .send({ step: 'approval.approve', payload: { approved: true, approver: 'grace' } })
        .expect(200);
      expect(ok.body.status).toBe('completed');
    });

    it('cancels a paused run with a reason', async () => {
      const paused = await client.run('dash-approval', { requestId: 'act-4' });
      const reply = await http()
        .post(`${BASE}/api/runs/${paused.runId}/cancel`)
        .set(ACTION)
        .send({ reason: 'duplicate request' })
        .expect(200);
      expect(reply.body.runId).toBe(paused.runId);
      const outcome = await client.wait(paused.runId, { timeoutMs: 10_000 });
      expect(outcome.status).toBe('cancelled');
      const full = (await http().get(`${BASE}/api/runs/${paused.runId}`).set(AUTH)).body as DashboardRun;
      expect(full.cancellation).toMatchObject({ reason: 'duplicate request' });
      await http().post(`${BASE}/api/runs/${paused.runId}/cancel`).set(ACTION).send({}).expect(409);
    });
  });
});
