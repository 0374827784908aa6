/**
 * The dashboard's concurrency queues (issue 24): `api/flow/:reactor` answers the reactor's
 * `FlowQueues` (per key the runs holding a slot, how many wait, the next ones), behind the app's
 * guard like every read, 404 for an unknown reactor, empty for a reactor without concurrency, and
 * never a key its key function made of a redacted input. The runs page of such a reactor shows a
 * "Queues per key" panel (checked in headless Chromium, like dashboard-browser.spec.ts).
 */
import type { INestApplication } from '@nestjs/common';
import type { Browser, Page } from 'puppeteer-core';
import request from 'supertest';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { CARD, TOKEN, openDashboard, platformApp } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const API = '/admin/reactor/api/flow';

/** The page's document, as the functions evaluated in the browser use it (no DOM lib here). */
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement> & ArrayLike<PageElement>;
};

/** Held by every run of the reactors below until the test opens it. */
let gate: { promise: Promise<void>; open: () => void };
function closeGate(): void {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
}
closeGate();

type TenantInput = { tenant: string; card: string };

function held(r: ReactorBuilder<TenantInput>) {
  r.input('card', { type: 'string', redact: true });
  return r.step(
    'export',
    async ({ tenant }: { tenant: string }) => {
      await gate.promise;
      return success(tenant);
    },
    { tenant: r.input('tenant', { type: 'string' }) },
  );
}

/** One live run per tenant; a redacted card it never keys on. */
@Reactor('dash-flow', { concurrency: { key: (i) => String(i.tenant), limit: 1 } })
class TenantFlowReactor implements ReactorBlueprint<TenantInput> {
  build(r: ReactorBuilder<TenantInput>) {
    return held(r);
  }
}

/** One live run per card: its keys are as secret as the card. */
@Reactor('dash-flow-card', { concurrency: { key: (i) => `card:${String(i.card)}`, limit: 1 } })
class CardFlowReactor implements ReactorBlueprint<TenantInput> {
  build(r: ReactorBuilder<TenantInput>) {
    return held(r);
  }
}

/** No concurrency (only worker concurrency, a number: no flow control). */
@Reactor('dash-flow-none')
class NoFlowReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step('double', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) });
  }
}

describe('dashboard: api/flow/:reactor and the "Queues per key" panel', () => {
  let app: INestApplication;
  let client: ReactorClient;
  const started: string[] = [];

  async function start(reactor: string, tenant: string, card = CARD): Promise<string> {
    const outcome = await client.start(reactor, { tenant, card });
    expect(outcome.status).toBe('dispatched');
    started.push(outcome.runId);
    return outcome.runId;
  }

  beforeAll(async () => {
    app = await platformApp('express', { pollIntervalMs: 200 }, {}, [
      TenantFlowReactor,
      CardFlowReactor,
      NoFlowReactor,
    ]);
    await app.listen(0, '127.0.0.1');
    client = app.get(ReactorClient);
  });

  afterAll(async () => {
    gate.open();
    for (const runId of started) await client.wait(runId, { timeoutMs: 10_000 }).catch(() => undefined);
    await app?.close();
  });

  it('answers per key the live runs, how many wait and the next ones, in start order; behind the guard', async () => {
    const a = [await start('dash-flow', 'acme'), await start('dash-flow', 'acme'), await start('dash-flow', 'acme')];
    const b = await start('dash-flow', 'globex');

    await request(app.getHttpServer()).get(`${API}/dash-flow`).expect(401);
    const { body } = await request(app.getHttpServer()).get(`${API}/dash-flow`).set(AUTH).expect(200);
    expect(body).toEqual({ reactorName: 'dash-flow', limit: 1, keys: expect.any(Array) });
    const byKey = Object.fromEntries((body as { keys: Array<{ key: string }> }).keys.map((k) => [k.key, k]));
    expect(Object.keys(byKey).sort()).toEqual(['acme', 'globex']);
    expect(byKey.acme).toEqual({
      key: 'acme',
      live: [{ runId: a[0], since: expect.any(Number) }],
      queued: 2,
      next: [a[1], a[2]],
    });
    expect(byKey.globex).toEqual({
      key: 'globex',
      live: [{ runId: b, since: expect.any(Number) }],
      queued: 0,
      next: [],
    });
    expect(JSON.stringify(body)).not.toContain(CARD);

    // `peek` bounds the waiting ids shown, `limit` the keys.
    const peeked = await request(app.getHttpServer()).get(`${API}/dash-flow?peek=1&limit=1`).set(AUTH).expect(200);
    expect(peeked.body.keys).toHaveLength(1);
    for (const view of peeked.body.keys as Array<{ next: string[] }>) expect(view.next.length).toBeLessThanOrEqual(1);
  });

  it('refuses bad query parameters with 400', async () => {
    for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'peek=-1', 'peek=101', 'peek=1.5', 'limit=1&limit=2']) {
      const { body } = await request(app.getHttpServer()).get(`${API}/dash-flow?${query}`).set(AUTH).expect(400);
      expect(body.message).toMatch(/'(limit|peek)' must be an integer/);
    }
  });

  it('answers an unknown reactor 404 the way the runs endpoint does, and a reactor without concurrency empty', async () => {
    const unknown = await request(app.getHttpServer()).get(`${API}/nope`).set(AUTH).expect(404);
    const runs = await request(app.getHttpServer()).get('/admin/reactor/api/runs?reactor=nope').set(AUTH).expect(404);
    expect(unknown.body).toEqual(runs.body);
    expect(unknown.body).toMatchObject({ statusCode: 404, code: 'UNKNOWN_REACTOR' });

    const none = await request(app.getHttpServer()).get(`${API}/dash-flow-none`).set(AUTH).expect(200);
    expect(none.body).toEqual({ reactorName: 'dash-flow-none', keys: [] });
  });

  it('shows a key made of a redacted input as [REDACTED]', async () => {
    const first = await start('dash-flow-card', 'acme');
    const second = await start('dash-flow-card', 'acme');
    const { body } = await request(app.getHttpServer()).get(`${API}/dash-flow-card`).set(AUTH).expect(200);
    expect(body).toEqual({
      reactorName: 'dash-flow-card',
      limit: 1,
      keys: [{ key: '[REDACTED]', live: [{ runId: first, since: expect.any(Number) }], queued: 1, next: [second] }],
    });
    expect(JSON.stringify(body)).not.toContain(CARD);
  });

  describe('in headless Chromium', () => {
    let browser: Browser;
    let page: Page;
    let base: string;
    const problems: string[] = [];

    beforeAll(async () => {
      base = `${await app.getUrl()}/admin/reactor/`;
      ({ browser, page } = await openDashboard({ problems }));
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
    });

    afterEach(() => {
      expect(problems).toEqual([]);
    });

    it('shows "Queues per key" on the runs of a reactor with concurrency, with links to the next runs', async () => {
      const queued = (await client.flowQueues('dash-flow'))!.keys.find((k) => k.key === 'acme')!;
      expect(queued.next).toHaveLength(2);
      await page.goto(`${base}#/?reactor=dash-flow`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('section.flow-queues:not([hidden]) tr[data-key="acme"]');
      expect(await page.$eval('section.flow-queues h2', (el) => el.textContent)).toContain('Queues per key');
      const row = (key: string) =>
        page.$$eval(`section.flow-queues tr[data-key="${key}"] td`, (tds) => tds.map((td) => td.textContent));
      expect(await row('acme')).toEqual(['acme', '1 / 1', '2', expect.any(String)]);
      expect(await row('globex')).toEqual(['globex', '1 / 1', '0', '']);
      const links = await page.$$eval('section.flow-queues tr[data-key="acme"] td.next a', (as) =>
        as.map((a) => a.getAttribute('href')),
      );
      expect(links).toEqual(queued.next.map((runId) => `#/runs/${encodeURIComponent(runId)}`));

      // A redacted key is shown as such, and no card reaches the page.
      await page.goto(`${base}#/?reactor=dash-flow-card`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('section.flow-queues:not([hidden]) tr[data-key="[REDACTED]"]');
      expect(await page.content()).not.toContain(CARD);

      // Following a queued run's link opens its run view.
      await page.goto(`${base}#/?reactor=dash-flow`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('section.flow-queues:not([hidden]) tr[data-key="acme"] td.next a');
      await page.$eval('section.flow-queues tr[data-key="acme"] td.next a', (a) =>
        (a as unknown as { click(): void }).click(),
      );
      await page.waitForSelector(`.run-head[data-run="${queued.next[0]}"][data-status="pending"]`);
    }, 30_000);

    it('shows no panel for a reactor without concurrency, nor on every reactor’s runs', async () => {
      await client.run('dash-flow-none', { n: 2 });
      await page.goto(`${base}#/?reactor=dash-flow-none`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('#runs tr[data-run]');
      // Wait for a second poll: the panel stays hidden.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await page.$eval('section.flow-queues', (el) => el.getAttribute('hidden'))).not.toBeNull();
      await page.goto(`${base}#/`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('#runs tr[data-run]');
      expect(await page.$eval('section.flow-queues', (el) => el.getAttribute('hidden'))).not.toBeNull();
    }, 30_000);

    it('empties the queues once the runs end', async () => {
      gate.open();
      for (const runId of started) await client.wait(runId, { timeoutMs: 10_000 });
      await page.goto(`${base}#/?reactor=dash-flow`, { waitUntil: 'domcontentloaded' });
      await page.waitForFunction(
        () =>
          [...document.querySelectorAll('section.flow-queues tr[data-key] td[data-live]')].every(
            (td) => td.getAttribute('data-live') === '0',
          ) && document.querySelectorAll('section.flow-queues tbody tr').length > 0,
      );
      const { body } = await request(app.getHttpServer()).get(`${API}/dash-flow`).set(AUTH).expect(200);
      for (const view of body.keys as Array<{ live: unknown[]; queued: number }>) {
        expect(view.live).toEqual([]);
        expect(view.queued).toBe(0);
      }
    }, 30_000);
  });
});
