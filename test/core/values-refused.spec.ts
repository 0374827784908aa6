/**
 * Issue 26, errors and values, on the engine (embedded runtime): values JSON would change are
 * refused naming where they are, whatever their depth; a sparse array costs its real size; `-0` is
 * 0 on every path; and only a storage failure is `STORAGE_UNAVAILABLE`.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { clientCallError, isStorageFailure } from '../../lib/core/errors';
import { ReactorEngine } from '../../lib/core';
import { success } from '../../lib/core/results/step-outcome';
import { jsonProblem, MAX_VALUE_DEPTH, withoutUndefinedProperties } from '../../lib/core/model/json-values';
import { MemoryLockManager } from '../../lib/storage/memory';
import { createHarness } from './harness';

/** An object `levels` deep (`{ n: { n: … } }`) whose innermost object is `leaf`. */
function nested(levels: number, leaf: Record<string, unknown>): Record<string, unknown> {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { n: value };
  return value;
}

/** An object with an own `__proto__` key, as `JSON.parse` makes one (its value one level deeper). */
const withProtoKey = (): Record<string, unknown> => JSON.parse('{"__proto__": {"admin": true}, "ok": 1}');

function sparse(index: number): number[] {
  const array: number[] = [];
  array[index] = 1;
  return array;
}

describe('jsonProblem: what JSON would change is named with its path', () => {
  it.each([
    ['a RegExp', { customer: { tags: ['a', 'b', 'c', /x/] } }, 'inputs.customer.tags[3]: a RegExp'],
    ['an Error', { e: new Error('x') }, 'inputs.e: an Error'],
    ['an Error subclass', { e: new TypeError('x') }, 'inputs.e: an Error'],
    ['a Uint8Array', { bytes: new Uint8Array(2) }, 'inputs.bytes: a Uint8Array'],
    ['a Buffer', { bytes: Buffer.from('x') }, 'inputs.bytes: a Uint8Array'],
    ['an ArrayBuffer', { bytes: new ArrayBuffer(2) }, 'inputs.bytes: an ArrayBuffer'],
    ['a Promise', { later: Promise.resolve(1) }, 'inputs.later: a Promise'],
    ['a boxed number', { n: new Number(1) }, 'inputs.n: a boxed Number'],
    ['a boxed string', { s: new String('x') }, 'inputs.s: a boxed String'],
    ['a boxed boolean', { b: new Boolean(false) }, 'inputs.b: a boxed Boolean'],
    ['a named array property', { list: Object.assign([1, 2], { total: 3 }) }, 'inputs.list.total: a named property'],
    ['a hole', { list: Object.assign([1], { 2: 3 }) }, 'inputs.list[1]: a hole'],
    ['a WeakMap', { w: new WeakMap() }, 'inputs.w: a WeakMap'],
    ['a key that is not an identifier', { 'a b': new Date(0) }, 'inputs["a b"]: a Date'],
  ])('%s', (_, value, expected) => {
    expect(jsonProblem(value, 'inputs')).toContain(expected);
  });

  it('plain data, class instances and -0 pass', () => {
    class Money {
      constructor(readonly amount = 1) {}
    }
    expect(jsonProblem({ a: [1, 'x', null, { b: true }], m: new Money(), z: -0, o: Object.create(null) })).toBe(
      undefined,
    );
  });

  it('a throwing getter or proxy is a problem naming where it is, never a throw', () => {
    const getter = {
      order: {
        get total(): number {
          throw new Error('boom');
        },
      },
    };
    const proxy = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap');
        },
      },
    );
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(jsonProblem(getter, 'inputs')).toBe('inputs.order.total: reading it threw: boom');
    expect(jsonProblem({ p: proxy }, 'inputs')).toBe('inputs.p: reading it threw: trap');
    expect(jsonProblem({ r: revoked }, 'inputs')).toContain('inputs.r: reading it threw:');
  });

  it('nesting deeper than the limit is refused, and a cycle is told from a deep value', () => {
    expect(jsonProblem(nested(MAX_VALUE_DEPTH - 1, {}))).toBe(undefined);
    expect(jsonProblem(nested(MAX_VALUE_DEPTH, {}))).toContain(`nested deeper than ${MAX_VALUE_DEPTH} levels`);
    const loop: Record<string, unknown> = { a: {} };
    (loop.a as Record<string, unknown>).back = loop;
    // Named where the walk met the object again (the loop or its child, by the limit's parity).
    expect(jsonProblem({ order: loop }, 'inputs')).toMatch(
      /^inputs\.order(\.a)?: a cycle \(it holds itself; store ids instead of references\)$/,
    );
    // A 300-level path is cut in its middle; the problem stays readable.
    expect(jsonProblem(nested(300, {}))?.length).toBeLessThanOrEqual(301);
  });

  it('a sparse array costs its real size, not its length (index 3e7, and near 2^32)', () => {
    for (const index of [3e7, 2 ** 32 - 2]) {
      const started = process.hrtime.bigint();
      expect(jsonProblem({ list: sparse(index) }, 'inputs')).toBe(
        'inputs.list[0]: a hole (a sparse array; JSON makes it null)',
      );
      const value = { list: sparse(index) };
      expect(withoutUndefinedProperties(value)).toBe(value);
      // Walked element by element this took 0.95 s (3e7) and minutes (2^32).
      expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(50);
    }
  });
});

describe('-0 is 0 on every path, as JSON stores it', () => {
  it('withoutUndefinedProperties makes -0 0 at any depth, copying only what holds one', () => {
    const plain = { a: [1, { b: 2 }] };
    expect(withoutUndefinedProperties(plain)).toBe(plain);
    const out = withoutUndefinedProperties({ a: [1, -0, { b: -0 }], c: -0 });
    expect(Object.is(out.a[1], 0)).toBe(true);
    expect(Object.is((out.a[2] as { b: number }).b, 0)).toBe(true);
    expect(Object.is(out.c, 0)).toBe(true);
    expect(Object.is(withoutUndefinedProperties(-0), 0)).toBe(true);
  });

  it('the first step, the next step, the outcome and the stored run all see 0, in the caller and in a worker', async () => {
    for (const background of [false, true]) {
      const { engine, dispatcher } = createHarness();
      const seen: unknown[] = [];
      const def = defineReactor(
        `negative-zero-${background}`,
        (r: ReactorBuilder<{ n: number; list: number[] }>) => {
          const n = r.input('n', { type: 'number' });
          const list = r.input('list', { type: 'array' });
          const first = r.step(
            'first',
            (a: { n: number; list: number[] }) => (seen.push(a.n, a.list[0]), success(-0)),
            {
              n,
              list,
            },
          );
          return r.step('second', (a: { x: number }) => (seen.push(a.x), success({ x: a.x, y: -0 })), { x: first });
        },
        background ? { background: { all: true } } : {},
      );
      const started = await engine.run(def, { n: -0, list: [-0] });
      const outcome = background ? await engine.wait(started.runId, { timeoutMs: 5_000 }) : started;
      await dispatcher.idle();
      expect(outcome.status).toBe('completed');
      expect(seen.every((v) => Object.is(v, 0))).toBe(true);
      const value = (outcome as { value: { x: number; y: number } }).value;
      expect(Object.is(value.y, 0) && Object.is(value.x, 0)).toBe(true);
      const stored = await engine.get(outcome.runId);
      expect(Object.is(stored?.inputs.n, 0)).toBe(true);
    }
  });
});

describe('a copy made to store a value never takes an own __proto__ key as its prototype', () => {
  it('withoutUndefinedProperties drops an own __proto__ key (JSON.parse makes one) instead of assigning it', () => {
    const parsed = JSON.parse('{"__proto__":{"isAdmin":true},"a":1,"b":{"c":-0}}') as Record<string, unknown>;
    const copy = withoutUndefinedProperties(parsed);
    expect(copy).not.toBe(parsed); // the -0 made a copy
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(copy).toEqual({ a: 1, b: { c: 0 } });
  });
});

describe('inputs JSON would change fail the run as invalid input, naming the path', () => {
  const def = defineReactor('values-refused-inputs', (r: ReactorBuilder<{ customer: unknown; note: string }>) =>
    r.step('noop', () => success(1), {
      c: r.input('customer', { type: 'object' }),
      n: r.input('note', { type: 'string' }),
    }),
  );

  it.each([
    ['a RegExp', { tags: ['a', 'b', 'c', /vip/] }, 'inputs.customer.tags[3]: a RegExp'],
    ['a boxed number', { age: new Number(3) }, 'inputs.customer.age: a boxed Number'],
    ['a named array property', { tags: Object.assign(['a'], { extra: 1 }) }, 'inputs.customer.tags.extra'],
    ['a sparse array near 2^32', { tags: sparse(2 ** 32 - 2) }, 'inputs.customer.tags[0]: a hole'],
    [
      'a throwing getter',
      {
        get tags(): string[] {
          throw new Error('no tags');
        },
      },
      'inputs.customer.tags: reading it threw: no tags',
    ],
  ])('%s', async (_, customer, where) => {
    const { engine } = createHarness();
    const outcome = await engine.run(def, { customer, note: 'fine' });
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.code).toBe('INPUT_VALIDATION');
    expect(outcome.failure.fieldErrors?.customer?.[0]).toContain(`cannot be stored as it is: ${where}`);
    expect(outcome.failure.message).toContain("Reactor 'values-refused-inputs'");
    // Stored failed, without the field it could not store.
    expect((await engine.get(outcome.runId))?.inputs).toEqual({ note: 'fine' });
  });

  it('inputs whose keys cannot be read (a proxy) fail as invalid input, nothing thrown', async () => {
    const { engine } = createHarness();
    const inputs = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('no keys');
        },
      },
    );
    const outcome = await engine.run(def, inputs as never);
    expect(outcome).toMatchObject({
      status: 'failed',
      failure: { code: 'INPUT_VALIDATION', fieldErrors: { '(inputs)': ['could not be read: no keys'] } },
    });
  });

  it('__proto__ keys are dropped at every depth a value may have; deeper values are refused whole', async () => {
    const { engine } = createHarness();
    const seen: unknown[] = [];
    const deep = defineReactor('proto-depth', (r: ReactorBuilder<{ doc: unknown }>) =>
      r.step('read', (a: { doc: unknown }) => (seen.push(a.doc), success(1)), {
        doc: r.input('doc', { type: 'object' }),
      }),
    );
    // At the deepest level a field may hold (its `{ admin }` value MAX_VALUE_DEPTH - 1 levels below
    // the field) the key is dropped, as at the top.
    const kept = await engine.run(deep, { doc: nested(MAX_VALUE_DEPTH - 2, withProtoKey()) });
    expect(kept.status).toBe('completed');
    let leaf = seen[0] as Record<string, unknown>;
    while (leaf.n !== undefined) leaf = leaf.n as Record<string, unknown>;
    expect(leaf).toEqual({ ok: 1 });
    expect(Object.prototype.hasOwnProperty.call(leaf, '__proto__')).toBe(false);
    // One level deeper (and 300, where the key used to be kept) the field is refused, key and all.
    for (const levels of [MAX_VALUE_DEPTH - 1, 300]) {
      const refused = await engine.run(deep, { doc: nested(levels, withProtoKey()) });
      expect(refused.status === 'failed' && refused.failure.fieldErrors?.doc?.[0]).toContain(
        `nested deeper than ${MAX_VALUE_DEPTH} levels`,
      );
    }
  });
});

describe('a step returning a value JSON would change fails, naming reactor, step and path', () => {
  it.each([
    ['a RegExp', () => ({ tags: ['a', /x/] }), '.tags[1]: a RegExp'],
    ['an Error', () => ({ error: new Error('x') }), '.error: an Error'],
    ['a Uint8Array', () => new Uint8Array(3), 'the value: a Uint8Array'],
    ['an ArrayBuffer', () => ({ raw: new ArrayBuffer(1) }), '.raw: an ArrayBuffer'],
    ['a Promise', () => ({ later: Promise.resolve(1) }), '.later: a Promise'],
    ['a boxed number', () => ({ n: new Number(2) }), '.n: a boxed Number'],
    ['a named array property', () => Object.assign([1], { total: 1 }), '.total: a named property of an array'],
    ['a sparse array near 2^32', () => sparse(2 ** 32 - 2), '[0]: a hole'],
    [
      'a throwing getter',
      () => ({
        get total(): number {
          throw new Error('lazy total');
        },
      }),
      '.total: reading it threw: lazy total',
    ],
  ])('%s, in the caller and in a worker', async (_, bad, where) => {
    for (const background of [false, true]) {
      const { engine, dispatcher } = createHarness();
      const log: string[] = [];
      const def = defineReactor(
        `values-refused-${background}`,
        (r: ReactorBuilder<object>) => {
          const make = r.step(
            'make',
            { run: () => (log.push('run'), success(bad())), undo: () => void log.push('undo') },
            {},
          );
          r.step('after', () => (log.push('after'), success(1)), {}, { waitFor: [make] });
        },
        { maxConcurrency: 1, ...(background ? { background: { all: true } } : {}) },
      );
      const started = await engine.run(def, {});
      const outcome = background ? await engine.wait(started.runId, { timeoutMs: 5_000 }) : started;
      await dispatcher.idle();
      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') continue;
      expect(outcome.failure).toMatchObject({
        code: 'VALUE_NOT_STORABLE',
        reactorName: `values-refused-${background}`,
        stepName: 'make',
        retryable: false,
      });
      expect(outcome.failure.message).toContain("the result of step 'make' cannot be stored");
      expect(outcome.failure.message).toContain(where);
      // Run once, taken back at once; the next step never ran.
      expect(log).toEqual(['run', 'undo']);
    }
  });
});

describe('only a storage failure is STORAGE_UNAVAILABLE', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  const reply = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), { name: 'ReplyError' });

  it.each([
    ['a refused connection', refused],
    ['a Redis reply error', reply],
    ["ioredis's closed connection", new Error('Connection is closed.')],
    ['a wrapped one', new Error('save failed', { cause: refused })],
  ])('%s is a storage failure', (_, error) => {
    expect(isStorageFailure(error)).toBe(true);
    expect(clientCallError('get', error)).toMatchObject({ code: 'STORAGE_UNAVAILABLE', retryable: true });
  });

  it.each([
    ['a URIError', new URIError('URI malformed')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a plain Error from user code', new Error('boom')],
    ['a thrown string', 'boom'],
  ])('%s is not: INTERNAL, not retryable, saying so', (_, error) => {
    expect(isStorageFailure(error)).toBe(false);
    const mapped = clientCallError('start', error);
    expect(mapped).toMatchObject({ code: 'INTERNAL', retryable: false });
    expect(mapped.message).toContain("start failed with an error that is not the storage's");
  });

  it('the engine reports a storage that fails with a TypeError as INTERNAL, one that is down as STORAGE_UNAVAILABLE', async () => {
    const engineWith = (error: unknown) =>
      new ReactorEngine({
        storage: {
          save: () => Promise.reject(error),
          load: () => Promise.reject(error),
          acquireAndLoad: () => Promise.reject(error),
          listActive: () => Promise.resolve([]),
          markBroken: () => Promise.resolve(),
        },
        locks: new MemoryLockManager(),
      });
    await expect(engineWith(new TypeError('x is not a function')).get('r-1')).rejects.toMatchObject({
      code: 'INTERNAL',
    });
    await expect(engineWith(refused).get('r-1')).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
  });

  it('an idempotency key with a lone surrogate is refused naming it, before the storage is asked', async () => {
    const { engine } = createHarness();
    const def = defineReactor('lone-key', (r: ReactorBuilder<object>) => r.step('s', () => success(1), {}));
    await expect(engine.run(def, {}, { idempotencyKey: 'order-\ud800' })).rejects.toMatchObject({
      code: 'CONFIGURATION_INVALID',
      message: expect.stringContaining("Reactor 'lone-key': idempotencyKey must be well-formed Unicode"),
    });
  });
});
