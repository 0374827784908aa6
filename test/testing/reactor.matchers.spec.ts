import { defineReactor, failure, InputValidationError, success, type ReactorBuilder, type RunOutcome } from '../../lib';
import { createTestEngine } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';

expect.extend(reactorMatchers);

/** reserve -> charge -> ship; `failAt` fails that step (after `flaky` retryable failures of charge). */
function checkout(options: { failAt?: string; flaky?: number } = {}) {
  let chargeFailures = options.flaky ?? 0;
  const body = (name: string, value: string) => () =>
    options.failAt === name ? failure(`${name} broke`, { retryable: false }) : success(value);
  return defineReactor('matcher-checkout', (r: ReactorBuilder<{ total: number }>) => {
    const total = r.input('total', { type: 'integer', min: 1 });
    const reserve = r.step('reserve', { run: body('reserve', 'res-1'), undo: () => undefined }, { total });
    const screen = r.step('screen', body('screen', 'low'), {}, { waitFor: [reserve] });
    const charge = r.step(
      'charge',
      {
        run: () => (chargeFailures-- > 0 ? failure('gateway timeout') : body('charge', 'ch-1')()),
        undo: () => undefined,
      },
      { total },
      { waitFor: [screen], retries: { maxAttempts: 3, baseDelayMs: 10 } },
    );
    return r.step(
      'ship',
      { run: body('ship', 'sh-1'), compensate: () => undefined, undo: () => undefined },
      { charge },
    );
  });
}

async function run(options: { failAt?: string; flaky?: number; total?: number } = {}): Promise<RunOutcome> {
  const { engine } = createTestEngine();
  return engine.run(checkout(options), { total: options.total ?? 10 });
}

/** The message a matcher gives, for asserting its wording. */
function messageOf(assertion: () => void): string {
  try {
    assertion();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the assertion passed');
}

describe('reactor matchers', () => {
  it('toHaveCompleted: passes on a completed run (and its value), fails saying where a failed one failed', async () => {
    const ok = await run();
    expect(ok).toHaveCompleted();
    expect(ok).toHaveCompleted('sh-1');
    expect(ok).toHaveCompleted(expect.stringMatching(/^sh-/));
    expect(ok).not.toHaveCompleted('sh-2');

    const failed = await run({ failAt: 'charge' });
    expect(failed).not.toHaveCompleted();
    expect(messageOf(() => expect(failed).toHaveCompleted())).toMatch(
      /expected run '.+' \(matcher-checkout\) to have completed, but it failed at step 'charge' \(STEP_FAILED\): charge broke/,
    );
    expect(messageOf(() => expect(ok).toHaveCompleted('sh-2'))).toMatch(/but it completed with "sh-1"/);
    expect(messageOf(() => expect(ok).not.toHaveCompleted())).toMatch(/not to have completed, but it did/);
  });

  it('toHaveFailedAt: the failing step by name', async () => {
    const failed = await run({ failAt: 'ship' });
    expect(failed).toHaveFailedAt('ship');
    expect(failed).not.toHaveFailedAt('charge');
    expect(messageOf(() => expect(failed).toHaveFailedAt('charge'))).toMatch(
      /to have failed at step 'charge', but it failed at step 'ship' \(STEP_FAILED\): ship broke/,
    );
    expect(messageOf(() => expect(run as never).toHaveFailedAt('x'))).toMatch(/expected a run outcome/);
    expect(messageOf(() => expect(undefined).not.toHaveFailedAt('x'))).toMatch(/expected a run outcome/);
  });

  it('toHaveRolledBack: compensations then undos newest first, steps without a callback left out', async () => {
    const shipFailed = await run({ failAt: 'ship' });
    // screen has neither undo nor compensate: walked over, not listed.
    expect(shipFailed).toHaveRolledBack(['ship', 'charge', 'reserve']);
    expect(shipFailed).not.toHaveRolledBack(['charge', 'reserve']);
    expect(messageOf(() => expect(shipFailed).toHaveRolledBack(['reserve', 'charge']))).toMatch(
      /to have rolled back \["reserve","charge"\] in that order, but its rollback was compensate ship, undo charge, undo reserve/,
    );

    const reserveFailed = await run({ failAt: 'reserve' });
    expect(reserveFailed).toHaveRolledBack([]);
    expect(await run()).toHaveRolledBack([]);
  });

  it('toHaveRolledBack works on a run undone with undo()', async () => {
    const { engine } = createTestEngine();
    const def = checkout();
    engine.register(def);
    const ok = await engine.run(def, { total: 10 });
    const undone = await engine.undo(ok.runId);
    expect(undone.status).toBe('cancelled');
    expect(undone).toHaveRolledBack(['ship', 'charge', 'reserve']);
  });

  it('toHaveRetried: counts the retries of one step from the trace', async () => {
    const flaky = await run({ flaky: 2 });
    expect(flaky).toHaveCompleted();
    expect(flaky).toHaveRetried('charge', 2);
    expect(flaky).toHaveRetried('reserve', 0);
    expect(flaky).not.toHaveRetried('charge', 1);
    expect(messageOf(() => expect(flaky).toHaveRetried('charge', 1))).toMatch(
      /expected step 'charge' of run '.+' \(matcher-checkout\) to have been retried 1 time, but it was retried 2 times \(3 attempts; it completed\)/,
    );
    expect(messageOf(() => expect(flaky).toHaveRetried('charge', -1))).toMatch(/a whole number of retries/);

    const exhausted = await run({ flaky: 5 });
    expect(exhausted).toHaveFailedAt('charge');
    expect(exhausted).toHaveRetried('charge', 2);
    expect(messageOf(() => expect(exhausted).toHaveRetried('ship', 1))).toMatch(/retried 0 times \(it never ran\)/);
  });

  it('toHaveValidationErrorOn: a field (or a path under it) of a failed run, or of a thrown InputValidationError', async () => {
    const invalid = await run({ total: 0 });
    expect(invalid).toHaveValidationErrorOn('total');
    expect(invalid).toHaveValidationErrorOn('total', /1/);
    expect(invalid).not.toHaveValidationErrorOn('total', 'no such message');
    expect(invalid).not.toHaveValidationErrorOn('card');
    expect(messageOf(() => expect(invalid).toHaveValidationErrorOn('card'))).toMatch(
      /to have a validation error on 'card', but its field errors are \{"total":/,
    );
    expect(messageOf(() => expect(invalid).toHaveCompleted())).toMatch(/before any step \(INPUT_VALIDATION\)/);

    const ok = await run();
    expect(messageOf(() => expect(ok).toHaveValidationErrorOn('total'))).toMatch(
      /but it has no field errors \(it completed\)/,
    );

    const thrown = new InputValidationError('payload invalid', { 'decision.approver': ['must be a string'] }, 'x');
    await expect(Promise.reject(thrown)).rejects.toHaveValidationErrorOn('decision');
    await expect(Promise.reject(thrown)).rejects.toHaveValidationErrorOn('decision.approver', 'string');
    await expect(Promise.reject(thrown)).rejects.not.toHaveValidationErrorOn('decision.approved');
  });

  it('accept the RunView client.get returns', async () => {
    const { engine } = createTestEngine();
    const def = checkout({ failAt: 'ship' });
    engine.register(def);
    const failed = await engine.run(def, { total: 10 });
    const view = await engine.get(failed.runId);
    expect(view).toHaveFailedAt('ship');
    expect(view).toHaveRolledBack(['ship', 'charge', 'reserve']);
  });
});

describe('toHaveRollbackFailure', () => {
  /** reserve -> ship; ship fails; reserve's undo and ship's compensate fail as told. */
  function saga(options: { undo?: 'throw' | 'failure'; compensate?: 'throw'; shipFails?: boolean } = {}) {
    return defineReactor('rollback-failures', (r: ReactorBuilder<object>) => {
      const reserve = r.step(
        'reserve',
        {
          run: () => success('res-1'),
          undo: () => {
            if (options.undo === 'throw') throw new Error('warehouse down');
            if (options.undo === 'failure') return failure('warehouse refused');
            return undefined;
          },
        },
        {},
      );
      return r.step(
        'ship',
        {
          run: () => (options.shipFails === false ? success('sh-1') : failure('no courier', { retryable: false })),
          compensate: () => {
            if (options.compensate === 'throw') throw new Error('label printer jammed');
          },
        },
        { reserve },
      );
    });
  }

  it('passes on a failed run whose undo threw, narrowed by kind, reason and message', async () => {
    const { engine } = createTestEngine();
    const outcome = await engine.run(saga({ undo: 'throw' }), {});
    expect(outcome).toHaveFailedAt('ship');
    expect(outcome).toHaveRollbackFailure('reserve');
    expect(outcome).toHaveRollbackFailure('reserve', { kind: 'undo', reason: 'raised' });
    expect(outcome).toHaveRollbackFailure('reserve', { message: 'warehouse down' });
    expect(outcome).toHaveRollbackFailure('reserve', { message: /warehouse\s+down/ });
    expect(outcome).not.toHaveRollbackFailure('ship');
    expect(outcome).not.toHaveRollbackFailure('reserve', { reason: 'returnedFailure' });
    expect(outcome).not.toHaveRollbackFailure('reserve', { kind: 'compensate' });
    expect(messageOf(() => expect(outcome).toHaveRollbackFailure('reserve', { reason: 'returnedFailure' }))).toMatch(
      /to have a rollback failure of step 'reserve' matching \{ reason: "returnedFailure" \}, but its rollback failures are \[\{"step":"reserve","kind":"undo","reason":"raised"/,
    );
    expect(messageOf(() => expect(outcome).not.toHaveRollbackFailure('reserve'))).toMatch(
      /not to have a rollback failure of step 'reserve', but it has: \[\{"step":"reserve"/,
    );
  });

  it('tells a returned failure from a throw, and a failed compensate from a failed undo', async () => {
    const { engine } = createTestEngine();
    const returned = await engine.run(saga({ undo: 'failure', compensate: 'throw' }), {});
    expect(returned).toHaveRollbackFailure('reserve', { kind: 'undo', reason: 'returnedFailure', message: 'refused' });
    expect(returned).toHaveRollbackFailure('ship', { kind: 'compensate', reason: 'raised', message: 'jammed' });
  });

  it('fails on a clean rollback and on a completed run, saying so', async () => {
    const { engine } = createTestEngine();
    const clean = await engine.run(saga(), {});
    expect(clean).not.toHaveRollbackFailure('reserve');
    expect(messageOf(() => expect(clean).toHaveRollbackFailure('reserve'))).toMatch(
      /but its rollback has no failures \(it failed at step 'ship' \(STEP_FAILED\): no courier\)/,
    );
    const completed = await engine.run(saga({ shipFails: false }), {});
    expect(completed).not.toHaveRollbackFailure('reserve');
  });

  it('reads an undone run (client.undo) too, and a RunView', async () => {
    const { engine } = createTestEngine();
    const def = saga({ undo: 'throw', shipFails: false });
    engine.register(def);
    const done = await engine.run(def, {});
    expect(done).toHaveCompleted();
    const undone = await engine.undo(done.runId);
    expect(undone.status).toBe('cancelled');
    expect(undone).toHaveRollbackFailure('reserve', { kind: 'undo', reason: 'raised' });
    expect(await engine.get(done.runId)).toHaveRollbackFailure('reserve', { message: 'warehouse down' });
  });

  it('names the map element whose undo failed', async () => {
    const { engine } = createTestEngine();
    const element = defineReactor('rollback-line', (r: ReactorBuilder<{ n: number }>) =>
      r.step(
        'add',
        {
          run: ({ n }: { n: number }) => success(n),
          undo: (n: number) => {
            if (n === 2) throw new Error(`line ${n} stuck`);
          },
        },
        { n: r.input('n', { type: 'integer' }) },
      ),
    );
    const owner = defineReactor('rollback-lines', (r: ReactorBuilder<object>) => {
      const lines = r.map('lines', { source: r.value([1, 2, 3]), element, inputs: (n) => ({ n }) });
      return r.step('after', () => failure('after broke', { retryable: false }), {}, { waitFor: [lines] });
    });
    engine.register(element);
    engine.register(owner);
    const outcome = await engine.run(owner, {});
    expect(outcome).toHaveFailedAt('after');
    expect(outcome).toHaveRollbackFailure('add', { mapStep: 'lines', elementIndex: 1, message: 'line 2 stuck' });
    expect(outcome).not.toHaveRollbackFailure('add', { elementIndex: 0 });
  });

  it('refuses a second argument it does not know', async () => {
    const { engine } = createTestEngine();
    const outcome = await engine.run(saga({ undo: 'throw' }), {});
    expect(() => expect(outcome).toHaveRollbackFailure('reserve', { key: 'x' } as never)).toThrow(
      /only kind, reason, message, mapStep, elementIndex, reactorName in its second argument, not key/,
    );
  });
});
