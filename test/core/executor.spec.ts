import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepHandler } from '../../lib/core/definition/step';
import { failure, halt, skipped, success } from '../../lib/core/results/step-outcome';
import { failStep, haltStep, skipStep, succeedStep } from '../../lib/core/results/step-signal';
import { createHarness, deferred } from './harness';

type Log = string[];

/** A step that records run/compensate/undo in `log` and fails when `fail` is set. */
function tracked(
  log: Log,
  name: string,
  opts: { fail?: boolean; value?: unknown; undoThrows?: boolean } = {},
): StepHandler<object, unknown> {
  return {
    run: () => {
      log.push(`run:${name}`);
      return opts.fail ? failure(new Error(`${name} broke`)) : success(opts.value ?? name);
    },
    compensate: () => {
      log.push(`compensate:${name}`);
    },
    undo: () => {
      log.push(`undo:${name}`);
      if (opts.undoThrows) throw new Error(`undo of ${name} broke`);
    },
  };
}

describe('executor: results flow', () => {
  it('passes results along a chain and returns the returned ref', async () => {
    const { engine } = createHarness();
    const def = defineReactor('chain', (r: ReactorBuilder<{ n: number }>) => {
      const n = r.input('n', { type: 'number' });
      const doubled = r.step('double', ({ x }: { x: number }) => success(x * 2), { x: n });
      const plus = r.step('plus-one', ({ x }: { x: number }) => success({ total: x + 1 }), { x: doubled });
      return plus.path('total');
    });
    const outcome = await engine.run(def, { n: 20 });
    expect(outcome.status).toBe('completed');
    if (outcome.status === 'completed') expect(outcome.value).toBe(41);
    expect(outcome.results).toEqual({ double: 40, 'plus-one': { total: 41 } });
  });

  it('takes a step outcome returned at once, by a promise or by another thenable, and a throw before any await', async () => {
    const { engine } = createHarness();
    const thenable = (value: number) => ({
      then: (resolve: (v: unknown) => void) => resolve(success(value)),
    });
    const def = defineReactor('returns', (r: ReactorBuilder<object>) => {
      const a = r.step('at-once', () => success(1), {});
      const b = r.step('promised', async ({ x }: { x: number }) => success(x + 1), { x: a });
      return r.step('thenable', (({ x }: { x: number }) => thenable(x + 1)) as never, { x: b });
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('completed');
    if (outcome.status === 'completed') expect(outcome.value).toBe(3);

    const throws = defineReactor('throws-at-once', (r: ReactorBuilder<object>) => {
      r.step(
        'sync-throw',
        () => {
          throw new Error('broke before any await');
        },
        {},
      );
    });
    const failed = await engine.run(throws, {});
    expect(failed.status).toBe('failed');
    if (failed.status === 'failed') expect(failed.failure.errorMessage).toBe('broke before any await');
  });

  it('returns the map of all results when build returns nothing', async () => {
    const { engine } = createHarness();
    const def = defineReactor('no-return', (r: ReactorBuilder<object>) => {
      r.step('a', () => success(1), {});
      r.step('b', () => success('two'), {});
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status === 'completed' && outcome.value).toEqual({ a: 1, b: 'two' });
  });

  it('reads paths nil-safely and applies transforms, and a throwing transform is an argument error', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor(
      'paths',
      (r: ReactorBuilder<{ order: { customer?: { email: string } } }>) => {
        const order = r.input('order', { type: 'object' });
        r.step('first', tracked(log, 'first'), {});
        r.step('email', ({ email }: { email: string | undefined }) => success(email ?? 'none'), {
          email: order.path('customer.email'),
        });
        r.step(
          'boom',
          tracked(log, 'boom'),
          {},
          {
            waitFor: [
              r.step('upper', ({ e }: { e: string }) => success(e), {
                e: order.transform(() => {
                  throw new TypeError('bad transform');
                }),
              }),
            ],
          },
        );
      },
      { maxConcurrency: 1 },
    );
    const outcome = await engine.run(def, { order: {} });
    expect(outcome.results.email).toBe('none');
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.code).toBe('ARGUMENT_RESOLUTION');
    expect(outcome.failure.stepName).toBe('upper');
    expect(outcome.failure.exceptionClass).toBe('TypeError');
    expect(outcome.failure.retryable).toBe(false);
    // The step never started, so it is not compensated; completed steps are undone.
    expect(log).toEqual(['run:first', 'undo:first']);
  });
});

describe('executor: concurrency', () => {
  it('runs independent steps at the same time, bounded by maxConcurrency', async () => {
    const { engine } = createHarness();
    let inFlight = 0;
    let peak = 0;
    const gates = Array.from({ length: 5 }, () => deferred());
    const started: number[] = [];
    const def = defineReactor(
      'wide',
      (r: ReactorBuilder<object>) => {
        gates.forEach((gate, i) =>
          r.step(
            `s${i}`,
            async () => {
              inFlight++;
              peak = Math.max(peak, inFlight);
              started.push(i);
              if (started.length === 3) gates.slice(0, 3).forEach((g) => g.resolve());
              if (i >= 3) gate.resolve();
              await gate.promise;
              inFlight--;
              return success(i);
            },
            {},
          ),
        );
      },
      { maxConcurrency: 3 },
    );
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('completed');
    // The first three were in flight together (each waited for the third to start), never more.
    expect(peak).toBe(3);
    expect(started.slice(0, 3).sort()).toEqual([0, 1, 2]);
  });

  it('with maxConcurrency 1 runs level by level in declaration order, as ruby_reactor does', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor(
      'levels',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', tracked(log, 'a'), {});
        const b = r.step('b', tracked(log, 'b'), {});
        r.step('d', tracked(log, 'd'), {}, { waitFor: [b] });
        r.step('c', tracked(log, 'c'), {}, { waitFor: [a] });
      },
      { maxConcurrency: 1 },
    );
    await engine.run(def, {});
    expect(log).toEqual(['run:a', 'run:b', 'run:d', 'run:c']);
  });

  it('lets running siblings finish when a step fails, then undoes every completed step newest first', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const slow = deferred();
    const def = defineReactor('siblings', (r: ReactorBuilder<object>) => {
      const first = r.step('first', tracked(log, 'first'), {});
      r.step(
        'slow',
        {
          run: async () => {
            log.push('run:slow');
            await slow.promise;
            log.push('done:slow');
            return success('slow');
          },
          undo: () => {
            log.push('undo:slow');
          },
        },
        {},
        { waitFor: [first] },
      );
      r.step(
        'fails',
        {
          run: () => {
            log.push('run:fails');
            slow.resolve();
            return failure(new Error('nope'));
          },
          compensate: () => {
            log.push('compensate:fails');
          },
        },
        {},
        { waitFor: [first] },
      );
      r.step('never', tracked(log, 'never'), {}, { waitFor: ['fails'] });
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('failed');
    expect(log).toEqual([
      'run:first',
      'run:slow',
      'run:fails',
      'done:slow',
      'compensate:fails',
      'undo:slow',
      'undo:first',
    ]);
  });
});

describe('executor: compensation and undo', () => {
  it('compensates only the failing step and undoes completed steps in reverse completion order', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor(
      'saga',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', tracked(log, 'a'), {});
        const b = r.step('b', tracked(log, 'b'), {}, { waitFor: [a] });
        r.step('c', tracked(log, 'c', { fail: true }), {}, { waitFor: [b] });
      },
      { maxConcurrency: 1 },
    );
    const outcome = await engine.run(def, {});
    expect(log).toEqual(['run:a', 'run:b', 'run:c', 'compensate:c', 'undo:b', 'undo:a']);
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({
      code: 'STEP_FAILED',
      reactorName: 'saga',
      stepName: 'c',
      exceptionClass: 'Error',
      errorMessage: 'c broke',
      retryable: true,
      attempts: 1,
      rollbackFailures: [],
    });
    expect(outcome.failure.message).toBe("Reactor 'saga' step 'c' failed after 1 attempt: c broke");
  });

  it('never undoes skipped steps, and a failing undo does not stop the walk', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor(
      'walk',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', tracked(log, 'a'), {});
        const b = r.step('b', tracked(log, 'b', { undoThrows: true }), {}, { waitFor: [a] });
        const s = r.step(
          's',
          { run: () => skipped('kept', 'nothing to do'), undo: () => log.push('undo:s') },
          {},
          { waitFor: [b] },
        );
        r.step(
          'c',
          { run: () => failStep('deep failure'), compensate: () => failure('cannot compensate') },
          {},
          { waitFor: [s] },
        );
      },
      { maxConcurrency: 1 },
    );
    const outcome = await engine.run(def, {});
    expect(log).toEqual(['run:a', 'run:b', 'undo:b', 'undo:a']);
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.rollbackFailures).toEqual([
      { step: 'c', kind: 'compensate', reason: 'returnedFailure', message: 'cannot compensate', reactorName: 'walk' },
      { step: 'b', kind: 'undo', reason: 'raised', message: 'undo of b broke', reactorName: 'walk' },
    ]);
    expect(outcome.results.s).toBe('kept');
    expect(outcome.trace.filter((t) => t.type === 'skip').map((t) => t.step)).toEqual(['s']);
  });

  it('halts cleanly: completed work is kept and nothing is rolled back', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor(
      'halting',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', tracked(log, 'a'), {});
        const h = r.step('h', () => haltStep('out of stock', { sku: 'x' }), {}, { waitFor: [a] });
        r.step('after', tracked(log, 'after'), {}, { waitFor: [h] });
      },
      { maxConcurrency: 1 },
    );
    const outcome = await engine.run(def, {});
    expect(outcome).toMatchObject({ status: 'halted', stepName: 'h', reason: 'out of stock', details: { sku: 'x' } });
    expect(log).toEqual(['run:a']);
  });

  it('ends steps from any depth with the signal helpers', async () => {
    const { engine } = createHarness();
    const deep = (fn: () => never) => () => fn();
    const def = defineReactor('signals', (r: ReactorBuilder<object>) => {
      r.step(
        'ok',
        deep(() => succeedStep(7)),
        {},
      );
      r.step(
        'skip',
        deep(() => skipStep('s')),
        {},
      );
      r.step('halt-later', () => halt('done'), {}, { waitFor: ['ok', 'skip'] });
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('halted');
    expect(outcome.results).toEqual({ ok: 7, skip: 's' });
  });

  it('treats a non-outcome return value as a non-retryable failure and compensates the step', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor('raw', (r: ReactorBuilder<object>) => {
      r.step(
        'raw',
        { run: (() => ({ id: 1 })) as never, compensate: () => log.push('compensate:raw') },
        {},
        { retries: { maxAttempts: 3 } },
      );
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.code).toBe('UNEXPECTED_RESULT');
    expect(outcome.failure.attempts).toBe(1);
    expect(outcome.failure.errorMessage).toContain('returned a plain object');
    expect(log).toEqual(['compensate:raw']);
  });

  it('undoes a completed run on demand, newest first, and marks it cancelled', async () => {
    const { engine } = createHarness();
    const log: Log = [];
    const def = defineReactor(
      'manual',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', tracked(log, 'a'), {});
        r.step('b', tracked(log, 'b'), {}, { waitFor: [a] });
      },
      { maxConcurrency: 1 },
    );
    const done = await engine.run(def, {});
    const undone = await engine.undo(done.runId);
    expect(log).toEqual(['run:a', 'run:b', 'undo:b', 'undo:a']);
    expect(undone).toMatchObject({ status: 'cancelled', reason: 'undo', rollbackFailures: [] });
    await expect(engine.undo(done.runId)).rejects.toThrow(
      /cancelled; only completed, halted, failed or paused runs can be undone/,
    );
  });
});

describe('executor: retries', () => {
  it.each([
    ['exponential', [100, 200, 400]],
    ['linear', [100, 200, 300]],
    ['fixed', [100, 100, 100]],
  ] as const)('retries with %s backoff and counts attempts', async (backoff, delays) => {
    const { engine, clock } = createHarness();
    let calls = 0;
    const def = defineReactor('retry', (r: ReactorBuilder<object>) => {
      r.step(
        'flaky',
        () => (++calls < 4 ? failure(new Error(`try ${calls}`)) : success('ok')),
        {},
        {
          retries: { maxAttempts: 4, backoff, baseDelayMs: 100 },
        },
      );
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('completed');
    expect(clock.sleeps).toEqual(delays);
    expect(outcome.attempts).toEqual({ flaky: 4 });
    expect(outcome.trace.filter((t) => t.type === 'retry').map((t) => t.delayMs)).toEqual(delays);
  });

  it('caps delays at maxDelayMs and fails after maxAttempts', async () => {
    const { engine, clock } = createHarness();
    const def = defineReactor('exhaust', (r: ReactorBuilder<object>) => {
      r.step(
        'down',
        () => {
          throw new Error('still down');
        },
        {},
        {
          retries: { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 1500 },
        },
      );
    });
    const outcome = await engine.run(def, {});
    expect(clock.sleeps).toEqual([1000, 1500]);
    expect(outcome.status === 'failed' && outcome.failure.message).toBe(
      "Reactor 'exhaust' step 'down' failed after 3 attempts: still down",
    );
  });

  it('never retries a failure marked retryable: false, nor an error whose retryable is false', async () => {
    const { engine, clock } = createHarness();
    class Declined extends Error {
      readonly retryable = false;
    }
    const def = defineReactor('no-retry', (r: ReactorBuilder<object>) => {
      r.step('a', () => failure('card expired', { retryable: false }), {}, { retries: { maxAttempts: 5 } });
    });
    const def2 = defineReactor('no-retry-2', (r: ReactorBuilder<object>) => {
      r.step(
        'b',
        () => {
          throw new Declined('declined');
        },
        {},
        { retries: { maxAttempts: 5 } },
      );
    });
    const one = await engine.run(def, {});
    const two = await engine.run(def2, {});
    expect(one.attempts).toEqual({ a: 1 });
    expect(two.attempts).toEqual({ b: 1 });
    expect(two.status === 'failed' && two.failure).toMatchObject({ exceptionClass: 'Declined', retryable: false });
    expect(clock.sleeps).toEqual([]);
  });
});

describe('executor: durability hooks', () => {
  it('saves the run after every step, the last one with the final save', async () => {
    const { engine, saves } = createHarness();
    const def = defineReactor(
      'saves',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', () => success(1), {});
        const b = r.step('b', () => success(2), {}, { waitFor: [a] });
        r.step('c', () => success(3), {}, { waitFor: [b] });
      },
      { maxConcurrency: 1 },
    );
    await engine.run(def, {});
    // Created running (with the lease), a checkpoint per step, the last step's result in the final save.
    expect(saves).toEqual(['running:', 'running:a', 'running:a,b', 'completed:a,b,c']);
  });

  it('hands the whole run to a worker with background: { all: true } and wait() sees it finish', async () => {
    const { engine, dispatcher } = createHarness();
    const def = defineReactor(
      'bg',
      (r: ReactorBuilder<{ n: number }>) =>
        r.step('sq', ({ n }: { n: number }) => success(n * n), { n: r.input('n', { type: 'number' }) }),
      {
        background: { all: true },
      },
    );
    const outcome = await engine.run(def, { n: 9 });
    expect(outcome.status).toBe('dispatched');
    const done = await engine.wait(outcome.runId, { timeoutMs: 5000 });
    expect(done.status === 'completed' && done.value).toBe(81);
    await dispatcher.idle();
  });

  it.each([1, 8])(
    'background after: the caller runs only the hand-off step and what it depends on; a sibling waits for the worker (maxConcurrency %i)',
    async (maxConcurrency) => {
      const { engine, dispatcher } = createHarness();
      const where: string[] = [];
      let inWorker = false;
      const mark = (name: string) => () => (where.push(`${name}@${inWorker ? 'worker' : 'caller'}`), success(name));
      const def = defineReactor(
        'audit-after',
        (r: ReactorBuilder<object>) => {
          const a = r.step('load', mark('load'), {});
          r.step('sibling', mark('sibling'), {});
          const audit = r.step('audit', mark('audit'), {}, { waitFor: [a] });
          r.step('notify', mark('notify'), {}, { waitFor: [audit] });
        },
        { background: { after: 'audit' }, maxConcurrency },
      );
      const outcome = await engine.run(def, {});
      expect(outcome.status).toBe('dispatched');
      expect(where).toEqual(['load@caller', 'audit@caller']);
      inWorker = true;
      const done = await engine.wait(outcome.runId, { timeoutMs: 5000 });
      await dispatcher.idle();
      expect(done.status).toBe('completed');
      expect(where.slice(2).sort()).toEqual(['notify@worker', 'sibling@worker']);
    },
  );

  it('runs the steps after a background "after" point in the worker', async () => {
    const { engine, dispatcher } = createHarness();
    const where: string[] = [];
    const def = defineReactor(
      'after',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', () => (where.push('a'), success(1)), {});
        r.step('b', () => (where.push('b'), success(2)), {}, { waitFor: [a] });
      },
      { background: { after: 'a' } },
    );
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('dispatched');
    expect(outcome.results).toEqual({ a: 1 });
    expect(where).toEqual(['a']);
    const done = await engine.wait(outcome.runId, { timeoutMs: 5000 });
    expect(done.status).toBe('completed');
    expect(where).toEqual(['a', 'b']);
    await dispatcher.idle();
  });
});
