/**
 * Issue 26, run control, through `ReactorClient` on both runtimes (embedded, and Redis + BullMQ):
 * `retry` is idempotent per source run (in a row, while the retry runs, and two calls at once),
 * unless `{ new: true }`; an idempotency key with other inputs is refused with
 * `IDEMPOTENCY_CONFLICT`, equal inputs (key order aside) replay, and a reactor with `encryptInputs`
 * compares them without storing them in clear.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { IdempotencyConflictError } from '../../lib/core/errors';
import { failure, success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { testCipher, SECRET } from '../conformance/test-cipher';
import { createEmbeddedApp, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

/** What the steps did, per run id. */
const ledger = new Map<string, string[]>();
function note(ctx: StepContext, entry: string): void {
  ledger.set(ctx.runId, [...(ledger.get(ctx.runId) ?? []), entry]);
}
const ledgerOf = (runId: string) => ledger.get(runId) ?? [];

/** The second step of `rc26-ship` fails while this is true; a retry's run waits at `gate` first. */
let broken = true;
let gate: { promise: Promise<void>; open: () => void } | undefined;

@Reactor('rc26-ship')
class ShipReactor implements ReactorBlueprint<{ order: string }> {
  build(r: ReactorBuilder<{ order: string }>) {
    const order = r.input('order', { type: 'string' });
    const reserve = r.step(
      'reserve',
      {
        run: async (_args: object, ctx: StepContext) => {
          note(ctx, 'reserve');
          await gate?.promise;
          return success('r');
        },
        undo: (_result, _args, ctx) => note(ctx, 'release'),
      },
      {},
    );
    return r.step(
      'ship',
      ({ order: o }: { order: string }, ctx) => (
        note(ctx, `ship:${o}`),
        broken ? failure('no courier', { retryable: false }) : success(`shipped ${o}`)
      ),
      { order },
      { waitFor: [reserve] },
    );
  }
}

@Reactor('rc26-pay')
class PayReactor implements ReactorBlueprint<{ amount: number; meta?: Record<string, unknown> }> {
  build(r: ReactorBuilder<{ amount: number; meta?: Record<string, unknown> }>) {
    const amount = r.input('amount', { type: 'integer', min: 1 });
    r.input('meta', { type: 'object', optional: true });
    return r.step('pay', ({ amount: a }: { amount: number }, ctx) => (note(ctx, `pay:${a}`), success(a)), {
      amount,
    });
  }
}

@Reactor('rc26-secret', { encryptInputs: true })
class SecretReactor implements ReactorBlueprint<{ card: string }> {
  build(r: ReactorBuilder<{ card: string }>) {
    const card = r.input('card', { type: 'string', redact: true });
    return r.step('charge', ({ card: c }: { card: string }, ctx) => (note(ctx, 'charge'), success(c.length)), {
      card,
    });
  }
}

const PROVIDERS = [ShipReactor, PayReactor, SecretReactor];
const { prefix, redis } = useRedisPrefixes();
let redisPrefix = '';

function openGate(): void {
  gate?.open();
  gate = undefined;
}
function closeGate(): void {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
}

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS, { inputCipher: testCipher })],
  [
    'redis + bullmq',
    async () => {
      redisPrefix = prefix('rc26');
      return (await createRedisApp(redisPrefix, { inputCipher: testCipher }, { providers: PROVIDERS })).app;
    },
  ],
])('issue 26 run control on the %s runtime', (runtime, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    openGate();
    await app?.close();
  });
  beforeEach(() => {
    broken = true;
    openGate();
  });

  async function failedRun(order: string): Promise<string> {
    const first = await client.run(ShipReactor, { order });
    expect(first.status).toBe('failed');
    return first.runId;
  }

  it('retry twice in a row returns the first retry’s run (replayed); the steps run once more, not twice', async () => {
    const source = await failedRun('o-1');
    const first = await client.retry(source);
    expect(first.replayed).toBeUndefined();
    expect(first.runId).not.toBe(source);
    expect((await client.wait(first.runId, WAIT)).status).toBe('failed');
    const second = await client.retry(source);
    expect(second).toMatchObject({ runId: first.runId, replayed: true, status: 'failed' });
    expect(ledgerOf(first.runId)).toEqual(['reserve', 'ship:o-1', 'release']);
    expect(await client.get(first.runId)).toMatchObject({ retriedFrom: source, retryCount: 1 });
  });

  it('retry while the first retry runs, and two retries at once, make one new run', async () => {
    const source = await failedRun('o-2');
    broken = false;
    closeGate();
    const [a, b] = await Promise.all([client.retry(source), client.retry(source)]);
    expect(a.runId).toBe(b.runId);
    expect([a.replayed, b.replayed].filter(Boolean)).toHaveLength(1);
    // The retry's run is held at its first step: a third call returns it too.
    const during = await client.retry(source);
    expect(during).toMatchObject({ runId: a.runId, replayed: true });
    openGate();
    const done = await client.wait(a.runId, WAIT);
    expect(done).toMatchObject({ status: 'completed', value: 'shipped o-2' });
    expect(ledgerOf(a.runId)).toEqual(['reserve', 'ship:o-2']);
    expect(await client.retry(source)).toMatchObject({ runId: a.runId, replayed: true, status: 'completed' });
  });

  it('retry(id, { new: true }) starts another run', async () => {
    const source = await failedRun('o-3');
    const first = await client.retry(source);
    await client.wait(first.runId, WAIT);
    const another = await client.retry(source, { new: true });
    expect(another.runId).not.toBe(first.runId);
    expect(another.replayed).toBeUndefined();
    expect((await client.wait(another.runId, WAIT)).status).toBe('failed');
    expect(ledgerOf(another.runId)).toEqual(['reserve', 'ship:o-3', 'release']);
    // Without the option the first retry's run still answers.
    expect(await client.retry(source)).toMatchObject({ runId: first.runId, replayed: true });
  });

  it('an idempotency key with other inputs is refused with IDEMPOTENCY_CONFLICT naming the key and the reactor', async () => {
    const key = `pay-${runtime}-${Math.random()}`;
    const first = await client.run(PayReactor, { amount: 5, meta: { a: 1, b: 2 } }, { idempotencyKey: key });
    expect(first).toMatchObject({ status: 'completed', value: 5 });
    // Equal inputs (key order aside) replay the run.
    const same = await client.run(PayReactor, { meta: { b: 2, a: 1 }, amount: 5 }, { idempotencyKey: key });
    expect(same).toMatchObject({ runId: first.runId, replayed: true, status: 'completed' });
    for (const call of [
      () => client.run(PayReactor, { amount: 6 }, { idempotencyKey: key }),
      () => client.start(PayReactor, { amount: 5, meta: { a: 1 } }, { idempotencyKey: key }),
    ]) {
      const refused = await call().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(IdempotencyConflictError);
      expect(refused).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', idempotencyKey: key, runId: first.runId });
      expect((refused as Error).message).toContain(`Reactor 'rc26-pay'`);
      expect((refused as Error).message).toContain(`'${key}'`);
    }
    // The key stays the first run's.
    expect(await client.start(PayReactor, { amount: 5, meta: { a: 1, b: 2 } }, { idempotencyKey: key })).toMatchObject({
      runId: first.runId,
      replayed: true,
    });
    expect(ledgerOf(first.runId)).toEqual(['pay:5']);
  });

  it('encrypted inputs are compared by a hash, never stored in clear for it', async () => {
    const key = `card-${runtime}-${Math.random()}`;
    const first = await client.run(SecretReactor, { card: SECRET }, { idempotencyKey: key });
    expect(first).toMatchObject({ status: 'completed' });
    expect(await client.run(SecretReactor, { card: SECRET }, { idempotencyKey: key })).toMatchObject({
      runId: first.runId,
      replayed: true,
    });
    await expect(client.run(SecretReactor, { card: `${SECRET}0` }, { idempotencyKey: key })).rejects.toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
    });
    if (runtime === 'redis + bullmq') {
      const keys = await redis().keys(`${redisPrefix}*`);
      for (const k of keys) {
        const type = await redis().type(k);
        const text =
          type === 'hash'
            ? JSON.stringify(await redis().hgetall(k))
            : type === 'string'
              ? ((await redis().get(k)) ?? '')
              : '';
        const fields =
          type === 'hash'
            ? Object.entries(await redis().hgetall(k))
                .filter(([, v]) => v.includes(SECRET))
                .map(([f]) => f)
            : [];
        expect({ k, fields, clear: text.includes(SECRET) }).toEqual({ k, fields: [], clear: false });
      }
    }
  });
});
