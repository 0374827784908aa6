/**
 * Values derived from a redacted input are redacted in every view (issue 26): a period's key (in a
 * halt's details) computed from the card, an interrupt's correlation id computed from it, a failure
 * message quoting it. Read through `client.get` and the JSON API (a run in full, the runs table and
 * the counts: every read the page makes), on the embedded runtime (Express and Fastify) and on Redis;
 * the page itself in dashboard-browser.spec.ts.
 */
import { createHash } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { DashboardRun, DashboardRunList } from '../../lib/dashboard';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { redisUrl } from '../setup/redis';
import { useRedisPrefixes } from '../e2e/e2e.fixtures';
import { CARD, FINGERPRINT, SECRET_REACTORS, TOKEN, platformApp } from './dashboard.fixtures';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const BASE = '/admin/reactor';

describe.each([
  ['the embedded runtime, Express', () => platformApp('express', {}, {}, SECRET_REACTORS)],
  ['the embedded runtime, Fastify', () => platformApp('fastify', {}, {}, SECRET_REACTORS)],
  [
    'Redis, Express',
    (prefix: string) => platformApp('express', {}, { redis: { url: redisUrl() }, prefix }, SECRET_REACTORS),
  ],
])('values derived from a redacted input, on %s', (_name, make: (prefix: string) => Promise<INestApplication>) => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  const http = () => request(app.getHttpServer());

  beforeAll(async () => {
    app = await make(prefix('dash-derived'));
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** Every read of the run: `client.get`, the run in full, and the runs table the page lists it in. */
  async function reads(runId: string, reactor: string): Promise<{ view: string; full: DashboardRun; text: string }> {
    const view = JSON.stringify(await client.get(runId));
    const full = await http().get(`${BASE}/api/runs/${runId}`).set(AUTH).expect(200);
    const table = await http().get(`${BASE}/api/runs`).query({ reactor }).set(AUTH).expect(200);
    expect((table.body as DashboardRunList).runs.map((r) => r.runId)).toContain(runId);
    const counts = await http().get(`${BASE}/api/counts`).set(AUTH).expect(200);
    return { view, full: full.body as DashboardRun, text: [full.text, table.text, counts.text].join('\n') };
  }

  it('a period halt’s details: the key quoting the card is redacted', async () => {
    expect((await client.run('dash-secret-period', { orderId: 'p-1', card: CARD })).status).toBe('completed');
    const halted = await client.run('dash-secret-period', { orderId: 'p-2', card: CARD });
    expect(halted).toMatchObject({ status: 'halted', reason: 'period' });

    const { view, full, text } = await reads(halted.runId, 'dash-secret-period');
    for (const shown of [view, text]) expect(shown).not.toContain(CARD);
    expect(full.halt).toMatchObject({ reason: 'period', details: { key: '[REDACTED]' } });
    expect((full.halt?.details as { bucket: string }).bucket).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('a coordination key a key function computed from the card (a fingerprint) is redacted whole', async () => {
    expect((await client.run('dash-secret-fingerprint', { orderId: 'f-1', card: CARD })).status).toBe('completed');
    const halted = await client.run('dash-secret-fingerprint', { orderId: 'f-2', card: CARD });
    expect(halted).toMatchObject({ status: 'halted', reason: 'period' });

    const { view, full, text } = await reads(halted.runId, 'dash-secret-fingerprint');
    for (const shown of [view, text]) {
      expect(shown).not.toContain(CARD);
      expect(shown).not.toContain(FINGERPRINT);
    }
    expect(full.halt?.details).toMatchObject({ key: '[REDACTED]' });
  });

  it('correlation ids: quoting the card, or computed from it, are redacted; the run still resumes by them', async () => {
    const paused = await client.run('dash-secret-approval', { orderId: 'c-1', card: CARD });
    expect(paused.status).toBe('paused');
    let { view, full, text } = await reads(paused.runId, 'dash-secret-approval');
    for (const shown of [view, text]) expect(shown).not.toContain(CARD);
    expect(full.interrupts.confirm.correlationId).toBe('[REDACTED]');
    expect(full.pendingInterrupts).toEqual([expect.objectContaining({ step: 'confirm', correlationId: '[REDACTED]' })]);

    // The id itself still works (it is only hidden from views).
    await client.continueByCorrelationId('dash-secret-approval', 'confirm', `confirm:c-1:${CARD}`, true);
    const verifyId = `verify:${createHash('sha256').update(CARD).digest('hex')}`;
    ({ view, full, text } = await reads(paused.runId, 'dash-secret-approval'));
    for (const shown of [view, text]) {
      expect(shown).not.toContain(CARD);
      expect(shown).not.toContain(verifyId);
    }
    expect(full.interrupts.verify.correlationId).toBe('[REDACTED]');
    await client.continueByCorrelationId('dash-secret-approval', 'verify', verifyId, true);
    expect((await client.wait(paused.runId, { timeoutMs: 10_000 })).status).toBe('completed');
  });

  it('a failure message quoting the card is redacted in the run and in its row', async () => {
    const failed = await client.run('dash-secret-decline', { orderId: 'd-1', card: CARD });
    expect(failed.status).toBe('failed');
    const { view, full, text } = await reads(failed.runId, 'dash-secret-decline');
    for (const shown of [view, text]) expect(shown).not.toContain(CARD);
    expect(full.failure).toMatchObject({
      code: 'STEP_FAILED',
      stepName: 'charge',
      message: '[REDACTED]',
      errorMessage: '[REDACTED]',
    });
    const table = await http().get(`${BASE}/api/runs`).query({ reactor: 'dash-secret-decline' }).set(AUTH);
    expect((table.body as DashboardRunList).runs[0]).toMatchObject({
      failedStep: 'charge',
      failureMessage: '[REDACTED]',
    });
  });

  it.each([
    ['fan-out', 'dash-secret-import'],
    ['inline', 'dash-secret-inline-import'],
  ])('a %s map over a redacted collection: an element’s failure quoting it is redacted', async (_mode, reactor) => {
    const item = `bad-${CARD}`;
    const started = await client.run(reactor, { items: ['good', item] });
    const done = await client.wait(started.runId, { timeoutMs: 15_000 });
    expect(done.status).toBe('completed');
    const drill = await http().get(`${BASE}/api/runs/${started.runId}/maps/lines/elements`).set(AUTH).expect(200);
    expect(drill.body).toMatchObject({
      total: 2,
      elements: [{ index: 1, status: 'failed', failure: { code: 'STEP_FAILED', message: '[REDACTED]' } }],
    });
    const { view, text } = await reads(started.runId, reactor);
    for (const shown of [view, text, drill.text]) expect(shown).not.toContain(CARD);
  });

  it('redacts a run’s own derived values only, and keeps the rest: trace steps, results, a halt’s reason', async () => {
    const other = '9999-0000-1111-2222';
    expect((await client.run('dash-secret-period', { orderId: 'q-1', card: other })).status).toBe('completed');
    const halted = await client.run('dash-secret-period', { orderId: 'q-2', card: other });
    const full = (await http().get(`${BASE}/api/runs/${halted.runId}`).set(AUTH).expect(200)).body as DashboardRun;
    // Its own card is redacted; the halt's step and reason are kept.
    expect(full.halt).toMatchObject({ step: expect.any(String), reason: 'period', details: { key: '[REDACTED]' } });
    const failed = await client.run('dash-checkout', { orderId: 'plain-1', card: CARD });
    const plain = (await http().get(`${BASE}/api/runs/${failed.runId}`).set(AUTH).expect(200)).body as DashboardRun;
    expect(plain.trace.filter((e) => e.type === 'run').map((e) => e.step)).toEqual(['reserve', 'charge', 'ship']);
    expect(plain.results).toEqual({ reserve: 'hold-plain-1', charge: 'ch-plain-1', ship: 'sh-ch-plain-1' });
  });
});
