/**
 * The dashboard's page in a real headless Chromium (the system's package, driven by
 * puppeteer-core): the runs table, a failed run's DAG, retrying it, answering an interrupt, a fan-out
 * map's failed elements. Writes a screenshot of a run page to docs/dashboard.png.
 *
 * Chromium is found through CHROMIUM_PATH (or PUPPETEER_EXECUTABLE_PATH), else `chromium` or
 * `chromium-browser` on PATH, else the one the `@sparticuz/chromium` dev dependency ships
 * (test/support/chromium.ts), so it runs on a bare machine after `npm ci`.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { Browser, Page } from 'puppeteer-core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import {
  CARD,
  FINGERPRINT,
  Gate,
  SECRET_REACTORS,
  Switches,
  TOKEN,
  openDashboard,
  platformApp,
} from './dashboard.fixtures';

/** The page's document, as the functions evaluated in the browser use it (this project compiles without the DOM lib). */
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement> & ArrayLike<PageElement>;
};

// The README's picture is refreshed on demand (UPDATE_DASHBOARD_SCREENSHOT=1), so a test run leaves
// the work tree as it found it; otherwise the screenshot goes to the temp dir.
const SCREENSHOT = process.env.UPDATE_DASHBOARD_SCREENSHOT
  ? join(__dirname, '..', '..', 'docs', 'dashboard.png')
  : join(tmpdir(), `nest-reactor-dashboard-${process.pid}.png`);

describe('the dashboard page in headless Chromium', () => {
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
    // Script errors and CSP violations fail the test.
    ({ browser, page } = await openDashboard({ problems }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  afterEach(() => {
    expect(problems).toEqual([]);
  });

  it('lists runs, opens a failed run, shows its DAG with the failed step marked, retries it and sees it complete', async () => {
    await client.run('dash-checkout', { orderId: 'b-ok', card: CARD });
    app.get(Switches).failCharges = 1;
    const failed = await client.run('dash-checkout', { orderId: 'b-failed', card: CARD });
    expect(failed.status).toBe('failed');
    await client.run('dash-parent', { n: 3 });

    await page.goto(base, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`tr[data-run="${failed.runId}"][data-status="failed"]`);
    await page.waitForFunction(
      () => Number(document.querySelector('[data-count="failed"] b')?.textContent ?? '0') >= 1,
    );
    expect(await page.$eval(`tr[data-run="${failed.runId}"] td.failure`, (td) => td.textContent)).toBe('charge');

    await page.$eval(`tr[data-run="${failed.runId}"] a`, (a) => (a as unknown as { click(): void }).click());
    await page.waitForSelector(`.run-head[data-run="${failed.runId}"][data-status="failed"]`);
    await page.waitForSelector('svg.dag g.node[data-step="charge"][data-status="failed"]');
    const nodes = await page.$$eval('svg.dag g.node', (gs) =>
      gs.map((g) => [g.getAttribute('data-step'), g.getAttribute('data-status')]),
    );
    expect(nodes).toEqual([
      ['reserve', 'undone'],
      ['charge', 'failed'],
      ['ship', 'pending'],
    ]);
    expect(await page.$eval('.failure-box', (el) => el.textContent)).toContain('card declined for b-failed');
    const html = await page.content();
    expect(html).not.toContain(CARD);
    expect(html).not.toContain(TOKEN);
    await page.screenshot({ path: SCREENSHOT as `${string}.png`, fullPage: true });

    await page.click('button[data-action="retry"]');
    await page.click('button[data-confirm="retry"]');
    await page.waitForFunction(
      (id) => {
        const head = document.querySelector('.run-head');
        return head && head.getAttribute('data-run') !== id && head.getAttribute('data-status') === 'completed';
      },
      { timeout: 10_000 },
      failed.runId,
    );
    const retried = await page.$eval('.run-head', (el) => el.getAttribute('data-run'));
    expect((await client.get(retried!))?.retriedFrom).toBe(failed.runId);
    await page.waitForFunction(() =>
      [...document.querySelectorAll('svg.dag g.node')].every((g) => g.getAttribute('data-status') === 'completed'),
    );
  }, 60_000);

  it('shows no value derived from a redacted input: correlation ids, a period key, a failure message', async () => {
    const paused = await client.run('dash-secret-approval', { orderId: 'b-secret', card: CARD });
    await page.goto(`${base}#/runs/${encodeURIComponent(paused.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`.run-head[data-run="${paused.runId}"][data-status="paused"]`);
    await page.waitForFunction(() => document.querySelector('main')?.textContent?.includes('Waiting at confirm'));
    expect(await page.content()).toContain('correlation id [REDACTED]');

    await client.run('dash-secret-fingerprint', { orderId: 'b-fp-1', card: CARD });
    const halted = await client.run('dash-secret-fingerprint', { orderId: 'b-fp-2', card: CARD });
    const declined = await client.run('dash-secret-decline', { orderId: 'b-decline', card: CARD });
    for (const [runId, status] of [
      [halted.runId, 'halted'],
      [declined.runId, 'failed'],
    ]) {
      await page.goto(`${base}#/runs/${encodeURIComponent(runId)}`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector(`.run-head[data-run="${runId}"][data-status="${status}"]`);
      const html = await page.content();
      expect(html).not.toContain(CARD);
      expect(html).not.toContain(FINGERPRINT);
    }
    expect(await page.$eval('.failure-box', (el) => el.textContent)).toContain('[REDACTED]');
    await page.goto(`${base}#/?reactor=dash-secret-decline`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`tr[data-run="${declined.runId}"]`);
    expect(await page.content()).not.toContain(CARD);
  }, 30_000);

  it('updates the DAG live while the run moves: the held step runs, then every step completes', async () => {
    const started = await client.start('dash-gated', {});
    await page.goto(`${base}#/runs/${encodeURIComponent(started.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('svg.dag g.node[data-step="hold"][data-status="running"]');
    expect(await page.$eval('svg.dag g.node[data-step="first"]', (g) => g.getAttribute('data-status'))).toBe(
      'completed',
    );
    expect(await page.$eval('svg.dag g.node[data-step="last"]', (g) => g.getAttribute('data-status'))).toBe('pending');
    expect(await page.$eval('.run-head', (el) => el.getAttribute('data-status'))).toBe('running');
    app.get(Gate).open();
    await page.waitForSelector(`.run-head[data-run="${started.runId}"][data-status="completed"]`);
    expect(
      await page.$$eval('svg.dag g.node', (gs) =>
        gs.map((g) => `${g.getAttribute('data-step')}:${g.getAttribute('data-status')}`),
      ),
    ).toEqual(['first:completed', 'hold:completed', 'last:completed']);
  }, 30_000);

  it('answers a paused run’s interrupt from its form, refusing an invalid payload first', async () => {
    const paused = await client.run('dash-approval', { requestId: 'b-approval' });
    await page.goto(`${base}#/runs/${encodeURIComponent(paused.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('svg.dag g.node[data-step="approve"][data-status="paused"]');
    const area = 'textarea[data-interrupt="approve"]';
    await page.$eval(area, (el) => ((el as unknown as { value: string }).value = '{"approved": "yes"}'));
    await page.click('form.interrupt button[type="submit"]');
    await page.waitForFunction(() => /approver/.test(document.querySelector('.field-errors')?.textContent ?? ''));
    await page.$eval(
      area,
      (el) => ((el as unknown as { value: string }).value = '{"approved": true, "approver": "grace"}'),
    );
    await page.click('form.interrupt button[type="submit"]');
    await page.waitForSelector(`.run-head[data-run="${paused.runId}"][data-status="completed"]`);
    expect((await client.get(paused.runId))?.status).toBe('completed');
    // The invalid payload is no console error of the page: it is shown in the form.
    problems.splice(0, problems.length, ...problems.filter((p) => !/status of 422/.test(p)));
  }, 30_000);

  it('shows a fan-out map’s progress and drills down to its failed elements', async () => {
    const started = await client.run('dash-import', { items: ['a', 'bad-x', 'b', 'bad-y'] });
    await client.wait(started.runId, { timeoutMs: 10_000 });
    await page.goto(`${base}#/runs/${encodeURIComponent(started.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('section.map');
    expect(await page.$eval('section.map p', (p) => p.textContent)).toContain('4 / 4 settled');
    await page.click('button[data-drill="lines"]');
    await page.waitForFunction(() => document.querySelectorAll('.elements .element').length === 2);
    const elements = await page.$$eval('.elements .element', (els) => els.map((e) => e.textContent));
    expect(elements[0]).toMatch(/#1.*failed.*cannot load 'bad-x'/);
    expect(elements[1]).toMatch(/#3.*failed.*cannot load 'bad-y'/);
  }, 30_000);

  it('lists the schedules above the runs, with their next tick and last run', async () => {
    await client.schedules.upsert({
      id: 'nightly:browser',
      reactor: 'dash-checkout',
      cron: '0 2 * * *',
      input: { orderId: 'b-sched', card: CARD },
    });
    const started = await client.schedules.trigger('nightly:browser');
    const runId = (started as { runId: string }).runId;
    await client.wait(runId, { timeoutMs: 10_000 });
    await page.goto(base, { waitUntil: 'domcontentloaded' });
    const row = 'section.schedules tr[data-schedule="nightly:browser"]';
    await page.waitForSelector(`${row} a[href="#/runs/${encodeURIComponent(runId)}"]`);
    const text = await page.$eval(row, (tr) => tr.textContent);
    expect(text).toContain('0 2 * * *');
    expect(text).toContain('completed');
    expect(text).not.toContain(CARD);
    await client.schedules.remove('nightly:browser');
  }, 30_000);
});
