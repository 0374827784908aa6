import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createMemoryAdapters } from '../../lib/storage/memory';
import { createHarness } from './harness';

/** Three steps; `b` returns `bad` (a value JSON cannot hold) unless told otherwise. */
function chain(log: string[], bad: () => unknown, where: 'middle' | 'last') {
  return defineReactor(
    `values-${where}`,
    (r: ReactorBuilder<object>) => {
      const step = (name: string, value: () => unknown) =>
        r.step(
          name,
          {
            run: () => (log.push(`run:${name}`), success(value())),
            undo: () => void log.push(`undo:${name}`),
          },
          {},
        );
      const a = step('a', () => 'A');
      const b = r.step(
        'b',
        { run: () => (log.push('run:b'), success(bad())), undo: () => void log.push('undo:b') },
        {},
        { waitFor: [a] },
      );
      if (where === 'middle') {
        r.step('c', { run: () => (log.push('run:c'), success('C')) }, {}, { waitFor: [b] });
      }
    },
    { maxConcurrency: 1 },
  );
}

const circular = () => {
  const o: Record<string, unknown> = { name: 'loop' };
  o.self = o;
  return o;
};

describe('values a run cannot store', () => {
  it.each([
    ['a BigInt', () => 10n ** 20n],
    ['a circular object', circular],
  ])('a step returning %s mid-run fails that step (not retried) and the run rolls back', async (_, bad) => {
    const { engine } = createHarness();
    const log: string[] = [];
    const outcome = await engine.run(chain(log, bad, 'middle'), {});

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({ code: 'VALUE_NOT_STORABLE', stepName: 'b', retryable: false });
    expect(outcome.failure.message).toContain("the result of step 'b' cannot be stored");
    // b ran once; its result was taken back (undone at once), then a was undone; c never ran.
    expect(log).toEqual(['run:a', 'run:b', 'undo:b', 'undo:a']);
    expect((await engine.get(outcome.runId))?.status).toBe('failed');
  });

  it('the last step returning a value JSON cannot hold fails too, with the same rollback', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const outcome = await engine.run(
      chain(log, () => 1n, 'last'),
      {},
    );

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({ code: 'VALUE_NOT_STORABLE', stepName: 'b' });
    expect(log).toEqual(['run:a', 'run:b', 'undo:b', 'undo:a']);
    const stored = await engine.get(outcome.runId);
    expect(stored?.status).toBe('failed');
    expect(stored?.completed).toEqual(['a']);
  });

  it('in a worker: the step runs once and the run fails with the step named, rolled back', async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    const def = defineReactor(
      'values-worker',
      (r: ReactorBuilder<object>) => {
        const a = r.step(
          'a',
          { run: () => (log.push('run:a'), success('A')), undo: () => void log.push('undo:a') },
          {},
        );
        r.step('b', () => (log.push('run:b'), success({ big: 1n })), {}, { waitFor: [a] });
        r.step('never', () => failure('unreachable'), {}, { waitFor: ['b'] });
      },
      { background: { all: true }, maxConcurrency: 1 },
    );
    const started = await engine.run(def, {});
    const outcome = await engine.wait(started.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({ code: 'VALUE_NOT_STORABLE', stepName: 'b' });
    expect(log).toEqual(['run:a', 'run:b', 'undo:a']);
  });

  it('a trace entry whose arguments cannot be stored keeps its place without failing the run', async () => {
    const { engine } = createHarness();
    const def = defineReactor('values-trace', (r: ReactorBuilder<object>) =>
      r.step('use', ({ n }: { n: bigint }) => success(String(n)), { n: r.value(5n) }),
    );
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('completed');
    const stored = await engine.get(outcome.runId);
    expect(stored?.trace.find((t) => t.type === 'run')?.arguments).toBe('[not storable]');
  });
});

describe('inputs a run cannot store', () => {
  const def = defineReactor('values-inputs', (r: ReactorBuilder<{ order: unknown; note: string }>) =>
    r.step('noop', () => success(1), {
      o: r.input('order', { type: 'object' }),
      n: r.input('note', { type: 'string' }),
    }),
  );
  const deep = () => {
    let value: Record<string, unknown> = {};
    const root = value;
    for (let i = 0; i < 20_000; i++) value = (value.next = {}) as Record<string, unknown>;
    return root;
  };

  it.each([
    ['circular', circular],
    ['20,000 levels deep', deep],
    ['holding a BigInt', () => ({ total: 10n })],
  ])('an input that is %s fails the run as invalid input naming the field, nothing thrown', async (_, order) => {
    const { engine } = createHarness();
    const outcome = await engine.run(def, { order: order(), note: 'fine' });

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({
      code: 'INPUT_VALIDATION',
      fieldErrors: { order: [expect.stringContaining('cannot be stored')] },
    });
    const stored = await engine.get(outcome.runId);
    expect(stored?.status).toBe('failed');
    expect(stored?.inputs).toEqual({ note: 'fine' });
  });
});

describe('run ids', () => {
  it.each([
    ['null', null],
    ['empty', ''],
    ['with an id separator', 'order:1'],
    ['with a lone surrogate', 'order-\ud800'],
  ])('a run id that is %s is refused with a coded error by start, get, wait and undo', async (_, runId) => {
    const { engine } = createHarness();
    const def = defineReactor('ids', (r: ReactorBuilder<object>) => r.step('s', () => success(1), {}));
    const invalid = { code: 'INVALID_RUN_ID', message: expect.stringContaining('is invalid') };
    // A null run id in the options is no run id: the engine makes one.
    if (runId !== null) await expect(engine.run(def, {}, { runId })).rejects.toMatchObject(invalid);
    await expect(engine.get(runId as string)).rejects.toMatchObject(invalid);
    await expect(engine.wait(runId as string, { timeoutMs: 10 })).rejects.toMatchObject(invalid);
    await expect(engine.undo(runId as string)).rejects.toMatchObject(invalid);
  });

  it('two ids that differ only in a lone surrogate are not stored under one key: the ill-formed one is refused', async () => {
    const { engine } = createHarness();
    const def = defineReactor('ids-ok', (r: ReactorBuilder<object>) => r.step('s', () => success(1), {}));
    await expect(engine.run(def, {}, { runId: 'order-\ud83d\ude00' })).resolves.toMatchObject({ status: 'completed' });
    await expect(engine.run(def, {}, { runId: 'order-\ud83d' })).rejects.toMatchObject({ code: 'INVALID_RUN_ID' });
  });
});

describe('the trace stays small', () => {
  it('a large argument is stored once where it is needed, and only as a summary in the trace', async () => {
    const { engine, storage } = createHarness();
    const document = 'x'.repeat(1_000_000);
    let tries = 0;
    const def = defineReactor('big-args', (r: ReactorBuilder<{ document: string }>) =>
      r.step(
        'upload',
        ({ document: doc }: { document: string }) => (++tries < 3 ? failure(new Error('busy')) : success(doc.length)),
        { document: r.input('document', { type: 'string' }) },
        { retries: { maxAttempts: 3, baseDelayMs: 10 } },
      ),
    );
    const outcome = await engine.run(def, { document });
    expect(outcome.status === 'completed' && outcome.value).toBe(1_000_000);

    const stored = (await storage.load(outcome.runId))!;
    const runs = stored.trace.filter((t) => t.type === 'run');
    // Three attempts; the arguments shown once, summarized.
    expect(runs.map((t) => t.attempt)).toEqual([1, 2, 3]);
    expect(runs[0].arguments).toEqual({ document: '[string, 1000002 chars]' });
    expect(runs.slice(1).every((t) => t.arguments === undefined)).toBe(true);
    // The input itself is stored once, whole.
    expect(stored.inputs.document).toBe(document);
    expect(JSON.stringify(stored.trace).length).toBeLessThan(5_000);
  });
});

describe('values JSON would change on the way back', () => {
  it.each([
    ['a Date', () => ({ at: new Date(0) }), '.at: a Date'],
    ['a Map', () => ({ byId: new Map([['a', 1]]) }), '.byId: a Map'],
    ['a Set', () => ({ tags: new Set(['x']) }), '.tags: a Set'],
    ['NaN', () => ({ ratio: Number.NaN }), '.ratio: NaN'],
    ['an undefined array element', () => ({ list: [1, undefined] }), '.list[1]: undefined'],
  ])(
    'a step returning %s fails clearly, in the caller as in a worker, instead of changing type',
    async (_, bad, where) => {
      for (const background of [false, true]) {
        const { engine, dispatcher } = createHarness();
        const def = defineReactor(
          `values-json-${background}`,
          (r: ReactorBuilder<object>) => r.step('make', () => success(bad()), {}),
          background ? { background: { all: true } } : {},
        );
        const started = await engine.run(def, {});
        const outcome = background ? await engine.wait(started.runId, { timeoutMs: 5_000 }) : started;
        await dispatcher.idle();
        expect(outcome.status).toBe('failed');
        if (outcome.status !== 'failed') continue;
        expect(outcome.failure).toMatchObject({ code: 'VALUE_NOT_STORABLE', stepName: 'make' });
        expect(outcome.failure.message).toContain(where);
      }
    },
  );

  it('a Date in the inputs fails the run as invalid input naming where it is', async () => {
    const { engine } = createHarness();
    const def = defineReactor('values-date-input', (r: ReactorBuilder<{ order: unknown }>) =>
      r.step('noop', () => success(1), { o: r.input('order', { type: 'object' }) }),
    );
    const outcome = await engine.run(def, { order: { placedAt: new Date(0) } });
    expect(outcome.status === 'failed' && outcome.failure.fieldErrors).toEqual({
      order: [expect.stringContaining('a Date (store it as an ISO string)')],
    });
  });
});

describe('a step whose arguments would not fit', () => {
  it('fails before it runs (nothing to take back), when its undo would keep arguments larger than the record may be', async () => {
    const small = createMemoryAdapters(undefined, { maxContextBytes: 50_000 });
    const { engine } = createHarness({ storage: small.storage, locks: small.locks, maxContextBytes: 50_000 });
    const log: string[] = [];
    const def = defineReactor('big-undo-args', (r: ReactorBuilder<{ document: string }>) =>
      r.step(
        'upload',
        {
          run: () => (log.push('run'), success('ok')),
          undo: () => void log.push('undo'),
        },
        { document: r.input('document', { type: 'string' }) },
      ),
    );
    // 30 kB of input, stored once; its undo entry would hold 30 kB more: over 50 kB.
    const outcome = await engine.run(def, { document: 'x'.repeat(30_000) });

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({ code: 'CONTEXT_TOO_LARGE', stepName: 'upload' });
    expect(log).toEqual([]);
  });
});
