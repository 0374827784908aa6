/**
 * Issue 21 through `ReactorClient`, on both runtimes: the embedded one (`forRoot()`, memory
 * storage, in-process jobs) and Redis + BullMQ (the run's jobs handled by the app's BullMQ worker).
 * Idempotency keys of runs that never started, cancel during a rollback, the last invalid payload,
 * `continue` with `wait`, a correlation id from the run's inputs and results, contracts checked in a
 * worker, a null run id, and `undefined` properties seen the same in the caller and in a worker.
 *
 * What the steps see is recorded in a module-level ledger keyed by run id, whichever process part
 * (caller or worker) executed them.
 */
import 'reflect-metadata';
import { IsInt, IsOptional, IsString } from 'class-validator';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { InvalidRunIdError, InvalidRunStateError, PayloadValidationError } from '../../lib/core/errors';
import type { ReactorRuntime } from '../../lib/config/reactor-runtime.interface';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { failure, success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { createEmbeddedApp, createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

/** What the steps did, per run id. */
const ledger = new Map<string, unknown[]>();
function note(ctx: StepContext, entry: unknown): void {
  ledger.set(ctx.runId, [...(ledger.get(ctx.runId) ?? []), entry]);
}
function ledgerOf(runId: string): unknown[] {
  return ledger.get(runId) ?? [];
}

/** Undos of `pctl-rollback` wait here until the test opens it. */
let undoGate: { promise: Promise<void>; open: () => void };
function closeUndoGate(): void {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  undoGate = { promise, open };
}

@Reactor('pctl-charge')
class ChargeReactor implements ReactorBlueprint<{ amount: number }> {
  build(r: ReactorBuilder<{ amount: number }>) {
    return r.step(
      'charge',
      ({ amount }: { amount: number }, ctx) => (note(ctx, `charge:${amount}`), success(`ch_${amount}`)),
      { amount: r.input('amount', { type: 'integer', min: 1 }) },
    );
  }
}

@Reactor('pctl-rollback')
class RollbackReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const a = r.step(
      'a',
      {
        run: () => success('A'),
        undo: async (_result, _args, ctx) => {
          note(ctx, 'undo:a');
          await undoGate.promise;
        },
      },
      {},
    );
    r.step('b', () => failure(new Error('b broke'), { retryable: false }), {}, { waitFor: [a] });
  }
}

type Decision = { approved: boolean; by: string };

@Reactor('pctl-approval')
class ApprovalReactor implements ReactorBlueprint<{ orderId: string; tenant: string }> {
  build(r: ReactorBuilder<{ orderId: string; tenant: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    r.input('tenant', { type: 'string' });
    const reserve = r.step(
      'reserve',
      {
        run: ({ orderId: id }: { orderId: string }, ctx) => (note(ctx, 'run:reserve'), success(`R-${id}`)),
        undo: (_result, _args, ctx) => void note(ctx, 'undo:reserve'),
      },
      { orderId },
    );
    const decision = r.interrupt<Decision>('approve', {
      waitFor: [reserve],
      correlationId: ({ inputs, results }) => `${String(inputs.tenant)}/${String(results.reserve)}`,
      payload: { approved: { type: 'boolean' }, by: { type: 'string', minLength: 1 } },
      maxAttempts: 2,
    });
    return r.step('charge', ({ decision: d }: { decision: Decision }) => success(`charged by ${d.by}`), { decision });
  }
}

class SeatArgs {
  @IsInt()
  from!: number;
  @IsInt()
  seats: number = 2;
  @IsOptional()
  @IsString()
  note: string | null = 'n/a';
}

@Reactor('pctl-booking', { background: { all: true } })
class BookingReactor implements ReactorBlueprint<{ from: number; to: number }> {
  build(r: ReactorBuilder<{ from: number; to: number }>) {
    const from = r.input('from', { type: 'integer' });
    const to = r.input('to', { type: 'integer' });
    const range = r.step(
      'range',
      (args: { from: number; to: number; note?: string }, ctx) => (note(ctx, args), success(args.to - args.from)),
      { from, to },
      {
        input: {
          from: { type: 'integer' },
          to: { type: 'integer' },
          note: { type: 'string', optional: true, default: 'n/a' },
          validate: (a: { from: number; to: number }) =>
            a.from <= a.to ? undefined : { field: 'to', message: 'must be >= from' },
        },
      },
    );
    return r.step(
      'seats',
      (args: Partial<SeatArgs> & { from: number }, ctx) => (note(ctx, args), success(args.seats)),
      { from },
      { input: SeatArgs, waitFor: [range] },
    );
  }
}

/** `first` returns a value with an undefined property; `second` reads it and the input (after a hand-off when `after`). */
function keysBlueprint(r: ReactorBuilder<{ order: { id: number; note?: string } }>) {
  const order = r.input('order', { type: 'object' });
  const first = r.step(
    'first',
    {
      run: (args: { order: { id: number }; missing?: string }, ctx: StepContext) => {
        note(ctx, { firstArgs: Object.keys(args), firstOrder: Object.keys(args.order) });
        return success({ a: 1, b: undefined as unknown as number });
      },
      undo: () => undefined,
    },
    { order, missing: order.path('note') },
  );
  return r.step(
    'second',
    (args: { order: object; first: object }, ctx) => {
      note(ctx, { secondOrder: Object.keys(args.order), secondFirst: Object.keys(args.first) });
      return success(args.first);
    },
    { order, first },
  );
}

@Reactor('pctl-keys-caller')
class KeysInCaller implements ReactorBlueprint<{ order: { id: number; note?: string } }> {
  build(r: ReactorBuilder<{ order: { id: number; note?: string } }>) {
    return keysBlueprint(r);
  }
}

@Reactor('pctl-keys-worker', { background: { after: 'first' } })
class KeysInWorker implements ReactorBlueprint<{ order: { id: number; note?: string } }> {
  build(r: ReactorBuilder<{ order: { id: number; note?: string } }>) {
    return keysBlueprint(r);
  }
}

const PROVIDERS = [ChargeReactor, RollbackReactor, ApprovalReactor, BookingReactor, KeysInCaller, KeysInWorker];

const { prefix } = useRedisPrefixes();

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS)],
  ['redis + bullmq', async () => (await createRedisApp(prefix('pctl'), {}, { providers: PROVIDERS })).app],
])('issue 21 on the %s runtime', (_name, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('a run refused for its inputs does not keep its idempotency key: the next, valid call runs', async () => {
    const key = `order-${Math.random()}`;
    const refused = await client.run(ChargeReactor, { amount: 0 }, { idempotencyKey: key });
    expect(refused).toMatchObject({ status: 'failed', failure: { code: 'INPUT_VALIDATION' } });
    const valid = await client.run(ChargeReactor, { amount: 3 }, { idempotencyKey: key });
    expect(valid).toMatchObject({ status: 'completed', value: 'ch_3' });
    expect(valid.runId).not.toBe(refused.runId);
    expect(valid.replayed).toBeUndefined();
    const again = await client.start(ChargeReactor, { amount: 3 }, { idempotencyKey: key });
    expect(again).toMatchObject({ runId: valid.runId, replayed: true });
    expect(ledgerOf(valid.runId)).toEqual(['charge:3']);
    // The same through start, whose valid run goes on in a worker.
    const key2 = `order-${Math.random()}`;
    await client.start(ChargeReactor, { amount: -2 }, { idempotencyKey: key2 });
    const started = await client.start(ChargeReactor, { amount: 4 }, { idempotencyKey: key2 });
    expect(started.status).toBe('dispatched');
    expect(await client.wait(started.runId, WAIT)).toMatchObject({ status: 'completed', value: 'ch_4' });
  });

  it('cancel during a rollback is refused as undo is, and stores no cancel request', async () => {
    closeUndoGate();
    const running = client.start(RollbackReactor, {});
    const { runId } = await running;
    await pollUntil(() => ledgerOf(runId).includes('undo:a'), WAIT.timeoutMs);
    const storage = app.get<ReactorRuntime>(REACTOR_RUNTIME).storage;
    expect((await storage.load(runId))?.status).toBe('rolling_back');
    const cancel = await client.cancel(runId, 'too late').catch((e: unknown) => e);
    expect(cancel).toBeInstanceOf(InvalidRunStateError);
    expect(cancel).toMatchObject({ status: 'rolling_back' });
    expect((cancel as Error).message).toContain('a rollback is in progress');
    expect(storage.cancelRequest!((await storage.load(runId))!)).toBeUndefined();
    await expect(client.undo(runId)).rejects.toBeInstanceOf(InvalidRunStateError);
    undoGate.open();
    const outcome = await client.wait(runId, WAIT);
    expect(outcome).toMatchObject({ status: 'failed', failure: { errorMessage: 'b broke' } });
    expect((await client.get(runId))?.cancellation).toBeUndefined();
  });

  it('the last invalid payload: one message saying how many were tried, and the run id on the error', async () => {
    const orderId = `o-${Math.random()}`;
    const paused = await client.run(ApprovalReactor, { orderId, tenant: 'acme' });
    expect(paused).toMatchObject({ status: 'paused', correlationId: `acme/R-${orderId}` });
    const first = await client.continue(paused.runId, 'approve', { approved: 'no' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(PayloadValidationError);
    expect(first).toMatchObject({ runId: paused.runId, attemptsLeft: 1 });
    const last = await client
      .continueByCorrelationId(ApprovalReactor, 'approve', `acme/R-${orderId}`, { approved: true, by: '' })
      .catch((e: unknown) => e);
    expect(last).toMatchObject({ runId: paused.runId, attempts: 2, runFailed: true });
    const failed = await client.wait((last as PayloadValidationError).runId!, WAIT);
    expect(failed).toMatchObject({
      status: 'failed',
      failure: {
        message:
          "Reactor 'pctl-approval' interrupt 'approve' failed: 2 payloads were tried and each was invalid (maxAttempts 2); the last one: by must have at least 1 character",
      },
    });
    expect(ledgerOf(paused.runId)).toEqual(['run:reserve', 'undo:reserve']);
  });

  it("continue with { wait: true } resolves with the run's next outcome when a worker applies the answer", async () => {
    const a = await client.run(ApprovalReactor, { orderId: `o-${Math.random()}`, tenant: 't' });
    const byId = await client.continue(
      a.runId,
      'approve',
      { approved: true, by: 'ann' },
      {
        execute: 'background',
        wait: true,
        timeoutMs: WAIT.timeoutMs,
      },
    );
    expect(byId).toMatchObject({ accepted: 'deferred', outcome: { status: 'completed', value: 'charged by ann' } });
    const orderId = `o-${Math.random()}`;
    await client.run(ApprovalReactor, { orderId, tenant: 't' });
    const byCorrelation = await client.continueByCorrelationId(
      ApprovalReactor,
      'approve',
      `t/R-${orderId}`,
      { approved: true, by: 'bo' },
      { execute: 'background', wait: true, timeoutMs: WAIT.timeoutMs },
    );
    expect(byCorrelation).toMatchObject({
      accepted: 'deferred',
      outcome: { status: 'completed', value: 'charged by bo' },
    });
  });

  it('a short-form rule and DTO defaults apply in a worker', async () => {
    const bad = await client.start(BookingReactor, { from: 5, to: 1 });
    expect(await client.wait(bad.runId, WAIT)).toMatchObject({
      status: 'failed',
      failure: { code: 'INPUT_VALIDATION', stepName: 'range', fieldErrors: { to: ['must be >= from'] } },
    });
    const ok = await client.start(BookingReactor, { from: 1, to: 4 });
    expect(await client.wait(ok.runId, WAIT)).toMatchObject({ status: 'completed', value: 2 });
    expect(ledgerOf(ok.runId)).toEqual([
      { from: 1, to: 4, note: 'n/a' },
      { from: 1, seats: 2, note: 'n/a' },
    ]);
  });

  it('start({ runId: null }) is refused like get(null)', async () => {
    for (const call of [
      () => client.start(ChargeReactor, { amount: 1 }, { runId: null as unknown as string }),
      () => client.run(ChargeReactor, { amount: 1 }, { runId: null as unknown as string }),
      () => client.get(null as unknown as string),
    ]) {
      await expect(call()).rejects.toBeInstanceOf(InvalidRunIdError);
    }
    await expect(client.start(ChargeReactor, { amount: 1 }, { runId: null as unknown as string })).rejects.toThrow(
      "Reactor 'pctl-charge': option runId null is invalid: it must be a non-empty string. Omit runId for a new one.",
    );
  });

  it('a key whose value is undefined reaches the step the same way in the caller and in a worker', async () => {
    const input = { order: { id: 1, note: undefined } };
    const caller = await client.run(KeysInCaller, input);
    const handedOff = await client.run(KeysInWorker, input);
    expect(handedOff.status).toBe('dispatched');
    const worker = await client.wait(handedOff.runId, WAIT);
    const expected = [
      { firstArgs: ['order'], firstOrder: ['id'] },
      { secondOrder: ['id'], secondFirst: ['a'] },
    ];
    expect(ledgerOf(caller.runId)).toEqual(expected);
    expect(ledgerOf(handedOff.runId)).toEqual(expected);
    expect(Object.keys((caller as { value: object }).value)).toEqual(['a']);
    expect(Object.keys((worker as { value: object }).value)).toEqual(['a']);
  });
});
