import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { ConfigurationError } from '../../lib/core/errors/configuration.error';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

/** A reactor whose step tags the run with its customer, and fails when told to. */
function orders() {
  return defineReactor('orders', (r: ReactorBuilder<{ customer: string; ok: boolean }>) =>
    r.step(
      'place',
      ({ customer, ok }: { customer: string; ok: boolean }, ctx) => {
        ctx.tag('customer', customer);
        return ok ? success(1) : failure('no', { retryable: false });
      },
      { customer: r.input('customer', { type: 'string' }), ok: r.input('ok', { type: 'boolean' }) },
    ),
  );
}

describe('search (issue 25): list by tag, run id and correlation id', () => {
  it('finds runs by a tag given on start or set by a step, newest first, paged, filtered by status', async () => {
    const { engine, clock } = createHarness();
    const def = orders();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const customer = i % 2 === 0 ? 'acme' : 'globex';
      ids.push((await engine.run(def, { customer, ok: i !== 4 }, { tags: { region: 'eu', batch: `b${i}` } })).runId);
      clock.advance(10);
    }
    const acme = await engine.list({ reactor: 'orders', tag: 'customer=acme', limit: 2 });
    expect(acme.runs.map((r) => r.runId)).toEqual([ids[4], ids[2]]);
    const rest = await engine.list({ reactor: 'orders', tag: { key: 'customer', value: 'acme' }, cursor: acme.cursor });
    expect(rest.runs.map((r) => r.runId)).toEqual([ids[0]]);
    expect(rest.cursor).toBeUndefined();
    const failed = await engine.list({ reactor: 'orders', tag: 'customer=acme', status: 'failed' });
    expect(failed.runs.map((r) => r.runId)).toEqual([ids[4]]);
    expect((await engine.list({ reactor: 'orders', tag: 'batch=b3' })).runs.map((r) => r.runId)).toEqual([ids[3]]);
    expect((await engine.list({ reactor: 'orders', tag: 'region=eu' })).runs).toHaveLength(6);
    expect((await engine.list({ reactor: 'orders', tag: 'region=us' })).runs).toEqual([]);
    // Shown by get.
    expect((await engine.get(ids[1]))?.tags).toEqual({ region: 'eu', batch: 'b1', customer: 'globex' });
  });

  it('a tag set again to another value is found by its new value only', async () => {
    const { engine } = createHarness();
    const def = defineReactor('retag', (r: ReactorBuilder<object>) => {
      const a = r.step('a', (_: object, ctx) => (ctx.tag('stage', 'one'), success(1)), {});
      return r.step('b', (_: object, ctx) => (ctx.tag('stage', 'two'), success(2)), {}, { waitFor: [a] });
    });
    const { runId } = await engine.run(def, {});
    expect((await engine.list({ reactor: 'retag', tag: 'stage=two' })).runs.map((r) => r.runId)).toEqual([runId]);
    expect((await engine.list({ reactor: 'retag', tag: 'stage=one' })).runs).toEqual([]);
  });

  it('a step that destructures its ctx can still tag the run and read the rest of it', async () => {
    const { engine } = createHarness();
    const seen: unknown[] = [];
    const def = defineReactor('destructured', (r: ReactorBuilder<object>) =>
      r.step(
        'a',
        (_: object, { tag, fence, signal, runId, reactorName, stepName, attempt }) => {
          tag('stage', 'done');
          seen.push(runId, reactorName, stepName, attempt, signal.aborted);
          expect(() => fence()).toThrow(/ctx.fence\(\): the run holds no lock/);
          return success(1);
        },
        {},
      ),
    );
    const { runId } = await engine.run(def, {});
    expect(seen).toEqual([runId, 'destructured', 'a', 1, false]);
    expect((await engine.list({ reactor: 'destructured', tag: 'stage=done' })).runs.map((r) => r.runId)).toEqual([
      runId,
    ]);
  });

  it('finds one run by run id or by the correlation id of its interrupt, when it is the reactor’s', async () => {
    const { engine } = createHarness();
    const def = defineReactor('approval', (r: ReactorBuilder<{ orderId: string }>) => {
      const orderId = r.input('orderId', { type: 'string' });
      const decision = r.interrupt<{ ok: boolean }, { orderId: string }>('approve', {
        args: { orderId },
        correlationId: ({ args }) => `order-${args.orderId}`,
        payload: { ok: { type: 'boolean' } },
      });
      return r.step('done', ({ d }: { d: { ok: boolean } }) => success(d.ok), { d: decision });
    });
    engine.register(def);
    const paused = await engine.run(def, { orderId: 'o-7' }, { tags: { shop: 'north' } });
    expect(paused.status).toBe('paused');
    const byId = await engine.list({ reactor: 'approval', runId: paused.runId });
    expect(byId).toEqual({
      runs: [{ runId: paused.runId, reactorName: 'approval', status: 'paused', createdAt: expect.any(Number) }],
    });
    expect((await engine.list({ reactor: 'approval', correlationId: 'order-o-7' })).runs.map((r) => r.runId)).toEqual([
      paused.runId,
    ]);
    // Another reactor's name, another status, another tag or an unknown id: nothing.
    expect((await engine.list({ reactor: 'orders', runId: paused.runId })).runs).toEqual([]);
    expect((await engine.list({ reactor: 'approval', runId: paused.runId, status: 'failed' })).runs).toEqual([]);
    expect((await engine.list({ reactor: 'approval', runId: paused.runId, tag: 'shop=south' })).runs).toEqual([]);
    expect((await engine.list({ reactor: 'approval', runId: paused.runId, tag: 'shop=north' })).runs).toHaveLength(1);
    expect((await engine.list({ reactor: 'approval', correlationId: 'order-none' })).runs).toEqual([]);
    expect((await engine.list({ reactor: 'approval', runId: 'no-such-run' })).runs).toEqual([]);
    // A cursor is a position: the run shows before its own position, not at or after it.
    const at = byId.runs[0].createdAt;
    expect((await engine.list({ reactor: 'approval', runId: paused.runId, cursor: `${at + 1}:` })).runs).toHaveLength(
      1,
    );
    expect(
      (await engine.list({ reactor: 'approval', runId: paused.runId, cursor: `${at}:${paused.runId}` })).runs,
    ).toEqual([]);
  });

  it('refuses bad tags on start, from a step and in a filter, naming the reactor, step and field', async () => {
    const { engine } = createHarness();
    const def = orders();
    const refusedStart = (tags: unknown) =>
      engine.run(def, { customer: 'a', ok: true }, { tags: tags as never }).catch((e: unknown) => e);
    expect(await refusedStart({ 'bad key': 'x' })).toMatchObject({
      message: expect.stringContaining("Reactor 'orders': option tags: a tag key must be"),
      option: 'tags',
    });
    expect(await refusedStart({ k: 'x'.repeat(257) })).toMatchObject({ option: 'tags.k' });
    expect(await refusedStart({ k: 1 })).toBeInstanceOf(ConfigurationError);
    expect(await refusedStart(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])))).toMatchObject({
      message: expect.stringContaining('at most 16 tags'),
    });
    // Nothing was started.
    expect((await engine.list({ reactor: 'orders' })).runs).toEqual([]);

    const many = defineReactor('many', (r: ReactorBuilder<object>) =>
      r.step(
        'tagger',
        (_: object, ctx) => {
          for (let i = 0; i < 17; i++) ctx.tag(`k${i}`, 'v');
          return success(1);
        },
        {},
      ),
    );
    const outcome = await engine.run(many, {});
    expect(outcome.status).toBe('failed');
    expect(JSON.stringify(outcome)).toContain("Reactor 'many' step 'tagger': ctx.tag: a run carries at most 16 tags");

    const refusedList = (query: unknown) => engine.list(query as never).catch((e: unknown) => e);
    expect(await refusedList({ reactor: 'orders', tag: 'novalue' })).toMatchObject({ option: 'tag' });
    expect(await refusedList({ reactor: 'orders', tag: { key: 'a b', value: 'x' } })).toMatchObject({ option: 'tag' });
    expect(await refusedList({ reactor: 'orders', runId: '' })).toMatchObject({ option: 'runId' });
  });
});
