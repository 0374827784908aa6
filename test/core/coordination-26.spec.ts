/**
 * Issue 26 on the embedded runtime with a manual clock: a run that fails in its worker without
 * executing (its lock stayed contended past `lockSnoozeMaxAttempts`) gives its ordered-lock turn
 * up at once. The clock never moves, so the poison pill never expires: the next run going on
 * proves the turn was given up. (Replays, period halts and this case with a poison pill of an hour,
 * on both runtimes: test/e2e/coordination-26.e2e.spec.ts.)
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

type Input = { account: string };

describe('ordered lock: a run that will not take its turn gives it up (embedded)', () => {
  it('a run failed for its contended lock (lockSnoozeMaxAttempts) passes its turn to the next run at once', async () => {
    const { engine, dispatcher, clock } = createHarness({ lockSnoozeMaxAttempts: 0 });
    const gate = deferred();
    const applied: string[] = [];
    const holder = defineReactor(
      'c26-core-holder',
      (r: ReactorBuilder<Input>) => r.step('hold', async () => (await gate.promise, success('held')), {}),
      { lock: { key: () => 'c26-core-lock' } },
    );
    const ordered = defineReactor(
      'c26-core-ordered',
      (r: ReactorBuilder<Input>) =>
        r.step('apply', ({ account }: Input) => (applied.push(account), success(account)), {
          account: r.input('account', { type: 'string' }),
        }),
      {
        orderedLock: { key: () => 'c26-core-ledger', poisonPillMs: 3_600_000, strict: false },
        lock: { key: () => 'c26-core-lock' },
        background: { all: true },
      },
    );
    engine.register(holder);
    engine.register(ordered);
    const held = engine.run(holder, { account: 'h' });
    const first = await engine.start(ordered, { account: 'first' });
    expect(await engine.wait(first.runId, { timeoutMs: 60_000 })).toMatchObject({
      status: 'failed',
      failure: { code: 'LOCK_CONTENDED' },
    });
    gate.resolve();
    expect(await held).toMatchObject({ status: 'completed' });
    const now = clock.now();
    const second = await engine.start(ordered, { account: 'second' });
    await dispatcher.idle();
    expect(clock.now()).toBe(now);
    expect(await engine.get(second.runId)).toMatchObject({ status: 'completed' });
    expect(applied).toEqual(['second']);
  });
});
