/**
 * Issue 21, on the embedded runtime (the engine with the memory adapters): idempotency keys of runs
 * that never started, cancel during a rollback, the last invalid payload's message and run id,
 * contracts with a cross-field rule and DTO defaults, and the rough edges (a null run id, forward
 * references, `continue` with `wait`, a correlation id from the run's inputs and results, and
 * `undefined` properties seen the same in the caller and after a hand-off). The storage-bound ones
 * run on Redis and BullMQ too, in test/e2e/parity-ctl.e2e.spec.ts.
 */
import 'reflect-metadata';
import { IsInt, IsOptional, IsString, Min } from 'class-validator';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import {
  DefinitionError,
  InvalidRunIdError,
  InvalidRunStateError,
  PayloadValidationError,
} from '../../lib/core/errors';
import { runLeaseKey } from '../../lib/core/model/keys';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setImmediate(r));
}

function charge(log: string[]) {
  return defineReactor('ctl-charge', (r: ReactorBuilder<{ amount: number }>) =>
    r.step('charge', ({ amount }: { amount: number }) => (log.push(`charge:${amount}`), success(`ch_${amount}`)), {
      amount: r.input('amount', { type: 'integer', min: 1 }),
    }),
  );
}

describe('idempotency keys of runs that never started', () => {
  it('a run refused for its inputs does not keep its key: the next, valid call with the key runs', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = charge(log);
    const refused = await engine.run(def, { amount: 0 }, { idempotencyKey: 'order-1' });
    expect(refused).toMatchObject({ status: 'failed', failure: { code: 'INPUT_VALIDATION' } });
    expect(refused.replayed).toBeUndefined();
    // The refused run is kept, for people to see.
    expect((await engine.get(refused.runId))?.status).toBe('failed');
    const valid = await engine.run(def, { amount: 5 }, { idempotencyKey: 'order-1' });
    expect(valid).toMatchObject({ status: 'completed', value: 'ch_5' });
    expect(valid.replayed).toBeUndefined();
    expect(valid.runId).not.toBe(refused.runId);
    // From now on the key is the valid run's: its inputs replay it, other inputs are refused (issue 26).
    const again = await engine.run(def, { amount: 5 }, { idempotencyKey: 'order-1' });
    expect(again).toMatchObject({ status: 'completed', runId: valid.runId, replayed: true });
    const started = await engine.start(def, { amount: 5 }, { idempotencyKey: 'order-1' });
    expect(started).toMatchObject({ runId: valid.runId, replayed: true });
    await expect(engine.run(def, { amount: 0 }, { idempotencyKey: 'order-1' })).rejects.toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      runId: valid.runId,
    });
    expect(log).toEqual(['charge:5']);
  });

  it('start refused for its inputs does not keep its key either', async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    const def = charge(log);
    const refused = await engine.start(def, { amount: -1 }, { idempotencyKey: 'order-2' });
    expect(refused.status).toBe('failed');
    const valid = await engine.start(def, { amount: 2 }, { idempotencyKey: 'order-2' });
    expect(valid).toMatchObject({ status: 'dispatched' });
    expect(valid.runId).not.toBe(refused.runId);
    await dispatcher.idle();
    expect((await engine.wait(valid.runId)).status).toBe('completed');
    expect(log).toEqual(['charge:2']);
  });

  it('a call refused before its run was stored (a run id of another reactor) does not keep its key', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    await engine.run(charge(log), { amount: 1 }, { runId: 'taken-id' });
    const other = defineReactor('ctl-other', (r: ReactorBuilder<object>) => r.step('x', () => success('X'), {}));
    const refused = await engine.run(other, {}, { runId: 'taken-id', idempotencyKey: 'k' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidRunStateError);
    const next = await engine.run(other, {}, { idempotencyKey: 'k' });
    expect(next).toMatchObject({ status: 'completed', value: 'X' });
    expect(next.runId).not.toBe('taken-id');
  });
});

describe('idempotency keys of runs refused by their coordination', () => {
  it('a run refused to the caller because its lock is taken does not keep its key', async () => {
    const { engine, storage } = createHarness();
    const gate = deferred();
    const log: string[] = [];
    const def = defineReactor(
      'ctl-locked',
      (r: ReactorBuilder<{ account: string }>) =>
        r.step(
          'work',
          async ({ account }: { account: string }) => {
            log.push(`work:${account}`);
            await gate.promise;
            return success(`done ${account}`);
          },
          { account: r.input('account', { type: 'string' }) },
        ),
      { lock: { key: (i: Record<string, unknown>) => `account:${String(i.account)}` } },
    );
    engine.register(def);
    const first = engine.run(def, { account: 'a' });
    const refused = await engine
      .run(def, { account: 'a' }, { runId: 'refused-run', idempotencyKey: 'pay-a' })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'LOCK_CONTENDED' });
    await expect(storage.load('refused-run')).resolves.toBeUndefined();
    gate.resolve();
    await first;
    // The key was given back: a new run under a new id, not the id of the run that never was.
    const next = await engine.run(def, { account: 'a' }, { idempotencyKey: 'pay-a' });
    expect(next).toMatchObject({ status: 'completed', value: 'done a' });
    expect(next.runId).not.toBe('refused-run');
    expect(next.replayed).toBeUndefined();
  });
});

describe('the only payload of an interrupt with maxAttempts 1', () => {
  it('fails the run saying so once', async () => {
    const { engine } = createHarness();
    const def = approval([]);
    engine.register(def);
    const paused = await engine.run(def, { orderId: 'o-1', tenant: 'acme' });
    await expect(engine.continue(paused.runId, 'approve', { approved: true })).rejects.toMatchObject({
      runId: paused.runId,
      runFailed: true,
    });
    expect(await engine.wait(paused.runId)).toMatchObject({
      status: 'failed',
      failure: {
        message:
          "Reactor 'ctl-approval' interrupt 'approve' failed: 1 payload was tried and it was invalid (maxAttempts 1): by is missing",
      },
    });
  });
});

describe('cancel during a rollback', () => {
  it('is refused as undo is ("in progress"), and stores no cancel request', async () => {
    const { engine, storage } = createHarness();
    const log: string[] = [];
    const gate = deferred();
    const def = defineReactor('ctl-rollback', (r: ReactorBuilder<object>) => {
      const a = r.step(
        'a',
        {
          run: () => success('A'),
          undo: async () => {
            log.push('undo:a');
            await gate.promise;
          },
        },
        {},
      );
      return r.step('b', () => failure(new Error('b broke'), { retryable: false }), {}, { waitFor: [a] });
    });
    const running = engine.run(def, {});
    await until(() => log.includes('undo:a'));
    const runId = (await storage.listActive(10))[0];
    expect((await storage.load(runId))?.status).toBe('rolling_back');

    const cancel = await engine.cancel(runId, 'too late').catch((e: unknown) => e);
    expect(cancel).toBeInstanceOf(InvalidRunStateError);
    expect((cancel as InvalidRunStateError).message).toBe(
      `Run '${runId}' is rolling back: a rollback is in progress, so there is nothing left to cancel; wait for it (client.wait).`,
    );
    expect(cancel).toMatchObject({ code: 'INVALID_RUN_STATE', status: 'rolling_back' });
    expect(storage.cancelRequest((await storage.load(runId))!)).toBeUndefined();
    await expect(engine.undo(runId)).rejects.toBeInstanceOf(InvalidRunStateError);

    gate.resolve();
    const outcome = await running;
    expect(outcome).toMatchObject({ status: 'failed', failure: { errorMessage: 'b broke' } });
    const view = await engine.get(runId);
    expect(view?.status).toBe('failed');
    expect(view?.cancellation).toBeUndefined();
  });
});

/** reserve (input orderId), then interrupt approve, then charge. */
function approval(log: string[], maxAttempts?: number) {
  return defineReactor('ctl-approval', (r: ReactorBuilder<{ orderId: string; tenant: string }>) => {
    const orderId = r.input('orderId', { type: 'string' });
    r.input('tenant', { type: 'string' });
    const reserve = r.step(
      'reserve',
      {
        run: ({ orderId: id }: { orderId: string }) => (log.push('run:reserve'), success(`R-${id}`)),
        undo: () => void log.push('undo:reserve'),
      },
      { orderId },
    );
    const decision = r.interrupt<{ approved: boolean; by: string }>('approve', {
      waitFor: [reserve],
      // No args wired: the id comes from the run's inputs and the results so far.
      correlationId: ({ inputs, results }) => `${String(inputs.tenant)}/${String(results.reserve)}`,
      payload: { approved: { type: 'boolean' }, by: { type: 'string', minLength: 1 } },
      maxAttempts,
    });
    return r.step(
      'charge',
      ({ decision: d }: { decision: { approved: boolean; by: string } }) => (
        log.push(`run:charge:${d.by}`),
        success(`charged by ${d.by}`)
      ),
      { decision },
    );
  });
}

describe('interrupts', () => {
  it('the last invalid payload fails the run with one message saying how many were tried; each error carries the run id', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = approval(log, 2);
    engine.register(def);
    const paused = await engine.run(def, { orderId: 'o-1', tenant: 'acme' });
    const first = await engine
      .continue(paused.runId, 'approve', { approved: 'yes', by: 'bob' })
      .catch((e: unknown) => e);
    expect(first).toBeInstanceOf(PayloadValidationError);
    expect(first).toMatchObject({ runId: paused.runId, attempts: 1, attemptsLeft: 1 });
    const last = await engine.continue(paused.runId, 'approve', { approved: true, by: '' }).catch((e: unknown) => e);
    expect(last).toMatchObject({ runId: paused.runId, attempts: 2, attemptsLeft: 0, runFailed: true });
    expect((last as PayloadValidationError).toJSON()).toMatchObject({ runId: paused.runId });
    const failed = await engine.wait(paused.runId);
    expect(failed.status).toBe('failed');
    if (failed.status !== 'failed') return;
    expect(failed.failure.message).toBe(
      "Reactor 'ctl-approval' interrupt 'approve' failed: 2 payloads were tried and each was invalid (maxAttempts 2); the last one: by must have at least 1 character",
    );
    expect(failed.failure.message).not.toMatch(/failed after|attempt |time\(s\)/);
    expect(failed.failure.fieldErrors).toEqual({ by: ['must have at least 1 character'] });
    expect(log).toEqual(['run:reserve', 'undo:reserve']);
  });

  it("correlationId gets the run's inputs and the results so far, without wiring them", async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, { orderId: 'o-7', tenant: 'acme' });
    expect(paused).toMatchObject({ status: 'paused', correlationId: 'acme/R-o-7' });
    const resumed = await engine.continueByCorrelationId('ctl-approval', 'approve', 'acme/R-o-7', {
      approved: true,
      by: 'alice',
    });
    expect(resumed).toMatchObject({ accepted: 'applied', outcome: { status: 'completed', value: 'charged by alice' } });
  });

  it("continue and continueByCorrelationId with { wait: true } resolve with the run's next outcome", async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    const def = approval(log);
    engine.register(def);
    const a = await engine.run(def, { orderId: 'o-1', tenant: 't' });
    const inWorker = await engine.continue(
      a.runId,
      'approve',
      { approved: true, by: 'ann' },
      {
        execute: 'background',
        wait: true,
      },
    );
    expect(inWorker).toMatchObject({
      accepted: 'deferred',
      reason: 'background',
      outcome: { status: 'completed', value: 'charged by ann' },
    });
    const without = await engine.run(def, { orderId: 'o-2', tenant: 't' });
    const plain = await engine.continue(
      without.runId,
      'approve',
      { approved: true, by: 'x' },
      { execute: 'background' },
    );
    expect(plain).not.toHaveProperty('outcome');
    await dispatcher.idle();

    // By correlation id, the same.
    const b = await engine.run(def, { orderId: 'o-3', tenant: 't' });
    const byId = engine.continueByCorrelationId(
      'ctl-approval',
      'approve',
      't/R-o-3',
      { approved: true, by: 'cy' },
      {
        execute: 'background',
        wait: true,
        timeoutMs: 600_000,
      },
    );
    expect(await byId).toMatchObject({
      accepted: 'deferred',
      runId: b.runId,
      outcome: { status: 'completed', value: 'charged by cy' },
    });
  });

  it('continue with { wait: true } waits for a run busy in another process', async () => {
    const { engine, locks, dispatcher } = createHarness({ snoozeDelayMs: 10, snoozeJitterMs: 0 });
    const log: string[] = [];
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, { orderId: 'o-9', tenant: 't' });
    const held = (await locks.acquire(runLeaseKey(paused.runId), 60_000))!;
    const dispatched = jest.spyOn(dispatcher, 'dispatch');
    let settled = false;
    const waiting = engine
      .continue(paused.runId, 'approve', { approved: true, by: 'dee' }, { wait: true, timeoutMs: 600_000 })
      .finally(() => (settled = true));
    await until(() => dispatched.mock.calls.length > 0); // the resume is handed to a worker
    expect(settled).toBe(false);
    await locks.release(held);
    expect(await waiting).toMatchObject({
      accepted: 'deferred',
      reason: 'busy',
      outcome: { status: 'completed', value: 'charged by dee' },
    });
  });
});

class BookArgs {
  @IsInt()
  from!: number;
  @IsInt()
  @Min(1)
  seats: number = 2;
  @IsOptional()
  @IsString()
  note: string | null = 'n/a';
}

describe('contracts', () => {
  function booking(seen: unknown[]) {
    return defineReactor('ctl-booking', (r: ReactorBuilder<{ from: number; to: number; note?: string }>) =>
      r.step(
        'book',
        (args: { from: number; to: number; note?: string }) => (seen.push(args), success('booked')),
        { from: r.input('from', { type: 'integer' }), to: r.input('to', { type: 'integer' }) },
        {
          input: {
            from: { type: 'integer', min: 0 },
            to: { type: 'integer' },
            note: { type: 'string', optional: true, default: 'n/a' },
            validate: (a: { from: number; to: number }) =>
              a.from <= a.to ? undefined : { field: 'to', message: `must be >= from (${a.from})` },
          },
        },
      ),
    );
  }

  it('a short-form contract with a default and a cross-field rule: the rule sees the defaults, its field lands in fieldErrors', async () => {
    const { engine } = createHarness();
    const seen: unknown[] = [];
    const ok = await engine.run(booking(seen), { from: 1, to: 3 });
    expect(ok.status).toBe('completed');
    expect(seen).toEqual([{ from: 1, to: 3, note: 'n/a' }]);
    const bad = await engine.run(booking(seen), { from: 5, to: 3 });
    expect(bad).toMatchObject({
      status: 'failed',
      failure: {
        code: 'INPUT_VALIDATION',
        stepName: 'book',
        fieldErrors: { to: ['must be >= from (5)'] },
        message:
          "Reactor 'ctl-booking' step 'book' failed: Reactor 'ctl-booking' step 'book': input validation failed (short form): to must be >= from (5)",
      },
    });
    // The rule runs once the fields pass: a field error is reported alone.
    const typed = await engine.run(booking(seen), { from: -1, to: 3 });
    expect(typed).toMatchObject({ failure: { fieldErrors: { from: ['must be >= 0'] } } });
    expect(seen).toHaveLength(1);
  });

  it('a rule may return a message, several violations, or throw; each lands in fieldErrors', async () => {
    const { engine } = createHarness();
    const cases: Array<[unknown, Record<string, string[]>]> = [
      ['dates are out of order', { '(value)': ['dates are out of order'] }],
      [
        [{ field: 'a', message: 'too big' }, 'and wrong', { message: 'whole' }],
        { a: ['too big'], '(value)': ['and wrong', 'whole'] },
      ],
      [false, { '(value)': ['is invalid (validate returned false)'] }],
    ];
    for (const [result, fieldErrors] of cases) {
      const def = defineReactor('ctl-rule', (r: ReactorBuilder<{ a: number }>) =>
        r.step(
          's',
          () => success(1),
          { a: r.input('a', { type: 'number' }) },
          {
            input: { a: { type: 'number' }, validate: async () => result as string },
          },
        ),
      );
      const outcome = await engine.run(def, { a: 1 });
      expect(outcome).toMatchObject({ status: 'failed', failure: { fieldErrors } });
    }
    const throwing = defineReactor('ctl-rule-throws', (r: ReactorBuilder<{ a: number }>) =>
      r.step(
        's',
        () => success(1),
        { a: r.input('a', { type: 'number' }) },
        {
          input: {
            a: { type: 'number' },
            validate: () => {
              throw new Error('no rates');
            },
          },
        },
      ),
    );
    expect(await engine.run(throwing, { a: 1 })).toMatchObject({
      failure: { fieldErrors: { '(value)': ['validate threw: no rates'] } },
    });
  });

  it('refuses a class under validate and an arrow function as a field, naming the fix', () => {
    const define = (input: Record<string, unknown>) => () =>
      defineReactor('ctl-bad-rule', (r: ReactorBuilder<{ a: number }>) =>
        r.step('s', () => success(1), { a: r.input('a') }, { input: input as never }),
      );
    expect(define({ a: { type: 'number' }, validate: BookArgs })).toThrow(
      "Reactor 'ctl-bad-rule': step 's': input contract: 'validate' holds a class; a function there is the contract's cross-field rule ((value) => message | { field, message } | undefined). A field named 'validate' of a DTO type is written validate: { dto: BookArgs }.",
    );
    expect(define({ a: () => true })).toThrow(
      "Reactor 'ctl-bad-rule': step 's': input contract field 'a' is an arrow function: a field takes a short form or a DTO class; only the key 'validate' takes a function (the contract's cross-field rule).",
    );
    expect(define({ a: { type: 'number' }, validate: BookArgs })).toThrow(DefinitionError);
  });

  it("a DTO contract's property initialisers are its defaults: they fill missing or null arguments and need no wiring", async () => {
    const { engine } = createHarness();
    const seen: unknown[] = [];
    const def = defineReactor('ctl-dto-defaults', (r: ReactorBuilder<{ from: number; note?: string | null }>) =>
      r.step(
        'book',
        (args: { from: number; seats?: number; note?: string | null }) => (seen.push(args), success('ok')),
        {
          from: r.input('from', { type: 'integer' }),
          note: r.input('note', { optional: true }),
        },
        { input: BookArgs },
      ),
    );
    expect((await engine.run(def, { from: 1 })).status).toBe('completed');
    expect((await engine.run(def, { from: 1, note: null })).status).toBe('completed');
    expect((await engine.run(def, { from: 1, note: 'window' })).status).toBe('completed');
    expect(seen).toEqual([
      { from: 1, seats: 2, note: 'n/a' },
      { from: 1, seats: 2, note: 'n/a' },
      { from: 1, seats: 2, note: 'window' },
    ]);
    // The DTO's own rules still apply to what is given.
    const bad = await engine.run(def, { from: 1.5 });
    expect(bad).toMatchObject({
      status: 'failed',
      failure: { code: 'INPUT_VALIDATION', fieldErrors: { from: expect.any(Array) } },
    });
    expect(bad.status === 'failed' && bad.failure.fieldErrors).not.toHaveProperty('seats');
  });
});

describe('rough edges', () => {
  it.each([[null], [''], [42], [{}], ['a:b']])('start and run refuse the run id %p as get does', async (runId) => {
    const { engine } = createHarness();
    const def = charge([]);
    for (const call of [
      () => engine.start(def, { amount: 1 }, { runId: runId as string }),
      () => engine.run(def, { amount: 1 }, { runId: runId as string }),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidRunIdError);
      expect((error as InvalidRunIdError).code).toBe('INVALID_RUN_ID');
      expect((error as Error).message).toMatch(
        /^Reactor 'ctl-charge': option runId .* is invalid: it must .*\. Omit runId for a new one\.$/,
      );
    }
    await expect(engine.get(runId as string)).rejects.toBeInstanceOf(InvalidRunIdError);
    expect(await engine.list({ reactor: 'ctl-charge' })).toMatchObject({ runs: [] });
  });

  it('names the value in the message', async () => {
    const { engine } = createHarness();
    await expect(engine.start(charge([]), { amount: 1 }, { runId: null as unknown as string })).rejects.toThrow(
      "Reactor 'ctl-charge': option runId null is invalid: it must be a non-empty string. Omit runId for a new one.",
    );
  });

  it('r.result(name) is a forward reference: the reader depends on a step declared after it', async () => {
    const { engine } = createHarness();
    const order: string[] = [];
    const def = defineReactor('ctl-forward', (r: ReactorBuilder<object>) => {
      const total = r.step('total', ({ price }: { price: number }) => (order.push('total'), success(price * 2)), {
        price: r.result<number>('price'),
      });
      r.step('price', () => (order.push('price'), success(21)), {});
      return total;
    });
    expect(def.stepsByName.get('total')?.dependsOn).toEqual(['price']);
    expect(await engine.run(def, {})).toMatchObject({ status: 'completed', value: 42 });
    expect(order).toEqual(['price', 'total']);
    expect(() =>
      defineReactor('ctl-forward-typo', (r: ReactorBuilder<object>) => {
        r.step('total', () => success(1), { price: r.result('prcie') });
        r.step('price', () => success(21), {});
      }),
    ).toThrow("Reactor 'ctl-forward-typo': step 'total' depends on unknown step 'prcie'. Did you mean 'price'?");
    expect(() => defineReactor('ctl-forward-empty', (r: ReactorBuilder<object>) => void r.result(''))).toThrow(
      "Reactor 'ctl-forward-empty': r.result() needs the name of a step (a non-empty string), got ''.",
    );
  });

  /** `first` returns a value with an undefined property; `second` reads it and the input, maybe after a hand-off. */
  function keys(seen: Record<string, string[]>, handOff: boolean) {
    return defineReactor(
      handOff ? 'ctl-undefined-worker' : 'ctl-undefined-caller',
      (r: ReactorBuilder<{ order: { id: number; note?: string } }>) => {
        const order = r.input('order', { type: 'object' });
        const first = r.step(
          'first',
          {
            run: (args: { order: { id: number }; missing?: string }) => {
              seen.firstArgs = Object.keys(args);
              seen.firstOrder = Object.keys(args.order);
              return success({ a: 1, b: undefined as unknown as number });
            },
            undo: () => undefined,
          },
          { order, missing: order.path('note') },
        );
        return r.step(
          'second',
          (args: { order: object; first: object }) => {
            seen.secondOrder = Object.keys(args.order);
            seen.secondFirst = Object.keys(args.first);
            return success(args.first);
          },
          { order, first },
        );
      },
      handOff ? { background: { after: 'first' } } : {},
    );
  }

  it('a key whose value is undefined reaches the step the same way in the caller and in a worker: left out', async () => {
    const { engine, dispatcher } = createHarness();
    const inCaller: Record<string, string[]> = {};
    const inWorker: Record<string, string[]> = {};
    const input = { order: { id: 1, note: undefined } };
    const caller = await engine.run(keys(inCaller, false), input);
    const handedOff = await engine.run(keys(inWorker, true), input);
    expect(handedOff.status).toBe('dispatched');
    await dispatcher.idle();
    const worker = await engine.wait(handedOff.runId);
    expect(inCaller).toEqual({ firstArgs: ['order'], firstOrder: ['id'], secondOrder: ['id'], secondFirst: ['a'] });
    expect(inWorker).toEqual(inCaller);
    expect(caller).toMatchObject({ status: 'completed' });
    expect(Object.keys((caller as { value: object }).value)).toEqual(['a']);
    expect(Object.keys((worker as { value: object }).value)).toEqual(['a']);
  });
});
