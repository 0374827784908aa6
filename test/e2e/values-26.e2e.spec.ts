/**
 * Issue 26, errors and values, through `ReactorClient` on both runtimes (embedded, and Redis +
 * BullMQ): a call whose arguments or inputs are wrong gets the coded error of what is wrong, never
 * `STORAGE_UNAVAILABLE`; values JSON would change are refused naming where they are, in inputs and
 * in step results; `-0` is 0 for every reader; a sparse array costs its real size.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { ReactorError } from '../../lib/core/errors';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { createEmbeddedApp, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

/** What each run's steps saw. */
const seen = new Map<string, unknown[]>();

/** `customer` and `note` inputs; step `make` returns what `kind` names. */
@Reactor('v26-values')
class ValuesReactor implements ReactorBlueprint<{ customer?: unknown; kind?: string; n?: number }> {
  build(r: ReactorBuilder<{ customer?: unknown; kind?: string; n?: number }>) {
    r.input('customer', { type: 'object', optional: true });
    const kind = r.input('kind', { type: 'string', optional: true });
    const n = r.input('n', { type: 'number', optional: true });
    const made = r.step(
      'make',
      ({ kind: k, n: x }: { kind?: string; n?: number }, ctx) => {
        seen.set(ctx.runId, [x]);
        return success(made26(k));
      },
      { kind, n },
    );
    return r.step('use', ({ made: m }: { made: unknown }, ctx) => (seen.get(ctx.runId)?.push(m), success(m)), { made });
  }
}

/** `retain` has no `use` step: it returns `{ x: -0 }` as the run's value. */
function made26(kind: string | undefined): unknown {
  const sparse: number[] = [];
  sparse[2 ** 32 - 2] = 1;
  switch (kind) {
    case 'regexp':
      return { rules: [/a/, /b/] };
    case 'error':
      return { error: new Error('declined') };
    case 'bytes':
      return { pdf: new Uint8Array([1, 2]) };
    case 'boxed':
      return { total: new Number(3) };
    case 'named':
      return { lines: Object.assign(['a'], { count: 1 }) };
    case 'sparse':
      return { ids: sparse };
    case 'promise':
      return { later: Promise.resolve(1) };
    default:
      return { zero: -0 };
  }
}

const PROVIDERS = [ValuesReactor];
const { prefix } = useRedisPrefixes();

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS)],
  ['redis + bullmq', async () => (await createRedisApp(prefix('v26'), {}, { providers: PROVIDERS })).app],
])('issue 26 errors and values on the %s runtime', (_runtime, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** The error `call` threw (it must throw). */
  async function thrown(call: () => Promise<unknown>): Promise<ReactorError> {
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReactorError);
    return error as ReactorError;
  }

  it('arguments a call cannot use are INVALID_ARGUMENT naming the method and argument, before the storage is asked', async () => {
    const started = await client.start(ValuesReactor, {});
    const runId = started.runId;
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => client.continue(runId, 42 as never, {}), 'continue(): step must be'],
      [() => client.continue(runId, [] as never, {}), 'continue(): step must be'],
      [() => client.continue(runId, ['a', 7] as never, {}), 'continue(): step must be'],
      [() => client.continue(runId, 'approve', {}, 'x' as never), 'continue(): options must be an object'],
      [() => client.continue(runId, 'approve', {}, { execute: 'now' as never }), 'continue(): options.execute'],
      [
        () => client.continueByCorrelationId(ValuesReactor, 'approve', 42 as never, {}),
        'continueByCorrelationId(): correlationId must be',
      ],
      [
        () => client.continueByCorrelationId(ValuesReactor, 'approve', 'order-\ud800', {}),
        'continueByCorrelationId(): correlationId must be',
      ],
      [() => client.wait(runId, { timeoutMs: 'soon' as never }), 'wait(): options.timeoutMs'],
      [() => client.wait(runId, null as never), 'wait(): options must be an object'],
      [() => client.undo(runId, { wait: 'yes' as never }), 'undo(): options.wait'],
      [() => client.retry(runId, { new: 1 as never }), 'retry(): options.new'],
      [() => client.cancel(runId, 5 as never), 'cancel(): reason must be a string'],
      [() => client.list(null as never), 'list(): query must be an object'],
      [() => client.runsOnOtherDefinitions(-1), 'runsOnOtherDefinitions(): limit'],
      [() => client.run(ValuesReactor, {}, 'fast' as never), 'run(): options must be an object'],
      [() => client.start(ValuesReactor, {}, [] as never), 'start(): options must be an object'],
    ];
    for (const [call, message] of cases) {
      const error = await thrown(call);
      expect({ code: error.code, message: error.message }).toEqual({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining(message),
      });
      expect(error.retryable).toBe(false);
    }
    await client.wait(runId, WAIT);
  });

  it('an idempotency key with a lone surrogate and inputs with throwing getters or proxies get their own errors, never STORAGE_UNAVAILABLE', async () => {
    const key = await thrown(() => client.run(ValuesReactor, {}, { idempotencyKey: `k-\ud800-${Math.random()}` }));
    expect(key.code).toBe('CONFIGURATION_INVALID');
    expect(key.message).toContain("Reactor 'v26-values': idempotencyKey must be well-formed Unicode");

    const getter = {
      get customer(): unknown {
        throw new Error('lazy customer');
      },
    };
    const trapped = new Proxy(
      { name: 'x' },
      {
        get() {
          throw new Error('trap');
        },
      },
    );
    const noKeys = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('no keys');
        },
      },
    );
    for (const [inputs, field, message] of [
      [getter, 'customer', 'could not be read: lazy customer'],
      [{ customer: trapped }, 'customer', 'cannot be stored as it is: inputs.customer.name: reading it threw: trap'],
      [noKeys, '(inputs)', 'could not be read: no keys'],
    ] as const) {
      const outcome = await client.run(ValuesReactor, inputs as never);
      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') continue;
      expect(outcome.failure.code).toBe('INPUT_VALIDATION');
      expect(outcome.failure.fieldErrors?.[field]).toEqual([message]);
      expect(outcome.failure.message).toContain("Reactor 'v26-values': input validation failed");
    }
  });

  it.each([
    ['a RegExp', { tags: ['a', 'b', 'c', /vip/] }, 'inputs.customer.tags[3]: a RegExp'],
    ['an Error', { last: new Error('x') }, 'inputs.customer.last: an Error'],
    ['a Uint8Array', { photo: new Uint8Array(4) }, 'inputs.customer.photo: a Uint8Array'],
    ['an ArrayBuffer', { photo: new ArrayBuffer(4) }, 'inputs.customer.photo: an ArrayBuffer'],
    ['a Promise', { later: Promise.resolve(1) }, 'inputs.customer.later: a Promise'],
    ['a boxed primitive', { age: new Number(40) }, 'inputs.customer.age: a boxed Number'],
    ['a named array property', { tags: Object.assign(['a'], { primary: 'a' }) }, 'inputs.customer.tags.primary'],
    ['a sparse array near 2^32', { ids: Object.assign([], { [2 ** 32 - 2]: 1 }) }, 'inputs.customer.ids[0]: a hole'],
  ])(
    'inputs holding %s fail the run as INPUT_VALIDATION naming the path; nothing is stored that would change',
    async (_, customer, where) => {
      const outcome = await client.run(ValuesReactor, { customer, kind: 'zero' });
      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      expect(outcome.failure.code).toBe('INPUT_VALIDATION');
      expect(outcome.failure.fieldErrors?.customer?.[0]).toContain(`cannot be stored as it is: ${where}`);
      expect((await client.get(outcome.runId))?.inputs).toEqual({ kind: 'zero' });
    },
  );

  it.each([
    ['regexp', '.rules[0]: a RegExp'],
    ['error', '.error: an Error'],
    ['bytes', '.pdf: a Uint8Array'],
    ['boxed', '.total: a boxed Number'],
    ['named', '.lines.count: a named property of an array'],
    ['sparse', '.ids[0]: a hole'],
    ['promise', '.later: a Promise'],
  ])(
    'a step returning %s fails VALUE_NOT_STORABLE naming reactor, step and path; the next step never runs',
    async (kind, where) => {
      for (const start of [false, true]) {
        const first = start ? await client.start(ValuesReactor, { kind }) : await client.run(ValuesReactor, { kind });
        const outcome = start ? await client.wait(first.runId, WAIT) : first;
        expect(outcome.status).toBe('failed');
        if (outcome.status !== 'failed') continue;
        expect(outcome.failure).toMatchObject({
          code: 'VALUE_NOT_STORABLE',
          reactorName: 'v26-values',
          stepName: 'make',
          retryable: false,
        });
        expect(outcome.failure.message).toContain("Reactor 'v26-values' step 'make'");
        expect(outcome.failure.message).toContain(where);
        expect(seen.get(outcome.runId)).toHaveLength(1);
      }
    },
  );

  it('-0 is 0 for the first step, the next one, the outcome and the stored run, in the caller and in a worker', async () => {
    for (const start of [false, true]) {
      const first = start ? await client.start(ValuesReactor, { n: -0 }) : await client.run(ValuesReactor, { n: -0 });
      const outcome = start ? await client.wait(first.runId, WAIT) : first;
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') continue;
      const [n, made] = seen.get(outcome.runId) as [number, { zero: number }];
      expect(Object.is(n, 0)).toBe(true);
      expect(Object.is(made.zero, 0)).toBe(true);
      expect(Object.is((outcome.value as { zero: number }).zero, 0)).toBe(true);
      const stored = await client.get(outcome.runId);
      expect(Object.is(stored?.inputs.n, 0)).toBe(true);
    }
  });
});
