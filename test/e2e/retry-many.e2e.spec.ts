/**
 * Issue 25, reset and redrive, through `ReactorClient` on both runtimes (embedded, and Redis +
 * BullMQ): `retry(runId, { fromStep, inputs })` reuses exactly the steps that do not depend on
 * `fromStep` nor read a changed input, refuses a rolled-back run, and the new run's undo undoes the
 * reused steps once; `retryMany` lists (dry run), retries each matching run once, replays after.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { InvalidArgumentError, InvalidRunStateError } from '../../lib/core/errors';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { buildShipping, type ShippingInput } from '../support/redrive.fixtures';
import { createEmbeddedApp, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

/** What the steps did, per run id. */
const ledger = new Map<string, string[]>();
const ledgerOf = (runId: string) => ledger.get(runId) ?? [];
let failD = false;

/** a(order) -> c(a); b(note); d(c, b). */
@Reactor('rd25-ship')
class ShipReactor implements ReactorBlueprint<ShippingInput> {
  build(r: ReactorBuilder<ShippingInput>) {
    return buildShipping(r, { record: (entry, ctx) => mark(ctx, entry), failD: () => failD });
  }
}

function mark(ctx: StepContext, entry: string): void {
  ledger.set(ctx.runId, [...(ledger.get(ctx.runId) ?? []), entry]);
}

const { prefix } = useRedisPrefixes();

describe.each([
  ['embedded', () => createEmbeddedApp([ShipReactor])],
  ['redis + bullmq', async () => (await createRedisApp(prefix('rd25'), {}, { providers: [ShipReactor] })).app],
])('issue 25 reset and redrive on the %s runtime', (_runtime, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });
  beforeEach(() => {
    failD = false;
  });

  it('retry from a step reuses exactly the steps before it; new inputs recompute their readers; undo undoes each step once', async () => {
    const first = await client.run(ShipReactor, { order: 'o1', note: 'n1' });
    expect(first.status).toBe('completed');
    const redriven = await client.retry(first.runId, { fromStep: 'c' });
    const done = await client.wait(redriven.runId, WAIT);
    expect(done.status === 'completed' && done.value).toBe('C(A:o1)+B:n1');
    expect([...ledgerOf(redriven.runId)].sort()).toEqual(['c', 'd']);
    const view = await client.get(redriven.runId);
    expect(view!.trace.filter((t) => t.type === 'skip').map((t) => [t.step, t.detail])).toEqual([
      ['a', `reused from run ${first.runId}`],
      ['b', `reused from run ${first.runId}`],
    ]);
    expect(await client.retry(first.runId, { fromStep: 'c' })).toMatchObject({
      runId: redriven.runId,
      replayed: true,
    });

    await client.undo(redriven.runId);
    expect(
      ledgerOf(redriven.runId)
        .filter((s) => s.startsWith('undo-'))
        .sort(),
    ).toEqual(['undo-a', 'undo-b', 'undo-c', 'undo-d']);
    await client.undo(first.runId);
    expect(
      ledgerOf(first.runId)
        .filter((s) => s.startsWith('undo-'))
        .sort(),
    ).toEqual(['undo-c', 'undo-d']);

    const second = await client.run(ShipReactor, { order: 'o2', note: 'n1' });
    const withNote = await client.retry(second.runId, { fromStep: 'd', inputs: { order: 'o2', note: 'n2' } });
    const done2 = await client.wait(withNote.runId, WAIT);
    expect(done2.status === 'completed' && done2.value).toBe('C(A:o2)+B:n2');
    expect([...ledgerOf(withNote.runId)].sort()).toEqual(['b', 'd']);
  });

  it('refuses an unknown step and a rolled-back failed run, saying why', async () => {
    failD = true;
    const failed = await client.run(ShipReactor, { order: 'o3', note: 'n' });
    expect(failed.status).toBe('failed');
    const refused = await client.retry(failed.runId, { fromStep: 'c' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidRunStateError);
    expect((refused as Error).message).toMatch(/rolled back/);
    const unknown = await client.retry(failed.runId, { fromStep: 'dd' }).catch((e: unknown) => e);
    // The state is checked first: a rolled-back run is refused whatever the step.
    expect(unknown).toBeInstanceOf(InvalidRunStateError);
    failD = false;
    const ok = await client.run(ShipReactor, { order: 'o4', note: 'n' });
    const bad = await client.retry(ok.runId, { fromStep: 'dd' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidArgumentError);
    expect((bad as Error).message).toMatch(/Did you mean 'd'\?/);
    await expect(client.retry(ok.runId, { fromStep: 3 as never })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('retryMany: dry run, then each failed run retried once; a second call replays them', async () => {
    const since = Date.now();
    failD = true;
    const ids: string[] = [];
    for (const order of ['m1', 'm2', 'm3']) ids.push((await client.run(ShipReactor, { order, note: 'n' })).runId);
    const dry = await client.retryMany({ reactor: ShipReactor, since, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.retried.map((r) => r.runId).sort()).toEqual([...ids].sort());
    expect(dry.retried.every((r) => r.newRunId === undefined)).toBe(true);
    expect((await client.list({ reactor: 'rd25-ship', since })).runs).toHaveLength(3); // no run started

    failD = false;
    const real = await client.retryMany({ reactor: 'rd25-ship', since, limit: 2 });
    expect(real.retried).toHaveLength(2);
    expect(real.refused).toEqual([]);
    for (const { newRunId } of real.retried) expect((await client.wait(newRunId!, WAIT)).status).toBe('completed');

    const again = await client.retryMany({ reactor: 'rd25-ship', since, limit: 2 });
    expect(again.retried).toEqual(real.retried.map((r) => ({ ...r, replayed: true })));
    await expect(client.retryMany({ reactor: ShipReactor, limit: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
