import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { ConfigurationError } from '../../lib/core/errors/configuration.error';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

describe('list({ reactor, status, since, cursor, limit })', () => {
  it("finds a reactor's runs newest first, by status, a page at a time", async () => {
    const { engine, clock } = createHarness();
    const def = defineReactor('orders', (r: ReactorBuilder<{ ok: boolean }>) =>
      r.step('x', ({ ok }: { ok: boolean }) => (ok ? success(1) : failure('no', { retryable: false })), {
        ok: r.input('ok', { type: 'boolean' }),
      }),
    );
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await engine.run(def, { ok: i !== 2 })).runId);
      clock.advance(10);
    }
    await engine.run(
      defineReactor('other', (r: ReactorBuilder<object>) => r.step('y', () => success(1), {})),
      {},
    );

    const first = await engine.list({ reactor: 'orders', limit: 2 });
    expect(first.runs.map((r) => r.runId)).toEqual([ids[4], ids[3]]);
    const second = await engine.list({ reactor: 'orders', limit: 2, cursor: first.cursor });
    expect(second.runs.map((r) => r.runId)).toEqual([ids[2], ids[1]]);
    const failed = await engine.list({ reactor: 'orders', status: 'failed' });
    expect(failed.runs).toEqual([expect.objectContaining({ runId: ids[2], status: 'failed', reactorName: 'orders' })]);
    expect(failed.cursor).toBeUndefined();
    const since = (await engine.get(ids[3]))!.createdAt;
    expect((await engine.list({ reactor: 'orders', since })).runs.map((r) => r.runId)).toEqual([ids[4], ids[3]]);
  });

  it('refuses a query without a reactor, a bad limit or a cursor it did not return, naming the field', async () => {
    const { engine } = createHarness();
    const refused = async (query: unknown) =>
      engine.list(query as never).catch((e: unknown) => e as ConfigurationError);
    expect(await refused({})).toMatchObject({ option: 'reactor' });
    expect(await refused({ reactor: 'x', limit: 0 })).toMatchObject({
      message: "list: 'limit' must be an integer from 1 to 1000 (got 0).",
    });
    expect(await refused({ reactor: 'x', cursor: 'garbage' })).toBeInstanceOf(ConfigurationError);
  });
});
