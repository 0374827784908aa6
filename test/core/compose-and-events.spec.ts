import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

function payment(log: string[], failAt?: string) {
  return defineReactor(
    'payment',
    (r: ReactorBuilder<{ amount: number }>) => {
      const amount = r.input('amount', { type: 'number' });
      const auth = r.step(
        'authorize',
        {
          run: ({ amount: a }: { amount: number }) => (
            log.push('run:authorize'),
            failAt === 'authorize' ? failure('no auth') : success(`auth-${a}`)
          ),
          undo: () => log.push('undo:authorize'),
        },
        { amount },
      );
      return r.step(
        'capture',
        {
          run: ({ auth: a }: { auth: string }) => (
            log.push('run:capture'),
            failAt === 'capture' ? failure(new RangeError('capture failed')) : success({ id: `cap-${a}` })
          ),
          compensate: () => log.push('compensate:capture'),
          undo: () => log.push('undo:capture'),
        },
        { auth },
      );
    },
    { maxConcurrency: 1 },
  );
}

function checkout(log: string[], failAfter = false) {
  return defineReactor(
    'checkout',
    (r: ReactorBuilder<{ total: number }>) => {
      const total = r.input('total', { type: 'number' });
      const reserve = r.step(
        'reserve',
        { run: () => (log.push('run:reserve'), success('r1')), undo: () => log.push('undo:reserve') },
        {},
      );
      const paid = r.compose<{ amount: number }, { id: string }>(
        'pay',
        'payment',
        { amount: total },
        { waitFor: [reserve] },
      );
      return r.step(
        'ship',
        {
          run: () => (log.push('run:ship'), failAfter ? failure('no courier') : success('s1')),
          compensate: () => log.push('compensate:ship'),
        },
        { paymentId: paid.path('id') } as never,
      );
    },
    { maxConcurrency: 1 },
  );
}

describe('compose', () => {
  it('runs the child as a step; its value flows and its results are reachable', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    engine.register(payment(log));
    const outcome = await engine.run(checkout(log), { total: 12 });
    expect(outcome.status === 'completed' && outcome.value).toBe('s1');
    expect(outcome.results.pay).toEqual({ id: 'cap-auth-12' });
    const view = await engine.get(outcome.runId);
    expect(view?.children.pay.results).toEqual({ authorize: 'auth-12', capture: { id: 'cap-auth-12' } });
    expect(view?.children.pay.status).toBe('completed');
  });

  it('a failing child rolls itself back, then the parent rolls back; the child failure is kept', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    engine.register(payment(log, 'capture'));
    const outcome = await engine.run(checkout(log), { total: 12 });
    expect(log).toEqual([
      'run:reserve',
      'run:authorize',
      'run:capture',
      'compensate:capture',
      'undo:authorize',
      'undo:reserve',
    ]);
    // As the reference: the failure names this reactor's compose step, with the child's step as its cause.
    expect(outcome.status === 'failed' && outcome.failure).toMatchObject({
      reactorName: 'checkout',
      stepName: 'pay',
      exceptionClass: 'RangeError',
      stepArguments: { amount: 12 },
      inputs: { total: 12 },
      cause: { reactorName: 'payment', stepName: 'capture', exceptionClass: 'RangeError', code: 'STEP_FAILED' },
    });
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.message).toMatch(/^Reactor 'checkout' step 'pay': Reactor 'payment' step 'capture' failed/);
    expect(outcome.failure.cause?.elementIndex).toBeUndefined();
  });

  it('a later parent failure undoes the child by replaying its undos', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    engine.register(payment(log));
    const outcome = await engine.run(checkout(log, true), { total: 12 });
    expect(outcome.status).toBe('failed');
    expect(log).toEqual([
      'run:reserve',
      'run:authorize',
      'run:capture',
      'run:ship',
      'compensate:ship',
      'undo:capture',
      'undo:authorize',
      'undo:reserve',
    ]);
  });

  it('undoing the parent replays the child undos too', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    engine.register(payment(log));
    const done = await engine.run(checkout(log), { total: 3 });
    log.length = 0;
    await engine.undo(done.runId);
    expect(log).toEqual(['undo:capture', 'undo:authorize', 'undo:reserve']);
  });

  it('refuses a compose of an unregistered reactor and reactors that compose each other', () => {
    const { engine } = createHarness();
    engine.register(checkout([]));
    expect(() => engine.validate()).toThrow(
      "Reactor 'checkout': compose step 'pay' names reactor 'payment', which is not registered. Registered: checkout.",
    );
    const { engine: e2 } = createHarness();
    e2.register(defineReactor('a', (r: ReactorBuilder<object>) => void r.compose('to-b', 'b', {})));
    e2.register(defineReactor('b', (r: ReactorBuilder<object>) => void r.compose('to-a', 'a', {})));
    expect(() => e2.validate()).toThrow('Reactors compose each other in a cycle: a -> b -> a.');
  });
});

describe('middleware events', () => {
  it('reports a successful run in order', async () => {
    const { engine, recorder } = createHarness();
    const def = defineReactor(
      'ok',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', () => success(1), {});
        r.step('b', () => success(2), {}, { waitFor: [a] });
      },
      { maxConcurrency: 1 },
    );
    await engine.run(def, {});
    expect(recorder.sequence()).toEqual([
      'reactor.start',
      'step.start:a',
      'step.complete:a',
      'step.start:b',
      'step.complete:b',
      'reactor.complete',
    ]);
  });

  it('reports retries, compensation and undo before the failing step and the run fail', async () => {
    const { engine, recorder } = createHarness();
    const def = defineReactor(
      'bad',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', { run: () => success(1), undo: () => undefined }, {});
        r.step(
          'b',
          {
            run: () => failure('x'),
            compensate: () => {
              throw new Error('comp broke');
            },
          },
          {},
          { waitFor: [a], retries: { maxAttempts: 2, baseDelayMs: 5 } },
        );
      },
      { maxConcurrency: 1 },
    );
    await engine.run(def, {});
    expect(recorder.sequence()).toEqual([
      'reactor.start',
      'step.start:a',
      'step.complete:a',
      'step.start:b',
      'step.retry:b',
      'compensation.start:b',
      'compensation.fail:b',
      'undo.start:a',
      'undo.complete:a',
      'step.fail:b',
      'reactor.fail',
    ]);
  });

  it('swallows middleware errors so a run is never broken by an observer', async () => {
    const errors: string[] = [];
    const { engine } = createHarness({
      middleware: [
        {
          onEvent: () => {
            throw new Error('observer bug');
          },
        },
      ],
      logger: { log: () => undefined, warn: () => undefined, error: (m) => errors.push(m) },
    });
    const def = defineReactor('robust', (r: ReactorBuilder<object>) => r.step('a', () => success(1), {}));
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('completed');
    expect(errors[0]).toMatch(/middleware .* failed during reactor.start: observer bug/);
  });
});

describe('compose: failures and redaction across levels', () => {
  it('a failure two levels down names each level once, through a chain of causes, and redacted inputs stay redacted', async () => {
    const { engine } = createHarness();
    const secret = 'tok_live_SECRET';
    const leaf = defineReactor('leaf', (r: ReactorBuilder<{ card: string }>) =>
      r.step(
        'charge',
        () => {
          throw new TypeError('card declined');
        },
        { card: r.input('card', { type: 'string' }) },
      ),
    );
    const middle = defineReactor('middle', (r: ReactorBuilder<{ card: string }>) =>
      r.compose('pay', leaf, { card: r.input('card', { type: 'string' }) }),
    );
    const top = defineReactor('top', (r: ReactorBuilder<{ card: string }>) =>
      r.compose('checkout', middle, { card: r.input('card', { type: 'string', redact: true }) }),
    );
    engine.register(leaf);
    engine.register(middle);
    const outcome = await engine.run(top, { card: secret });
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.failure).toMatchObject({
      reactorName: 'top',
      stepName: 'checkout',
      exceptionClass: 'TypeError',
      errorMessage: 'card declined',
      inputs: { card: '[REDACTED]' },
      stepArguments: { card: '[REDACTED]' },
      cause: {
        reactorName: 'middle',
        stepName: 'pay',
        cause: { reactorName: 'leaf', stepName: 'charge', exceptionClass: 'TypeError' },
      },
    });
    expect(JSON.stringify(outcome.failure)).not.toContain(secret);
  });
});
