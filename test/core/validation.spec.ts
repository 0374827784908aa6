import { IsInt, IsOptional, IsPositive, IsString, Min, ValidateNested } from 'class-validator';
import { Type } from 'class-transformer';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

class LineDto {
  @IsString() sku!: string;
  @IsInt() @Min(1) qty!: number;
}

class OrderDto {
  @IsString() id!: string;
  @IsPositive() total!: number;
  @ValidateNested({ each: true })
  @Type(() => LineDto)
  lines!: LineDto[];
}

class ChargeArgs {
  @IsPositive() amount!: number;
  @IsString() currency!: string;
  @IsOptional() @IsString() note?: string;
}

class ChargeResult {
  @IsString() chargeId!: string;
}

describe('validation: reactor inputs', () => {
  it('validates DTO inputs, nested, and reports every field error without running a step', async () => {
    const { engine } = createHarness();
    let ran = false;
    const def = defineReactor('orders', (r: ReactorBuilder<{ order: OrderDto; count: number }>) => {
      const o = r.input('order', OrderDto);
      const count = r.input('count', { type: 'integer' });
      return r.step('x', () => ((ran = true), success(1)), { o, count } as never);
    });
    const outcome = await engine.run(def, {
      order: { id: 7, total: -1, lines: [{ sku: 'a', qty: 0 }] },
      count: 1.5,
    } as never);
    expect(ran).toBe(false);
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.code).toBe('INPUT_VALIDATION');
    expect(outcome.failure.retryable).toBe(false);
    expect(Object.keys(outcome.failure.fieldErrors ?? {}).sort()).toEqual([
      'count',
      'order.id',
      'order.lines.0.qty',
      'order.total',
    ]);
    expect(outcome.failure.message).toMatch(/^Reactor 'orders': input validation failed: /);
    expect((await engine.get(outcome.runId))?.status).toBe('failed');
  });

  it('applies short forms: presence over truthiness, optional, default, null', async () => {
    const { engine } = createHarness();
    const def = defineReactor(
      'short',
      (r: ReactorBuilder<{ flag: boolean; note?: string; limit: number; name: string }>) => {
        const flag = r.input('flag', { type: 'boolean' });
        const note = r.input('note', { type: 'string', optional: true });
        const limit = r.input('limit', { type: 'number', default: 10 });
        r.input('name', { type: 'string' });
        return r.step('echo', (a: { flag: boolean; note?: string; limit: number }) => success(a), {
          flag,
          note,
          limit,
        });
      },
    );
    const ok = await engine.run(def, { flag: false, name: '' } as never);
    expect(ok.status === 'completed' && ok.value).toEqual({ flag: false, note: undefined, limit: 10 });

    const bad = await engine.run(def, { flag: null, name: 3 } as never);
    expect(bad.status === 'failed' && bad.failure.fieldErrors).toEqual({
      flag: ['must not be null'],
      name: ['must be a string'],
    });
    const missing = await engine.run(def, {} as never);
    expect(missing.status === 'failed' && missing.failure.fieldErrors).toEqual({
      flag: ['is missing'],
      name: ['is missing'],
    });
  });

  it('an input with a default gets it for null as well as for a missing key; null stays null without a default', async () => {
    const { engine } = createHarness();
    const def = defineReactor('null-default', (r: ReactorBuilder<{ limit?: number | null; note?: string | null }>) => {
      const limit = r.input('limit', { type: 'number', default: 10 });
      const note = r.input('note', { type: 'string', optional: true });
      return r.step('echo', (a: { limit?: number | null; note?: string | null }) => success(a), { limit, note });
    });
    const outcome = await engine.run(def, { limit: null, note: null });
    expect(outcome.status === 'completed' && outcome.value).toEqual({ limit: 10, note: null });
    expect((await engine.get(outcome.runId))?.inputs).toEqual({ limit: 10, note: null });
  });

  it('a __proto__ key in the input (as JSON.parse makes one) is dropped at any depth and cannot pass as an input', async () => {
    const { engine } = createHarness();
    const seen: unknown[] = [];
    const def = defineReactor(
      'proto',
      (r: ReactorBuilder<{ note?: string; payload: Record<string, unknown>; lines: unknown[] }>) => {
        const note = r.input('note', { type: 'string', optional: true });
        const payload = r.input('payload', { type: 'object' });
        const lines = r.input('lines', { type: 'array' });
        return r.step(
          'echo',
          (a: { note?: string; payload: Record<string, unknown>; lines: unknown[] }) => {
            seen.push(
              a.note,
              a.payload.admin,
              (a.lines[0] as Record<string, unknown> | undefined)?.admin,
              Object.getPrototypeOf(a.payload) === Object.prototype,
            );
            return success('ok');
          },
          { note, payload, lines },
        );
      },
    );
    const raw = JSON.parse(
      '{"__proto__": {"note": {"not": "a string"}}, "payload": {"id": 1, "__proto__": {"admin": true}}, "lines": [{"__proto__": {"admin": true}}]}',
    );
    const outcome = await engine.run(def, raw);
    expect(outcome.status).toBe('completed');
    expect(seen).toEqual([undefined, undefined, undefined, true]);
    const stored = (await engine.get(outcome.runId))?.inputs as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toEqual(['lines', 'payload']);
    expect(stored.payload).toEqual({ id: 1 });
  });

  it('never shows redacted inputs in failures, traces, events or get()', async () => {
    const { engine, recorder } = createHarness();
    const secret = 'tok_live_SECRET';
    const def = defineReactor('pay', (r: ReactorBuilder<{ token: string; amount: number }>) => {
      const token = r.input('token', { type: 'string', redact: true });
      const amount = r.input('amount', { type: 'number' });
      return r.step(
        'charge',
        () => {
          throw new Error('declined');
        },
        { token, amount } as never,
      );
    });
    const outcome = await engine.run(def, { token: secret, amount: 5 });
    expect(outcome.status).toBe('failed');
    const view = await engine.get(outcome.runId);
    const shown = JSON.stringify({ outcome, view, events: recorder.events });
    expect(shown).not.toContain(secret);
    expect(view?.inputs).toEqual({ token: '[REDACTED]', amount: 5 });
    if (outcome.status === 'failed') expect(outcome.failure.stepArguments).toEqual({ token: '[REDACTED]', amount: 5 });
  });
});

describe('validation: step contracts', () => {
  it('fails before the body on an input contract violation: not retried, not compensated', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = defineReactor('contract', (r: ReactorBuilder<{ amount: number; currency: string }>) => {
      const amount = r.input('amount', { type: 'number' });
      r.input('currency', { type: 'any' });
      const first = r.step('first', { run: () => success(1), undo: () => log.push('undo:first') }, {});
      return r.step(
        'charge',
        {
          run: () => (log.push('run:charge'), success({ chargeId: 'c' })),
          compensate: () => log.push('compensate:charge'),
        },
        { amount },
        { input: ChargeArgs, retries: { maxAttempts: 3 }, waitFor: [first] },
      );
    });
    const outcome = await engine.run(def, { amount: 5, currency: 42 as never });
    expect(log).toEqual(['undo:first']);
    expect(outcome.status === 'failed' && outcome.failure).toMatchObject({
      code: 'INPUT_VALIDATION',
      stepName: 'charge',
      fieldErrors: { currency: ['currency must be a string'] },
    });
    expect(outcome.attempts).toEqual({ first: 1 });
  });

  it('validates outputs: a violation compensates the step and is not retried', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = defineReactor('output', (r: ReactorBuilder<object>) => {
      r.step(
        'charge',
        { run: () => success({ chargeId: 12 }), compensate: () => log.push('compensate:charge') },
        {},
        { output: ChargeResult, retries: { maxAttempts: 3 } },
      );
    });
    const outcome = await engine.run(def, {});
    expect(log).toEqual(['compensate:charge']);
    expect(outcome.status === 'failed' && outcome.failure).toMatchObject({
      code: 'INPUT_VALIDATION',
      fieldErrors: { chargeId: expect.any(Array) },
    });
    expect(outcome.attempts).toEqual({ charge: 1 });
  });
});

describe('validation: short forms with constraints', () => {
  it('checks minLength, maxLength, pattern, min, max, enum and integer on reactor inputs, every violation named', async () => {
    const { engine } = createHarness();
    let runs = 0;
    type In = { code: string; tags: string[]; qty: number; price: number; currency: string };
    const def = defineReactor('constrained', (r: ReactorBuilder<In>) => {
      const code = r.input('code', { type: 'string', minLength: 3, maxLength: 5, pattern: /^[A-Z]+$/ });
      const tags = r.input('tags', { type: 'array', minLength: 1, maxLength: 2 });
      const qty = r.input('qty', { type: 'integer', min: 1, max: 10 });
      const price = r.input('price', { type: 'number', min: 0.5 });
      const currency = r.input('currency', { type: 'string', enum: ['EUR', 'USD'], default: 'EUR' });
      return r.step(
        'echo',
        (a: In) => (runs++, success(a)),
        { code, tags, qty, price, currency },
        { retries: { maxAttempts: 3 } },
      );
    });
    const bad = await engine.run(def, { code: 'ab1', tags: ['a', 'b', 'c'], qty: 11, price: 0.1, currency: 'GBP' });
    expect(runs).toBe(0);
    expect(bad.status === 'failed' && bad.failure).toMatchObject({
      code: 'INPUT_VALIDATION',
      retryable: false,
      fieldErrors: {
        code: ['must match /^[A-Z]+$/'],
        tags: ['must have at most 2 items'],
        qty: ['must be <= 10'],
        price: ['must be >= 0.5'],
        currency: ['must be one of "EUR", "USD"'],
      },
    });
    const short = await engine.run(def, { code: 'a', tags: [], qty: 2.5, price: 1 } as never);
    expect(short.status === 'failed' && short.failure.fieldErrors).toEqual({
      code: ['must have at least 3 characters', 'must match /^[A-Z]+$/'],
      tags: ['must have at least 1 item'],
      qty: ['must be an integer'],
    });
    const ok = await engine.run(def, { code: 'ABCD', tags: ['x'], qty: 10, price: 0.5, currency: null } as never);
    expect(ok.status === 'completed' && ok.value).toEqual({
      code: 'ABCD',
      tags: ['x'],
      qty: 10,
      price: 0.5,
      currency: 'EUR',
    });
    expect(runs).toBe(1);
  });

  it('a short-form input contract: defaults fill missing or null arguments, auto-wiring, violations before the body', async () => {
    const { engine } = createHarness();
    const seen: unknown[] = [];
    const log: string[] = [];
    const def = defineReactor('short-contract', (r: ReactorBuilder<{ amount: number; note?: string | null }>) => {
      r.input('amount', { type: 'number' });
      const note = r.input('note', { type: 'string', optional: true });
      return r.step(
        'charge',
        {
          run: (args: { amount?: number; note?: string | null; tries?: number }) => (
            seen.push(args),
            success(args.amount)
          ),
          compensate: () => log.push('compensate'),
        },
        { note },
        {
          input: {
            amount: { type: 'number', min: 1 },
            note: { type: 'string', optional: true, default: 'n/a', maxLength: 10 },
            tries: { type: 'integer', optional: true, default: 3 },
          },
          retries: { maxAttempts: 3 },
        },
      );
    });
    expect((await engine.run(def, { amount: 5 })).status).toBe('completed');
    expect((await engine.run(def, { amount: 6, note: null })).status).toBe('completed');
    expect((await engine.run(def, { amount: 7, note: 'hi' })).status).toBe('completed');
    expect(seen).toEqual([
      { amount: 5, note: 'n/a', tries: 3 },
      { amount: 6, note: 'n/a', tries: 3 },
      { amount: 7, note: 'hi', tries: 3 },
    ]);
    const bad = await engine.run(def, { amount: 0, note: 'much too long here' });
    expect(seen).toHaveLength(3);
    expect(log).toEqual([]);
    expect(bad.status === 'failed' && bad.failure).toMatchObject({
      code: 'INPUT_VALIDATION',
      stepName: 'charge',
      retryable: false,
      fieldErrors: { amount: ['must be >= 1'], note: ['must have at most 10 characters'] },
    });
    expect(bad.status === 'failed' && bad.failure.message).toMatch(
      /step 'charge': input validation failed \(short form\): amount must be >= 1; note must have at most 10 characters$/,
    );
    expect(bad.attempts).toEqual({});
  });

  it('a scalar output short form validates the value itself: a violation compensates the step and is not retried', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = defineReactor('scalar-out', (r: ReactorBuilder<{ n: number }>) => {
      const n = r.input('n', { type: 'number' });
      return r.step(
        'balance',
        { run: ({ n: v }: { n: number }) => success(v), compensate: () => log.push('compensate:balance') },
        { n },
        { output: { type: 'integer', min: 0 }, retries: { maxAttempts: 3 } },
      );
    });
    const ok = await engine.run(def, { n: 4 });
    expect(ok.status === 'completed' && ok.value).toBe(4);
    const bad = await engine.run(def, { n: -1 });
    expect(log).toEqual(['compensate:balance']);
    expect(bad.status === 'failed' && bad.failure).toMatchObject({
      code: 'INPUT_VALIDATION',
      retryable: false,
      fieldErrors: { '(value)': ['must be >= 0'] },
    });
    expect(bad.attempts).toEqual({ balance: 1 });
    const notInt = await engine.run(def, { n: 1.5 });
    expect(notInt.status === 'failed' && notInt.failure.fieldErrors).toEqual({ '(value)': ['must be an integer'] });
  });

  it('a record output short form validates the fields of an object value', async () => {
    const { engine } = createHarness();
    const def = defineReactor('record-out', (r: ReactorBuilder<{ v: unknown }>) => {
      const v = r.input('v');
      return r.step(
        'make',
        ({ v: x }: { v: unknown }) => success(x),
        { v },
        {
          output: { chargeId: { type: 'string', pattern: '^ch_' }, fee: { type: 'number', optional: true, min: 0 } },
        },
      );
    });
    const ok = await engine.run(def, { v: { chargeId: 'ch_1' } });
    expect(ok.status).toBe('completed');
    const bad = await engine.run(def, { v: { chargeId: 'x', fee: -2 } });
    expect(bad.status === 'failed' && bad.failure.fieldErrors).toEqual({
      chargeId: ['must match /^ch_/'],
      fee: ['must be >= 0'],
    });
    const scalar = await engine.run(def, { v: 3 });
    expect(scalar.status === 'failed' && scalar.failure.fieldErrors).toEqual({ '(value)': ['must be an object'] });
  });

  it('a DTO field inside a short-form contract and redact on a contract field', async () => {
    const { engine } = createHarness();
    const def = defineReactor('mixed', (r: ReactorBuilder<{ line: LineDto; card: string }>) => {
      r.input('line', LineDto);
      r.input('card', { type: 'string' });
      return r.step(
        'ship',
        () => {
          throw new Error('down');
        },
        {},
        { input: { line: LineDto, card: { type: 'string', redact: true } } },
      );
    });
    const bad = await engine.run(def, { line: { sku: 'a', qty: 0 }, card: '4242' });
    expect(bad.status === 'failed' && Object.keys(bad.failure.fieldErrors ?? {})).toEqual(['line.qty']);
    const failed = await engine.run(def, { line: { sku: 'a', qty: 1 }, card: '4242' });
    expect(failed.status === 'failed' && failed.failure.stepArguments).toEqual({
      line: { sku: 'a', qty: 1 },
      card: '[REDACTED]',
    });
  });
});
