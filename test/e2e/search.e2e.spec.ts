/**
 * Search (issue 25) through `ReactorClient` on both runtimes (embedded, and Redis + BullMQ): tags
 * given on start and set by a step (`ctx.tag`) are shown by `get` and found by `list({ tag })`, a
 * page at a time; `list({ runId })` and `list({ correlationId })` find the one run; bad filters are
 * refused naming the field.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { createEmbeddedApp, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

/** Tags the run with its customer in `place`. */
@Reactor('search25-orders')
class OrdersReactor implements ReactorBlueprint<{ customer: string }> {
  build(r: ReactorBuilder<{ customer: string }>) {
    const customer = r.input('customer', { type: 'string' });
    return r.step(
      'place',
      ({ customer: c }: { customer: string }, ctx) => {
        ctx.tag('customer', c);
        return success(c);
      },
      { customer },
    );
  }
}

/** Pauses at `approve`, correlation id `order-<id>`. */
@Reactor('search25-approval')
class ApprovalReactor implements ReactorBlueprint<{ id: string }> {
  build(r: ReactorBuilder<{ id: string }>) {
    const id = r.input('id', { type: 'string' });
    const approved = r.interrupt<{ ok: boolean }, { id: string }>('approve', {
      args: { id },
      correlationId: ({ args }) => `order-${args.id}`,
      payload: { ok: { type: 'boolean' } },
    });
    return r.step('done', ({ a }: { a: { ok: boolean } }) => success(a.ok), { a: approved });
  }
}

const PROVIDERS = [OrdersReactor, ApprovalReactor];
const { prefix } = useRedisPrefixes();

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS)],
  ['redis + bullmq', async () => (await createRedisApp(prefix('search25'), {}, { providers: PROVIDERS })).app],
])('search by tag, run id and correlation id on the %s runtime', (_runtime, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('finds runs by tag, run id and correlation id', async () => {
    const reactor = 'search25-orders';
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const customer = i % 2 === 0 ? 'acme' : 'globex';
      const started = await client.start(reactor, { customer }, { tags: { shop: 'north' } });
      expect((await client.wait(started.runId, WAIT)).status).toBe('completed');
      ids.push(started.runId);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    expect((await client.get(ids[1]))?.tags).toEqual({ shop: 'north', customer: 'globex' });

    const first = await client.list({ reactor, tag: 'customer=acme', limit: 2 });
    expect(first.runs.map((r) => r.runId)).toEqual([ids[4], ids[2]]);
    const next = await client.list({ reactor, tag: 'customer=acme', limit: 2, cursor: first.cursor });
    expect(next.runs.map((r) => r.runId)).toEqual([ids[0]]);
    expect((await client.list({ reactor, tag: { key: 'shop', value: 'north' } })).runs).toHaveLength(5);
    expect((await client.list({ reactor, tag: 'customer=acme', status: 'failed' })).runs).toEqual([]);

    expect((await client.list({ reactor, runId: ids[3] })).runs).toEqual([
      { runId: ids[3], reactorName: reactor, status: 'completed', createdAt: expect.any(Number) },
    ]);

    const approval = 'search25-approval';
    const paused = await client.start(approval, { id: 'p1' });
    expect((await client.wait(paused.runId, WAIT)).status).toBe('paused');
    expect((await client.list({ reactor: approval, correlationId: 'order-p1' })).runs).toEqual([
      { runId: paused.runId, reactorName: approval, status: 'paused', createdAt: expect.any(Number) },
    ]);
    expect((await client.list({ reactor, correlationId: 'order-p1' })).runs).toEqual([]);
    expect((await client.list({ reactor: approval, correlationId: 'order-none' })).runs).toEqual([]);

    await expect(client.list({ reactor, tag: 'nokey' })).rejects.toMatchObject({ option: 'tag' });
    await expect(client.list({ reactor, runId: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.start(reactor, { customer: 'x' }, { tags: { 'a b': 'x' } })).rejects.toMatchObject({
      option: 'tags',
    });
  });
});
