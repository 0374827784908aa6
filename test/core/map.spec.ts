import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { MapResults } from '../../lib/core/map/map-results';
import { failure, halt, success } from '../../lib/core/results/step-outcome';
import type { MapElementJob, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { elementLeaseKey, mapIdOf } from '../../lib/core/model/keys';
import { createHarness } from './harness';

interface Item {
  sku: string;
  qty: number;
}

const items: Item[] = Array.from({ length: 12 }, (_, i) => ({ sku: `sku-${i}`, qty: i + 1 }));

/** An element reactor that reserves an item (undone by a release), failing on the given skus. */
function reserveItem(log: string[], failOn: string[] = [], haltOn: string[] = []) {
  return defineReactor('reserve-item', (r: ReactorBuilder<{ sku: string; qty: number; factor: number }>) => {
    const sku = r.input('sku', { type: 'string' });
    const qty = r.input('qty', { type: 'number' });
    const factor = r.input('factor', { type: 'number' });
    return r.step(
      'reserve',
      {
        run: ({ sku: s, qty: q, factor: f }: { sku: string; qty: number; factor: number }) => {
          log.push(`run:${s}`);
          if (haltOn.includes(s)) return halt(`stop at ${s}`);
          return failOn.includes(s) ? failure(new Error(`no stock for ${s}`)) : success(q * f);
        },
        undo: (_value: number, { sku: s }: { sku: string; qty: number; factor: number }) => {
          log.push(`undo:${s}`);
        },
      },
      { sku, qty, factor },
    );
  });
}

function importer(opts: {
  fanOut?: number;
  perJob?: number;
  atomic?: boolean;
  failLater?: boolean;
  collect?: boolean;
  concurrency?: number;
}) {
  return defineReactor(
    opts.fanOut ? 'import-fan-out' : 'import-inline',
    (r: ReactorBuilder<{ items: Item[]; factor: number }>) => {
      const list = r.input('items', { type: 'array' });
      const factor = r.input('factor', { type: 'number' });
      const mapped = r.map('reserve-all', {
        source: list,
        element: 'reserve-item',
        inputs: (item) => ({ sku: item.path('sku'), qty: item.path('qty'), factor }),
        atomic: opts.atomic,
        concurrency: opts.concurrency,
        fanOut: opts.fanOut ? { batchSize: opts.fanOut, elementsPerJob: opts.perJob ?? 1 } : undefined,
        collect: opts.collect
          ? async (results: MapResults<number>) => (await results.values()).reduce((a, b) => a + b, 0)
          : undefined,
      });
      if (opts.failLater) r.step('after', () => failure('later step broke'), {}, { waitFor: [mapped] });
      return mapped;
    },
  );
}

async function values(value: unknown): Promise<unknown> {
  return typeof (value as MapResults<unknown>)?.values === 'function' ? (value as MapResults<unknown>).values() : value;
}

describe.each([
  ['inline', undefined, undefined],
  ['fan-out', 5, undefined],
  ['fan-out, 3 elements per job', 6, 3],
] as const)('map (%s)', (_mode, fanOut, perJob) => {
  it('maps every element and gives the values in index order', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem(log));
    const started = await engine.run(importer({ fanOut, perJob }), { items, factor: 2 });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect(await values(outcome.value)).toEqual(items.map((i) => i.qty * 2));
    const results = outcome.value as MapResults<number>;
    expect(results.count).toBe(12);
    expect(await results.at(-1)).toEqual({ index: 11, status: 'completed', value: 24 });
    const view = await engine.get(outcome.runId);
    expect(view?.maps['reserve-all']).toMatchObject({ total: 12, succeeded: 12, failed: 0, done: true });
  });

  it('applies collect the same way', async () => {
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem([]));
    const started = await engine.run(importer({ fanOut, perJob, collect: true }), { items, factor: 3 });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status === 'completed' && outcome.value).toBe(3 * items.reduce((s, i) => s + i.qty, 0));
  });

  it('atomic: the first failure fails the map and every completed element is undone', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem(log, ['sku-3']));
    const started = await engine.run(importer({ fanOut, perJob }), { items, factor: 1 });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.errorMessage).toBe('no stock for sku-3');
    // As the reference: the failure names the map step; the element's step and index are its cause.
    expect(outcome.failure).toMatchObject({
      stepName: 'reserve-all',
      cause: { reactorName: 'reserve-item', stepName: 'reserve', elementIndex: 3, exceptionClass: 'Error' },
    });
    expect(outcome.failure.message).toContain("map 'reserve-all' element 3: Reactor 'reserve-item' step 'reserve'");
    const ran = log.filter((l) => l.startsWith('run:')).map((l) => l.slice(4));
    const undone = log.filter((l) => l.startsWith('undo:')).map((l) => l.slice(5));
    // Every element that completed was undone, highest index first; the failed one was not.
    const completed = ran.filter((s) => s !== 'sku-3');
    expect(undone).toEqual([...completed].sort((a, b) => Number(b.slice(4)) - Number(a.slice(4))));
    if (!fanOut) expect(ran).toEqual(['sku-0', 'sku-1', 'sku-2', 'sku-3']);
  });

  it('non-atomic: every element runs and the value holds each outcome', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem(log, ['sku-3', 'sku-7']));
    const started = await engine.run(importer({ fanOut, perJob, atomic: false }), { items, factor: 1 });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    const results = outcome.value as MapResults<number>;
    const failures: number[] = [];
    for await (const f of results.failures()) failures.push(f.index);
    expect(failures).toEqual([3, 7]);
    expect((await results.values()).length).toBe(10);
    expect(log.filter((l) => l.startsWith('undo:'))).toEqual([]);
  });

  it('a later step failing undoes every completed element, highest index first', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem(log));
    const started = await engine.run(importer({ fanOut, perJob, failLater: true }), { items, factor: 1 });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status).toBe('failed');
    const undone = log.filter((l) => l.startsWith('undo:'));
    expect(undone.length).toBe(12);
    if (!fanOut) expect(undone).toEqual(items.map((i) => `undo:${i.sku}`).reverse());
  });

  it('undo(runId) of a completed run undoes every element', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem(log));
    const started = await engine.run(importer({ fanOut, perJob }), { items, factor: 1 });
    const done = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    log.length = 0;
    // In every mode undo resolves cancelled: it waits for a fan-out map's element rollback jobs.
    const final = await engine.undo(done.runId, { timeoutMs: 10_000 });
    await dispatcher.idle();
    expect(final.status).toBe('cancelled');
    expect(log.length).toBe(12);
    expect(log.every((l) => l.startsWith('undo:'))).toBe(true);
  });

  it('an element halt halts the run', async () => {
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem([], [], ['sku-2']));
    const started = await engine.run(importer({ fanOut, perJob }), { items, factor: 1 });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome).toMatchObject({ status: 'halted', reason: 'stop at sku-2' });
  });
});

describe('map: back-pressure and sources', () => {
  it('fan-out never has more than batchSize elements in flight', async () => {
    const { engine, dispatcher } = createHarness();
    let inFlight = 0;
    let peak = 0;
    engine.register(
      defineReactor('slow-element', (r: ReactorBuilder<{ n: number }>) =>
        r.step(
          'work',
          async ({ n }: { n: number }) => {
            inFlight++;
            peak = Math.max(peak, inFlight);
            await new Promise((resolve) => setImmediate(resolve));
            inFlight--;
            return success(n);
          },
          { n: r.input('n', { type: 'number' }) },
        ),
      ),
    );
    const def = defineReactor('wide', (r: ReactorBuilder<{ ns: number[] }>) =>
      r.map('all', {
        source: r.input('ns', { type: 'array' }),
        element: 'slow-element',
        inputs: (n) => ({ n }),
        fanOut: { batchSize: 4 },
      }),
    );
    const started = await engine.run(def, { ns: Array.from({ length: 40 }, (_, i) => i) });
    const outcome = await engine.wait(started.runId, { timeoutMs: 10_000 });
    await dispatcher.idle();
    expect(outcome.status).toBe('completed');
    expect(peak).toBe(4);
  });

  it('an element that retries inside a job of several goes on in a job of its own; the others settle at once', async () => {
    const { engine, dispatcher, clock } = createHarness();
    const tries = new Map<number, number>();
    engine.register(
      defineReactor('flaky-element', (r: ReactorBuilder<{ n: number }>) =>
        r.step(
          'work',
          ({ n }: { n: number }) => {
            tries.set(n, (tries.get(n) ?? 0) + 1);
            return n === 4 && tries.get(n) === 1 ? failure(new Error('blip')) : success(n * 10);
          },
          { n: r.input('n', { type: 'number' }) },
          { retries: { maxAttempts: 2, baseDelayMs: 1_000 } },
        ),
      ),
    );
    const jobs: Array<{ index: number; count?: number }> = [];
    dispatcher.setHandler((job) => {
      if (job.kind === 'map-element') jobs.push({ index: job.index, count: job.count });
      return engine.handleJob(job);
    });
    const def = defineReactor('chunked', (r: ReactorBuilder<{ ns: number[] }>) =>
      r.map('all', {
        source: r.input('ns', { type: 'array' }),
        element: 'flaky-element',
        inputs: (n) => ({ n }),
        fanOut: { batchSize: 6, elementsPerJob: 3 },
      }),
    );
    const started = await engine.run(def, { ns: Array.from({ length: 9 }, (_, i) => i) });
    const outcome = await engine.wait(started.runId, { timeoutMs: 10_000 });
    await dispatcher.idle();

    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect(await (outcome.value as MapResults<number>).values()).toEqual(Array.from({ length: 9 }, (_, i) => i * 10));
    expect([...tries.entries()].filter(([, n]) => n > 1)).toEqual([[4, 2]]);
    // Jobs of three, and the retry of element 4 alone, after its backoff on the engine's clock.
    expect(jobs).toContainEqual({ index: 0, count: 3 });
    expect(jobs).toContainEqual({ index: 3, count: 3 });
    expect(jobs).toContainEqual({ index: 4, count: undefined });
    expect(clock.sleeps).toContain(1_000);
  });

  it('maps an async iterable of 100k items without pulling more than `concurrency` ahead', async () => {
    const { engine } = createHarness();
    let pulled = 0;
    let done = 0;
    let ahead = 0;
    async function* rows() {
      for (let i = 0; i < 100_000; i++) {
        pulled++;
        ahead = Math.max(ahead, pulled - done);
        yield { id: i, payload: 'x'.repeat(100) };
      }
    }
    engine.register(
      defineReactor('row', (r: ReactorBuilder<{ id: number }>) =>
        r.step('count', ({ id }: { id: number }) => (done++, success(id % 2)), {
          id: r.input('id', { type: 'number' }),
        }),
      ),
    );
    const def = defineReactor('import-rows', (r: ReactorBuilder<object>) =>
      r.map('rows', {
        source: () => rows(),
        element: 'row',
        inputs: (row) => ({ id: row.path('id') }),
        concurrency: 8,
        collect: async (results: MapResults<number>) => {
          let odd = 0;
          for await (const v of results.successes()) odd += v;
          return odd;
        },
      }),
    );
    const outcome = await engine.run(def, {});
    expect(outcome.status === 'completed' && outcome.value).toBe(50_000);
    expect(pulled).toBe(100_000);
    expect(ahead).toBeLessThanOrEqual(9);
  }, 60_000);

  it('an inline element builder is a reactor of its own, and undoAll receives completed results once', async () => {
    const { engine } = createHarness();
    const released: number[][] = [];
    const def = defineReactor('bulk', (r: ReactorBuilder<{ ns: number[] }>) => {
      const mapped = r.map('square', {
        source: r.input('ns', { type: 'array' }),
        element: (e: ReactorBuilder<{ n: number }>) =>
          e.step('sq', ({ n }: { n: number }) => success(n * n), { n: e.input('n', { type: 'number' }) }),
        inputs: (n) => ({ n }),
        undoAll: async (completed) => {
          const got: number[] = [];
          for await (const c of completed) got.push(c.value as number);
          released.push(got);
        },
      });
      r.step('boom', () => failure('x'), {}, { waitFor: [mapped] });
    });
    const outcome = await engine.run(def, { ns: [1, 2, 3] });
    expect(outcome.status).toBe('failed');
    expect(released).toEqual([[1, 4, 9]]);
    expect(engine.reactorNames()).toContain('bulk::square');
  });
});

describe('map: fan-out elements in workers', () => {
  it('retries an element by re-enqueueing its job with the backoff delay', async () => {
    const { engine, dispatcher, recorder } = createHarness();
    const calls = new Map<number, number>();
    engine.register(
      defineReactor('flaky-element', (r: ReactorBuilder<{ n: number }>) =>
        r.step(
          'try',
          ({ n }: { n: number }) => {
            const c = (calls.get(n) ?? 0) + 1;
            calls.set(n, c);
            return n === 2 && c < 3 ? failure('busy') : success(n * 10);
          },
          { n: r.input('n', { type: 'number' }) },
          { retries: { maxAttempts: 3, baseDelayMs: 50 } },
        ),
      ),
    );
    const def = defineReactor('retrying', (r: ReactorBuilder<{ ns: number[] }>) =>
      r.map('all', {
        source: r.input('ns', { type: 'array' }),
        element: 'flaky-element',
        inputs: (n) => ({ n }),
        fanOut: { batchSize: 2 },
      }),
    );
    const started = await engine.run(def, { ns: [0, 1, 2, 3] });
    const outcome = await engine.wait(started.runId, { timeoutMs: 10_000 });
    await dispatcher.idle();
    expect(outcome.status === 'completed' && (await (outcome.value as MapResults<number>).values())).toEqual([
      0, 10, 20, 30,
    ]);
    expect(calls.get(2)).toBe(3);
    expect(recorder.sequence(['step.retry'])).toEqual(['step.retry:try', 'step.retry:try']);
  });

  it('fails an element whose inputs do not validate, with the field named', async () => {
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem([]));
    const started = await engine.run(importer({ fanOut: 3, atomic: false }), {
      items: [{ sku: 'a', qty: 1 }, { sku: 7, qty: 2 } as never],
      factor: 1,
    });
    const outcome = await engine.wait(started.runId, { timeoutMs: 10_000 });
    await dispatcher.idle();
    if (outcome.status !== 'completed') throw new Error(`expected completed, got ${outcome.status}`);
    const failed = await (outcome.value as MapResults<number>).at(1);
    expect(failed).toMatchObject({
      status: 'failed',
      failure: { code: 'INPUT_VALIDATION', fieldErrors: { sku: ['must be a string'] } },
    });
  });
});

describe('map: recovery', () => {
  it('the map sweeper re-dispatches lost elements and resumes an owner whose signal was lost', async () => {
    const jobs: ReactorJob[] = [];
    // A dispatcher that only records: every job is "lost" unless the test delivers it.
    const { engine, clock } = createHarness({ dispatcher: { dispatch: async (job) => void jobs.push(job) } });
    const log: string[] = [];
    engine.register(reserveItem(log));
    const started = await engine.run(importer({ fanOut: 3 }), { items: items.slice(0, 5), factor: 1 });
    expect(started.status).toBe('dispatched');
    expect(jobs.map((j) => (j as MapElementJob).index)).toEqual([0, 1, 2]);

    // The worker holding the first throw died: nothing ran. The sweeper finds the lost indices.
    jobs.length = 0;
    clock.advance(120_000);
    // The owner is parked on an open map: the run sweeper leaves it to the map sweeper.
    expect(await engine.recoverStalled({ graceMs: 0 })).toBe(0);
    expect(await engine.recoverMaps({ graceMs: 0 })).toBe(3); // the jobs it added: one per lost element
    expect(jobs.map((j) => (j as MapElementJob).index).sort()).toEqual([0, 1, 2]);

    // Deliver element jobs (each settle dispatches the next index) but lose the owner's resume.
    while (jobs.some((j) => j.kind === 'map-element')) {
      const next = jobs.splice(
        jobs.findIndex((j) => j.kind === 'map-element'),
        1,
      )[0];
      await engine.handleJob(next);
    }
    expect(jobs).toEqual([{ kind: 'resume', runId: started.runId, reactorName: 'import-fan-out' }]);
    jobs.length = 0;
    expect((await engine.get(started.runId))?.status).toBe('running');

    clock.advance(120_000);
    expect(await engine.recoverMaps({ graceMs: 60_000 })).toBe(1);
    expect(jobs).toEqual([{ kind: 'resume', runId: started.runId, reactorName: 'import-fan-out' }]);
    await engine.handleJob(jobs[0]);
    const done = await engine.get(started.runId);
    expect(done?.status).toBe('completed');
    expect(await (done?.value as MapResults<number>).values()).toEqual([1, 2, 3, 4, 5]);
    expect(log.filter((l) => l.startsWith('run:')).sort()).toEqual([
      'run:sku-0',
      'run:sku-1',
      'run:sku-2',
      'run:sku-3',
      'run:sku-4',
    ]);
  });
});

describe('map: rollback edge cases', () => {
  it('a throwing collect fails the map and undoes every completed element', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    engine.register(reserveItem(log));
    const def = defineReactor('collect-throws', (r: ReactorBuilder<{ items: Item[] }>) =>
      r.map('all', {
        source: r.input('items', { type: 'array' }),
        element: 'reserve-item',
        inputs: (item) => ({ sku: item.path('sku'), qty: item.path('qty'), factor: r.value(1) }),
        collect: () => {
          throw new RangeError('cannot summarize');
        },
      }),
    );
    const outcome = await engine.run(def, { items: items.slice(0, 3) });
    expect(outcome.status === 'failed' && outcome.failure).toMatchObject({
      stepName: 'all',
      exceptionClass: 'RangeError',
      errorMessage: 'cannot summarize',
    });
    expect(log.filter((l) => l.startsWith('undo:'))).toEqual(['undo:sku-2', 'undo:sku-1', 'undo:sku-0']);
  });

  /** Run a fan-out import to completion by delivering jobs by hand; returns the harness and run id. */
  async function completedFanOut(count: number) {
    const jobs: ReactorJob[] = [];
    const harness = createHarness({ dispatcher: { dispatch: async (job) => void jobs.push(job) } });
    const log: string[] = [];
    harness.engine.register(reserveItem(log));
    const started = await harness.engine.run(importer({ fanOut: 2 }), { items: items.slice(0, count), factor: 1 });
    const deliver = async (filter: (j: ReactorJob) => boolean = () => true) => {
      for (let j = jobs.findIndex(filter); j >= 0; j = jobs.findIndex(filter))
        await harness.engine.handleJob(jobs.splice(j, 1)[0]);
    };
    await deliver();
    expect((await harness.engine.get(started.runId))?.status).toBe('completed');
    log.length = 0;
    return { ...harness, jobs, log, deliver, runId: started.runId };
  }

  it('an element whose state expired is reported contextUnavailable; the rest are undone', async () => {
    const { engine, maps, log, deliver, runId } = await completedFanOut(3);
    const real = maps.elementState.bind(maps);
    jest
      .spyOn(maps, 'elementState')
      .mockImplementation(async (mapId, index) => (index === 1 ? undefined : real(mapId, index)));
    await engine.undo(runId, { wait: false });
    await deliver();
    const view = await engine.get(runId);
    expect(view?.status).toBe('cancelled');
    expect(log).toEqual(['undo:sku-2', 'undo:sku-0']);
    expect(view?.cancellation?.rollbackFailures).toEqual([
      expect.objectContaining({ reason: 'contextUnavailable', mapStep: 'reserve-all', elementIndex: 1, kind: 'undo' }),
    ]);
  });

  it('an element still running when the map rolls back is reported elementInFlight after bounded waits', async () => {
    const { engine, locks, log, deliver, jobs, runId } = await completedFanOut(2);
    const mapId = `${runId}:reserve-all`;
    await locks.acquire(elementLeaseKey(mapId, 1), 10 * 60_000); // a duplicate of element 1 holds its lease
    await engine.undo(runId, { wait: false });
    await deliver();
    expect(jobs).toEqual([]);
    const view = await engine.get(runId);
    expect(view?.status).toBe('cancelled');
    expect(log).toEqual(['undo:sku-0']);
    expect(view?.cancellation?.rollbackFailures).toEqual([
      expect.objectContaining({ reason: 'elementInFlight', mapStep: 'reserve-all', elementIndex: 1 }),
    ]);
  });

  it('the map sweeper re-dispatches a lost element rollback job', async () => {
    const { engine, log, deliver, jobs, runId, clock } = await completedFanOut(3);
    await engine.undo(runId, { wait: false });
    const lost = jobs.splice(
      jobs.findIndex((j) => j.kind === 'map-rollback' && j.index === 2),
      1,
    )[0];
    expect(lost).toBeDefined();
    await deliver();
    expect((await engine.get(runId))?.status).toBe('rolling_back');
    clock.advance(120_000);
    expect(await engine.recoverMaps({ graceMs: 0 })).toBe(1);
    expect(jobs).toEqual([lost]);
    await deliver();
    expect((await engine.get(runId))?.status).toBe('cancelled');
    expect([...log].sort()).toEqual(['undo:sku-0', 'undo:sku-1', 'undo:sku-2']);
  });
});

describe('map markers cannot be forged from user data', () => {
  it("a step result shaped like a fan-out reference stays the step's data, and reads no other run's elements", async () => {
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem([]));
    const started = await engine.run(importer({ fanOut: 5 }), { items, factor: 2 });
    const victim = await engine.wait(started.runId, { timeoutMs: 10_000 });
    await dispatcher.idle();
    expect(victim.status).toBe('completed');
    const forged = { $mapResults: mapIdOf(victim.runId, 'reserve-all'), count: 12 };
    const seen: unknown[] = [];
    const forger = defineReactor('forger', (r: ReactorBuilder<Record<string, never>>) => {
      const made = r.step('make', () => success(forged), {});
      r.step('read', ({ v }: { v: unknown }) => success(seen.push(v)), { v: made });
      return made;
    });
    const outcome = await engine.run(forger, {});
    expect(outcome.status).toBe('completed');
    expect(seen).toEqual([forged]);
    expect(outcome.status === 'completed' && outcome.value).toEqual(forged);
    expect((await engine.get(outcome.runId))?.value).toEqual(forged);
  });

  it('a step result shaped like inline map records stays data, in the step that reads it and in the view', async () => {
    const { engine } = createHarness();
    const forged = { $mapRecords: [{ status: 'completed', value: 'not an element' }] };
    const seen: unknown[] = [];
    const forger = defineReactor('forger-inline', (r: ReactorBuilder<Record<string, never>>) => {
      const made = r.step('make', () => success(forged), {});
      r.step('read', ({ v }: { v: unknown }) => success(seen.push(v)), { v: made });
      return made;
    });
    const outcome = await engine.run(forger, {});
    expect(seen).toEqual([forged]);
    expect(outcome.status === 'completed' && outcome.value).toEqual(forged);
  });

  it.each([
    ['inline', undefined],
    ['fan-out', 5],
  ] as const)(
    'a composed child that returns a map (%s) still gives the parent its results object',
    async (_m, fanOut) => {
      const { engine, dispatcher } = createHarness();
      engine.register(reserveItem([]));
      const child = importer({ fanOut });
      engine.register(child);
      const totals: number[] = [];
      const parent = defineReactor('compose-a-map', (r: ReactorBuilder<{ items: Item[] }>) => {
        const mapped = r.compose<{ items: Item[]; factor: number }, MapResults<number>>('child', child.name, {
          items: r.input('items', { type: 'array' }),
          factor: r.value(2),
        });
        r.step(
          'sum',
          async ({ results }: { results: MapResults<number> }) =>
            success(totals.push((await results.values()).reduce((a, b) => a + b, 0))),
          { results: mapped },
        );
        return mapped;
      });
      const started = await engine.run(parent, { items });
      const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
      await dispatcher.idle();
      expect(outcome.status).toBe('completed');
      expect(totals).toEqual([2 * items.reduce((s, i) => s + i.qty, 0)]);
      expect(await values(outcome.status === 'completed' ? outcome.value : undefined)).toEqual(
        items.map((i) => i.qty * 2),
      );
    },
  );
});

describe.each([
  ['inline', undefined],
  ['fan-out', 2],
] as const)('map undoAll (%s)', (_mode, fanOut) => {
  const three = items.slice(0, 3);
  function bulk(released: number[][], failLater: boolean) {
    return defineReactor(`bulk-${fanOut ?? 'inline'}`, (r: ReactorBuilder<{ items: Item[] }>) => {
      const mapped = r.map('reserve-all', {
        source: r.input('items', { type: 'array' }),
        element: 'reserve-item',
        inputs: (item) => ({ sku: item.path('sku'), qty: item.path('qty'), factor: r.value(1) }),
        fanOut: fanOut ? { batchSize: fanOut } : undefined,
        undoAll: async (completed: AsyncIterable<{ index: number; value: number }>) => {
          const got: number[] = [];
          for await (const c of completed) got.push(c.value);
          released.push(got);
        },
      });
      if (failLater) r.step('after', () => failure('later step broke'), {}, { waitFor: [mapped] });
      return mapped;
    });
  }

  it('is called once with the completed results, and the trace says undoAll with their count', async () => {
    const { engine, dispatcher } = createHarness();
    engine.register(reserveItem([]));
    const released: number[][] = [];
    const started = await engine.run(bulk(released, true), { items: three });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status).toBe('failed');
    expect(released).toEqual([[1, 2, 3]]);
    const trace = (await engine.get(outcome.runId))!.trace.filter((t) => t.type === 'undoAll');
    expect(trace).toEqual([expect.objectContaining({ type: 'undoAll', step: 'reserve-all', count: 3, ok: true })]);
  });

  it('is not called when no element completed', async () => {
    const { engine, dispatcher } = createHarness();
    engine.register(
      reserveItem(
        [],
        three.map((i) => i.sku),
      ),
    );
    const released: number[][] = [];
    const started = await engine.run(bulk(released, false), { items: three });
    const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await dispatcher.idle();
    expect(outcome.status).toBe('failed');
    expect(released).toEqual([]);
    expect((await engine.get(outcome.runId))!.trace.filter((t) => t.type === 'undoAll')).toEqual([]);
  });
});
