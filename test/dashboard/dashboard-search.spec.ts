/**
 * Search in the dashboard (issue 25) on the Redis runtime: `api/runs` takes `tag` (`key=value`),
 * `runId` and `correlationId` (guarded like the other parameters), and the runs page's search box
 * (`tag:key=value`, `corr:<id>`, else a run id) filters the table, in headless Chromium.
 */
import type { INestApplication } from '@nestjs/common';
import type { Browser, Page } from 'puppeteer-core';
import request from 'supertest';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { CARD, TOKEN, dashboardApp, openDashboard } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const BASE = '/admin/reactor';

/** The page's document, as the functions evaluated in the browser use it (no DOM lib here). */
declare const document: {
  querySelectorAll(selector: string): ArrayLike<{ getAttribute(name: string): string | null }>;
};

describe('dashboard search on the Redis runtime', () => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  let browser: Browser | undefined;
  let page: Page;
  const http = () => request(app.getHttpServer());
  const ids: string[] = [];

  beforeAll(async () => {
    app = await dashboardApp({ pollIntervalMs: 200 }, { redis: { url: redisUrl() }, prefix: prefix('dash-search') });
    await app.listen(0, '127.0.0.1');
    client = app.get(ReactorClient);
    for (let i = 0; i < 3; i++) {
      const customer = i === 1 ? 'globex' : 'acme';
      const run = await client.run('dash-checkout', { orderId: `s-${i}`, card: CARD }, { tags: { customer } });
      expect(run.status).toBe('completed');
      ids.push(run.runId);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('api/runs filters by tag, run id and correlation id, and refuses a bad tag', async () => {
    const byTag = await http().get(`${BASE}/api/runs`).query({ tag: 'customer=acme' }).set(AUTH).expect(200);
    expect(byTag.body.runs.map((r: { runId: string }) => r.runId)).toEqual([ids[2], ids[0]]);
    const byReactor = await http()
      .get(`${BASE}/api/runs`)
      .query({ reactor: 'dash-checkout', tag: 'customer=globex' })
      .set(AUTH)
      .expect(200);
    expect(byReactor.body.runs.map((r: { runId: string }) => r.runId)).toEqual([ids[1]]);
    const byId = await http().get(`${BASE}/api/runs`).query({ runId: ids[0] }).set(AUTH).expect(200);
    expect(byId.body.runs).toEqual([expect.objectContaining({ runId: ids[0], reactorName: 'dash-checkout' })]);
    const none = await http().get(`${BASE}/api/runs`).query({ correlationId: 'nobody' }).set(AUTH).expect(200);
    expect(none.body.runs).toEqual([]);
    await http().get(`${BASE}/api/runs`).query({ tag: 'no value' }).set(AUTH).expect(400);
    await http()
      .get(`${BASE}/api/runs`)
      .query({ runId: 'x'.repeat(513) })
      .set(AUTH)
      .expect(400);
  });

  it('the runs page search box filters the table by tag and by run id', async () => {
    ({ browser, page } = await openDashboard({ viewport: null }));
    const base = `${await app.getUrl()}${BASE}/`;
    const shown = () =>
      page.evaluate(() => Array.from(document.querySelectorAll('tr[data-run]'), (tr) => tr.getAttribute('data-run')));

    await page.goto(base, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`tr[data-run="${ids[1]}"]`);
    await page.type('input[name="q"]', 'tag:customer=globex');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (id: string) =>
        document.querySelectorAll('tr[data-run]').length === 1 &&
        document.querySelectorAll(`tr[data-run="${id}"]`).length === 1,
      {},
      ids[1],
    );
    expect(await shown()).toEqual([ids[1]]);

    await page.goto(`${base}#/?q=${encodeURIComponent(ids[0])}`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(
      (id: string) =>
        document.querySelectorAll('tr[data-run]').length === 1 &&
        document.querySelectorAll(`tr[data-run="${id}"]`).length === 1,
      {},
      ids[0],
    );
    expect(await shown()).toEqual([ids[0]]);
  }, 60_000);
});
