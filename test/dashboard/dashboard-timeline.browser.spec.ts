/**
 * The run page's timeline and DAG after a rollback, and the page at phone width, in headless
 * Chromium on Redis (issue 25): a run whose `charge` step retries twice, fails, is compensated,
 * and whose completed steps are undone (one undo fails). The timeline has a time axis and a
 * rollback band spanning the first to the last compensate/undo entry of the trace, each of those
 * entries marked ok or failed; the DAG's nodes show the attempts and the rollback; at 375x812 the
 * runs list and the run page scroll no wider than the screen (the DAG and tables scroll inside).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable, type INestApplication } from '@nestjs/common';
import type { Browser, Page } from 'puppeteer-core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepHandler } from '../../lib/core/definition/step';
import { failure, success, type StepOutcome } from '../../lib/core/results/step-outcome';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { TOKEN, openDashboard, platformApp } from './dashboard.fixtures';

/** The page's document, as the functions evaluated in the browser use it (no DOM lib here). */
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { left: number; right: number; width: number; height: number };
}
declare const document: {
  documentElement: { scrollWidth: number; clientWidth: number };
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement> & ArrayLike<PageElement>;
};

@Step('tl-reserve')
class TlReserveStep implements StepHandler<{ orderId: string }, string> {
  run({ orderId }: { orderId: string }) {
    return success(`hold-${orderId}`);
  }
  async undo() {
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

@Step('tl-ledger')
class TlLedgerStep implements StepHandler<{ orderId: string }, string> {
  run({ orderId }: { orderId: string }) {
    return success(`entry-${orderId}`);
  }
  undo() {
    throw new Error('ledger is read-only');
  }
}

@Step('tl-charge')
class TlChargeStep implements StepHandler<{ orderId: string }, string> {
  async run({ orderId }: { orderId: string }): Promise<StepOutcome<string>> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return failure(new Error(`gateway down for ${orderId}`));
  }
  async compensate() {
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

/** reserve -> ledger -> charge (3 attempts, always fails) -> ship. */
@Injectable()
@Reactor('tl-checkout')
class TlCheckoutReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    const hold = r.step('reserve', TlReserveStep, { orderId });
    const entry = r.step('ledger', TlLedgerStep, { orderId }, { waitFor: [hold] });
    const charge = r.step(
      'charge',
      TlChargeStep,
      { orderId },
      { waitFor: [entry], retries: { maxAttempts: 3, baseDelayMs: 40 } },
    );
    return r.step('ship', ({ charge }: { charge: string }) => success(`sh-${charge}`), { charge });
  }
}

/** Screenshots of the pages this spec checks (desktop and phone), for a look. */
const SHOTS = process.env.DASHBOARD_SHOTS ?? tmpdir();

describe('the run timeline, the DAG after a rollback, and the page at phone width (headless Chromium, Redis)', () => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let browser: Browser;
  let page: Page;
  let base: string;
  let client: ReactorClient;
  const problems: string[] = [];

  beforeAll(async () => {
    app = await platformApp(
      'express',
      { pollIntervalMs: 300 },
      { redis: { url: redisUrl() }, prefix: prefix('dashboard-timeline') },
      [TlReserveStep, TlLedgerStep, TlChargeStep, TlCheckoutReactor],
    );
    await app.listen(0, '127.0.0.1');
    base = `${await app.getUrl()}/admin/reactor/`;
    client = app.get(ReactorClient);
    ({ browser, page } = await openDashboard({ viewport: null, problems }));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  afterEach(() => {
    expect(problems).toEqual([]);
  });

  /** The run's failed, compensated, partly undone run, and the page open on it. */
  async function rolledBack(orderId: string) {
    const started = await client.run('tl-checkout', { orderId });
    const done = await client.wait(started.runId, { timeoutMs: 10_000 });
    expect(done.status).toBe('failed');
    return done;
  }

  it('draws the time axis and the rollback band over the trace, each compensate and undo marked ok or failed', async () => {
    await page.setViewport({ width: 1280, height: 900 });
    const run = await rolledBack('tl-axis');
    await page.goto(`${base}#/runs/${encodeURIComponent(run.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`.run-head[data-run="${run.runId}"][data-status="failed"]`);
    await page.waitForSelector('.tl-rollback');

    const view = (await (
      await fetch(`${base}api/runs/${encodeURIComponent(run.runId)}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json()) as { finishedAt?: number; trace: Array<{ type: string; step: string; at: number; ok?: boolean }> };
    const start = view.trace[0].at;
    const span = Math.max(view.finishedAt ?? 0, ...view.trace.map((e) => e.at), start + 1) - start;
    const undoing = view.trace.filter((e) => ['compensate', 'undo', 'undoAll'].includes(e.type));
    expect(undoing.map((e) => `${e.type}:${e.step}:${e.ok}`)).toEqual([
      'compensate:charge:true',
      'undo:ledger:false',
      'undo:reserve:true',
    ]);

    // The axis: ticks from 0, in order, the last within the run's duration, labelled as offsets.
    const axis = await page.$eval('.tl-axis', (el) => ({
      start: Number(el.getAttribute('data-start')),
      span: Number(el.getAttribute('data-span')),
      ticks: [...document.querySelectorAll('.tl-axis .tl-tick')].map((t) => ({
        ms: Number(t.getAttribute('data-ms')),
        text: t.textContent,
        left: t.getBoundingClientRect().left,
      })),
    }));
    expect(axis.start).toBe(start);
    expect(axis.span).toBe(span);
    expect(axis.ticks.length).toBeGreaterThanOrEqual(2);
    expect(axis.ticks[0]).toMatchObject({ ms: 0, text: '0' });
    for (let i = 1; i < axis.ticks.length; i++) {
      expect(axis.ticks[i].ms).toBeGreaterThan(axis.ticks[i - 1].ms);
      expect(axis.ticks[i].text).toMatch(/^\+\d+(\.\d+)?(ms|s)$/);
    }
    expect(axis.ticks[axis.ticks.length - 1].ms).toBeLessThanOrEqual(span);

    // The rollback band spans the first to the last compensate/undo entry, on the axis's scale.
    const lane = await page.$eval('.tl-rollback', (el) => {
      const track = el.querySelector('.tl-track')!.getBoundingClientRect();
      const band = el.querySelector('.tl-band.phase')!.getBoundingClientRect();
      return {
        from: Number(el.getAttribute('data-from')),
        to: Number(el.getAttribute('data-to')),
        track: { left: track.left, width: track.width },
        band: { left: band.left, width: band.width },
      };
    });
    expect(lane.from).toBe(undoing[0].at - start);
    expect(lane.to).toBe(undoing[undoing.length - 1].at - start);
    const x = (ms: number) => lane.track.left + (ms / span) * lane.track.width;
    expect(Math.abs(lane.band.left - x(lane.from))).toBeLessThan(1.5);
    expect(Math.abs(lane.band.left + lane.band.width - x(Math.max(lane.to, lane.from + span * 0.006)))).toBeLessThan(
      1.5,
    );
    // Every step row is shaded over the same phase.
    expect(await page.$$eval('.tl-row[data-step] .tl-band', (els) => els.length)).toBe(3);

    // One marker per compensate/undo entry, on its step's row, ok or failed, at its time.
    const marks = await page.$$eval('.tl-mark', (els) =>
      els.map((m) => {
        const r = m.getBoundingClientRect();
        return {
          row: (m as unknown as { closest(s: string): PageElement }).closest('.tl-row').getAttribute('data-step'),
          step: m.getAttribute('data-step'),
          type: m.getAttribute('data-type'),
          outcome: m.getAttribute('data-outcome'),
          at: Number(m.getAttribute('data-at')),
          text: m.textContent,
          centre: r.left + r.width / 2,
        };
      }),
    );
    expect(marks.map((m) => `${m.row}:${m.type}:${m.outcome}:${m.text}`)).toEqual([
      'reserve:undo:ok:✓',
      'ledger:undo:failed:✗',
      'charge:compensate:ok:✓',
    ]);
    for (const m of marks) {
      expect(m.at).toBe(undoing.find((e) => e.step === m.step)!.at - start);
      expect(Math.abs(m.centre - x(m.at))).toBeLessThan(1.5);
    }
  }, 30_000);

  it('shows the retried step’s attempts and the compensated and undone steps on the DAG', async () => {
    await page.setViewport({ width: 1280, height: 900 });
    const run = await rolledBack('tl-dag');
    await page.goto(`${base}#/runs/${encodeURIComponent(run.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('svg.dag g.node[data-step="charge"][data-status="failed"]');
    const nodes = await page.$$eval('svg.dag g.node', (gs) =>
      gs.map((g) => ({
        step: g.getAttribute('data-step'),
        status: g.getAttribute('data-status'),
        attempts: g.querySelector('text.attempts')?.textContent ?? null,
        rollback: g.getAttribute('data-rollback'),
        mark: g.querySelector('text.rollback')?.textContent ?? null,
        outcome: g.querySelector('text.rollback')?.getAttribute('data-outcome') ?? null,
      })),
    );
    expect(nodes).toEqual([
      { step: 'reserve', status: 'undone', attempts: null, rollback: 'undone', mark: '↺ undone ✓', outcome: 'ok' },
      {
        step: 'ledger',
        status: 'completed',
        attempts: null,
        rollback: 'undo-failed',
        mark: '↺ undo failed ✗',
        outcome: 'failed',
      },
      {
        step: 'charge',
        status: 'failed',
        attempts: '×3',
        rollback: 'compensated',
        mark: '↺ compensated ✓',
        outcome: 'ok',
      },
      { step: 'ship', status: 'pending', attempts: null, rollback: null, mark: null, outcome: null },
    ]);
    expect(await page.$eval('svg.dag g.node[data-step="charge"] title', (t) => t.textContent)).toContain(
      '3 of 3 attempts',
    );
    expect(await page.$eval('.tl-row[data-step="charge"] .tl-name', (el) => el.textContent)).toBe('charge ×3');
    await page.screenshot({ path: join(SHOTS, 'run-desktop.png') as `${string}.png`, fullPage: true });
  }, 30_000);

  it('fits a 375 px phone: no page-wide horizontal scroll on the runs list and a run page; controls 32 px tall', async () => {
    const run = await rolledBack('tl-phone-with-a-rather-long-order-id-to-wrap');
    await page.setViewport({ width: 375, height: 812, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });

    await page.goto(base, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`tr[data-run="${run.runId}"]`);
    await page.waitForSelector('[data-count="failed"]');
    const list = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      small: [...document.querySelectorAll('.count, select, input, button:not([hidden]), .brand, tr[data-run] a')]
        .map((el) => ({ what: el.textContent, height: el.getBoundingClientRect().height }))
        .filter((c) => c.height > 0 && c.height < 32),
    }));
    expect(list.scroll).toBeLessThanOrEqual(375);
    expect(list.small).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'runs-phone.png') as `${string}.png`, fullPage: true });
    // The table is wider than the phone: it scrolls inside its own box.
    expect(
      await page.$eval('#runs', (body) => {
        const el = (body as unknown as { closest(s: string): { scrollWidth: number; clientWidth: number } }).closest(
          'table',
        );
        return el.scrollWidth > el.clientWidth;
      }),
    ).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'runs-phone.png') as `${string}.png`, fullPage: true });

    await page.goto(`${base}#/runs/${encodeURIComponent(run.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`.run-head[data-run="${run.runId}"][data-status="failed"]`);
    await page.waitForSelector('.tl-rollback');
    // Open the trace (a wide table) too.
    await page.$eval('section.timeline details', (d) => ((d as unknown as { open: boolean }).open = true));
    const runPage = await page.evaluate(() => {
      const dag = document.querySelector('.dag-wrap') as unknown as { scrollWidth: number; clientWidth: number };
      return {
        scroll: document.documentElement.scrollWidth,
        dagScrolls: dag.scrollWidth > dag.clientWidth,
        small: [...document.querySelectorAll('button, summary, .run-head a[href="#/"], .count')]
          .map((el) => ({ what: el.textContent, height: el.getBoundingClientRect().height }))
          .filter((c) => c.height > 0 && c.height < 32),
        track: document.querySelector('.tl-row[data-step="charge"] .tl-track')!.getBoundingClientRect().width,
      };
    });
    expect(runPage.scroll).toBeLessThanOrEqual(375);
    expect(runPage.dagScrolls).toBe(true);
    expect(runPage.small).toEqual([]);
    expect(runPage.track).toBeGreaterThan(120);
    await page.screenshot({ path: join(SHOTS, 'run-phone.png') as `${string}.png`, fullPage: true });
  }, 30_000);
});
