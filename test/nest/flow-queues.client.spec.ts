import { Test, type TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { InvalidArgumentError } from '../../lib/core/errors/invalid-argument.error';
import { UnknownReactorError } from '../../lib/core/errors/run-state.error';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { CapturingLogger } from './fixtures';

/** Held by every run's step until the test opens it. */
let gate: { promise: Promise<void>; open: () => void };
function closeGate(): void {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
}

@Reactor('tenant-export', { concurrency: { key: (inputs) => inputs.tenant as string, limit: 1 } })
class TenantExportReactor implements ReactorBlueprint<{ tenant: string }> {
  build(r: ReactorBuilder<{ tenant: string }>) {
    return r.step(
      'export',
      async ({ tenant }: { tenant: string }) => {
        await gate.promise;
        return success(`exported ${tenant}`);
      },
      { tenant: r.input('tenant', { type: 'string' }) },
    );
  }
}

@Reactor('plain')
class PlainReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.step('double', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) });
  }
}

describe('ReactorClient.flowQueues (embedded runtime)', () => {
  let module: TestingModule;
  let client: ReactorClient;

  beforeEach(async () => {
    closeGate();
    module = await Test.createTestingModule({
      imports: [ReactorModule.forRoot({})],
      providers: [TenantExportReactor, PlainReactor],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await module.init();
    client = module.get(ReactorClient);
  });

  afterEach(async () => {
    gate.open();
    await module.close();
  });

  async function startAll(): Promise<{ a: string[]; b: string }> {
    const a: string[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await client.start(TenantExportReactor, { tenant: 'a' });
      expect(outcome.status).toBe('dispatched');
      a.push(outcome.runId);
    }
    const b = await client.start(TenantExportReactor, { tenant: 'b' });
    return { a, b: b.runId };
  }

  it('shows per key the runs holding a slot, how many wait, and the next ones in start order', async () => {
    const before = Date.now();
    const { a, b } = await startAll();
    const queues = await client.flowQueues(TenantExportReactor);
    expect(queues).toEqual({
      reactorName: 'tenant-export',
      limit: 1,
      keys: expect.any(Array),
    });
    const byKey = new Map(queues!.keys.map((view) => [view.key, view]));
    expect([...byKey.keys()].sort()).toEqual(['a', 'b']);
    expect(byKey.get('a')).toEqual({
      key: 'a',
      live: [{ runId: a[0], since: expect.any(Number) }],
      queued: 2,
      next: [a[1], a[2]],
    });
    expect(byKey.get('b')).toEqual({ key: 'b', live: [{ runId: b, since: expect.any(Number) }], queued: 0, next: [] });
    for (const view of queues!.keys) {
      for (const { since } of view.live) expect(since).toBeGreaterThanOrEqual(before - 1000);
    }

    // By name, with `peek` bounding the waiting ids shown and `limit` the keys.
    const peeked = await client.flowQueues('tenant-export', { peek: 1 });
    expect(peeked!.keys.find((view) => view.key === 'a')).toMatchObject({ queued: 2, next: [a[1]] });
    expect((await client.flowQueues(TenantExportReactor, { peek: 0 }))!.keys.every((v) => v.next.length === 0)).toBe(
      true,
    );
    expect((await client.flowQueues(TenantExportReactor, { limit: 1 }))!.keys).toHaveLength(1);

    // Once the gate opens, every run completes and the keys hold nothing.
    gate.open();
    for (const runId of [...a, b]) {
      expect(await client.wait(runId, { timeoutMs: 10_000 })).toMatchObject({ status: 'completed' });
    }
    const after = await client.flowQueues(TenantExportReactor);
    for (const view of after!.keys) expect(view).toMatchObject({ live: [], queued: 0, next: [] });
  });

  it('resolves undefined for a reactor without concurrency', async () => {
    await expect(client.flowQueues(PlainReactor)).resolves.toBeUndefined();
    await expect(client.flowQueues('plain', { limit: 5, peek: 0 })).resolves.toBeUndefined();
  });

  it('refuses an unknown reactor', async () => {
    await expect(client.flowQueues('nope')).rejects.toBeInstanceOf(UnknownReactorError);
  });

  it.each([
    ['options', 'a string'],
    ['options', []],
    ['options', null],
    ['options.limit', { limit: 0 }],
    ['options.limit', { limit: 1.5 }],
    ['options.limit', { limit: '10' }],
    ['options.limit', { limit: 1001 }],
    ['options.peek', { peek: -1 }],
    ['options.peek', { peek: Number.NaN }],
    ['options.peek', { peek: 1001 }],
  ])('refuses bad %s (%p) with InvalidArgumentError naming it', async (field, options) => {
    const call = client.flowQueues(TenantExportReactor, options as never);
    await expect(call).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(call).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      method: 'flowQueues',
      argument: field,
      message: expect.stringContaining(`flowQueues(): ${field} must be`),
    });
  });
});
