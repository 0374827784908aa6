/**
 * Live runs in the dashboard (issue 25), on Redis with `liveEvents: true`: the SSE route
 * `api/runs/:runId/events` (replay after `Last-Event-ID`, live events, the end; 404, 400, the
 * guard), and a run's page in headless Chromium following the run by that stream: the poll interval
 * is a minute, so only the stream can move the page within the test's seconds.
 */
import { request as httpRequest } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { Browser, Page } from 'puppeteer-core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { Gate, TOKEN, dashboardApp, openDashboard } from './dashboard.fixtures';

declare const document: {
  documentElement: { getAttribute(name: string): string | null };
};

interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/** GET an SSE route and read it until the server ends it (or `ms` passed): its status and messages. */
function readSse(
  url: string,
  headers: Record<string, string>,
  ms = 10_000,
): Promise<{ status: number; type: string; messages: SseMessage[] }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        const messages = text
          .split('\n\n')
          .filter((block) => block.trim() !== '')
          .map((block) => {
            const message: SseMessage = { data: '' };
            for (const line of block.split('\n')) {
              const [field, ...rest] = line.split(':');
              const value = rest.join(':').replace(/^ /, '');
              if (field === 'id') message.id = value;
              else if (field === 'event') message.event = value;
              else if (field === 'data') message.data += value;
            }
            return message;
          });
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), messages });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error('the stream did not end'));
    }, ms);
    req.on('error', reject);
    req.end();
  });
}

describe('live runs in the dashboard (Redis, liveEvents)', () => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  let base: string;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const AUTH = { authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    app = await dashboardApp(
      { pollIntervalMs: 60_000 },
      { redis: { url: redisUrl() }, prefix: prefix('dashboard-live'), liveEvents: true },
    );
    await app.listen(0, '127.0.0.1');
    base = `${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/admin/reactor/`;
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

  it('streams a finished run’s events as SSE, only those after Last-Event-ID on a reconnect, then ends', async () => {
    const paused = await client.run('dash-approval', { requestId: 'sse-1' });
    await client.continue(paused.runId, 'approve', { approved: true, approver: 'ann' });
    await client.wait(paused.runId);
    const url = `${base}api/runs/${encodeURIComponent(paused.runId)}/events`;
    const all = await readSse(url, AUTH);
    expect(all.status).toBe(200);
    expect(all.type).toContain('text/event-stream');
    const events = all.messages.map((m) => JSON.parse(m.data) as { type: string; id: string });
    // The message's id is the event's cursor.
    expect(all.messages.map((m) => m.id)).toEqual(events.map((e) => e.id));
    expect(events.map((e) => e.type)).toEqual([
      'run.started',
      'step.started',
      'run.paused',
      'run.resumed',
      'step.started',
      'step.completed',
      'step.started',
      'step.completed',
      'run.finished',
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    const resumed = events[3];
    const after = await readSse(url, { ...AUTH, 'last-event-id': resumed.id });
    expect(after.messages.map((m) => (JSON.parse(m.data) as { type: string }).type)).toEqual(
      events.slice(4).map((e) => e.type),
    );
    const query = await readSse(`${url}?after=${encodeURIComponent(resumed.id)}`, AUTH);
    expect(query.messages).toEqual(after.messages);
  }, 30_000);

  it('answers 404 for an unknown run, 400 for a cursor that is not one, and the guard’s 401 without credentials', async () => {
    expect((await readSse(`${base}api/runs/no-such-run/events`, AUTH)).status).toBe(404);
    const paused = await client.run('dash-approval', { requestId: 'sse-2' });
    const url = `${base}api/runs/${encodeURIComponent(paused.runId)}/events`;
    expect((await readSse(url, { ...AUTH, 'last-event-id': 'latest' })).status).toBe(400);
    expect((await readSse(url, {})).status).toBe(401);
    await client.cancel(paused.runId);
  }, 30_000);

  it('moves a run’s page with the run by its event stream (the page polls once a minute)', async () => {
    const started = await client.start('dash-gated', {});
    await page.goto(`${base}#/runs/${encodeURIComponent(started.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('svg.dag g.node[data-step="hold"][data-status="running"]');
    await page.waitForFunction(() => document.documentElement.getAttribute('data-run-stream') === 'open');
    app.get(Gate).open();
    await page.waitForSelector(`.run-head[data-run="${started.runId}"][data-status="completed"]`, { timeout: 5_000 });
    await page.waitForFunction(() => document.documentElement.getAttribute('data-run-stream') === 'closed');
    expect(
      await page.$$eval('svg.dag g.node', (gs) =>
        gs.map((g) => `${g.getAttribute('data-step')}:${g.getAttribute('data-status')}`),
      ),
    ).toEqual(['first:completed', 'hold:completed', 'last:completed']);
    expect(Number(await page.evaluate(() => document.documentElement.getAttribute('data-run-events')))).toBeGreaterThan(
      0,
    );
  }, 30_000);

  it('shows a pause answered elsewhere, and the run’s end, as they happen', async () => {
    const paused = await client.run('dash-approval', { requestId: 'page-1' });
    await page.goto(`${base}#/runs/${encodeURIComponent(paused.runId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`.run-head[data-run="${paused.runId}"][data-status="paused"]`);
    await page.waitForFunction(() => document.documentElement.getAttribute('data-run-stream') === 'open');
    await client.continue(paused.runId, 'approve', { approved: true, approver: 'bob' });
    await page.waitForSelector(`.run-head[data-run="${paused.runId}"][data-status="completed"]`, { timeout: 5_000 });
  }, 30_000);
});
