/**
 * The runs list's bulk actions in headless Chromium: tick runs, retry (or cancel) them at once
 * through `api/runs/bulk`; the page says how many were done and which were refused, and why.
 */
import type { INestApplication } from '@nestjs/common';
import type { Browser, Page } from 'puppeteer-core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { CARD, SECRET_REACTORS, Switches, openDashboard, platformApp } from './dashboard.fixtures';

interface PageElement {
  textContent: string | null;
}
declare const document: { querySelector(selector: string): PageElement | null };

describe('bulk actions on the runs list (headless Chromium)', () => {
  let app: INestApplication;
  let browser: Browser;
  let page: Page;
  let base: string;
  let client: ReactorClient;
  const problems: string[] = [];

  beforeAll(async () => {
    app = await platformApp('express', { pollIntervalMs: 200 }, {}, SECRET_REACTORS);
    await app.listen(0, '127.0.0.1');
    base = `${await app.getUrl()}/admin/reactor/`;
    client = app.get(ReactorClient);
    ({ browser, page } = await openDashboard({ problems }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  afterEach(() => {
    expect(problems).toEqual([]);
  });

  it('retries the ticked failed runs at once, and names the run it refused (a completed one) with its code', async () => {
    app.get(Switches).failCharges = 2;
    const failed = [
      await client.run('dash-checkout', { orderId: 'bulk-1', card: CARD }),
      await client.run('dash-checkout', { orderId: 'bulk-2', card: CARD }),
    ];
    expect(failed.map((o) => o.status)).toEqual(['failed', 'failed']);
    const completed = await client.run('dash-checkout', { orderId: 'bulk-ok', card: CARD });
    expect(completed.status).toBe('completed');

    await page.goto(base, { waitUntil: 'domcontentloaded' });
    for (const { runId } of [...failed, completed]) {
      await page.waitForSelector(`tr[data-run="${runId}"] input[data-select]`);
      await page.click(`tr[data-run="${runId}"] input[data-select]`);
    }
    expect(await page.$eval('[data-bulk-count]', (el) => el.textContent)).toBe('3 selected');
    await page.click('button[data-action="retry selected"]');
    await page.click('button[data-confirm="retry selected"]');
    await page.waitForFunction(() => (document.querySelector('[data-bulk-info]')?.textContent ?? '') !== '', {
      timeout: 10_000,
    });
    const info = await page.$eval('[data-bulk-info]', (el) => el.textContent ?? '');
    expect(info).toMatch(/^retried 2, refused 1 \(/);
    expect(info).toContain('INVALID_RUN_STATE');
    expect(info).toContain(completed.runId.slice(0, 8));

    // Each failed run now has a retry of its own, which completes.
    const retries = (await client.list({ reactor: 'dash-checkout', limit: 50 })).runs;
    for (const { runId } of failed) {
      const views = await Promise.all(retries.map((r) => client.get(r.runId)));
      const retry = views.find((v) => v?.retriedFrom === runId);
      expect(retry).toBeDefined();
      expect((await client.wait(retry!.runId, { timeoutMs: 10_000 })).status).toBe('completed');
    }
    expect(await page.$$eval('tr[data-run] input[data-select]:checked', (boxes) => boxes.length)).toBe(0);
  }, 60_000);
});
