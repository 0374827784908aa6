import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorOptions } from '../../lib/core/definition/definition';
import { CoordinationContendedError } from '../../lib/core/errors';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

type Input = { account: string; fail?: boolean };

/** A reactor whose one step waits on `gate` (when given; account `b` never waits) and fails when asked. */
function reactor(name: string, options: ReactorOptions, gate?: Promise<void>) {
  return defineReactor(
    name,
    (r: ReactorBuilder<Input>) =>
      r.step(
        'work',
        async ({ account, fail }: Input) => {
          if (account !== 'b') await gate;
          return fail ? failure(new Error('boom'), { retryable: false }) : success(`done ${account}`);
        },
        {
          account: r.input('account', { type: 'string' }),
          fail: r.input('fail', { type: 'boolean', optional: true }),
        },
      ),
    options,
  );
}

const byAccount = (i: Record<string, unknown>) => `account:${String(i.account)}`;

describe('coordination (embedded runtime)', () => {
  it('a lock: a second run on the key is refused to the caller (LOCK_CONTENDED, retryAfterMs) and stores nothing', async () => {
    const { engine, storage } = createHarness();
    const gate = deferred();
    const def = reactor('coord-lock', { lock: { key: byAccount } }, gate.promise);
    engine.register(def);
    const first = engine.run(def, { account: 'a' });
    const error = await engine.run(def, { account: 'a' }, { runId: 'second' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CoordinationContendedError);
    expect(error).toMatchObject({ code: 'LOCK_CONTENDED', key: 'account:a', retryable: true });
    expect((error as CoordinationContendedError).retryAfterMs).toBeGreaterThan(0);
    await expect(storage.load('second')).resolves.toBeUndefined();
    // Another key is free; the first run gives the lock back when it ends.
    expect(await engine.run(def, { account: 'b' })).toMatchObject({ status: 'completed' });
    gate.resolve();
    expect(await first).toMatchObject({ status: 'completed' });
    expect(await engine.run(def, { account: 'a' })).toMatchObject({ status: 'completed' });
  });

  it('lock.waitMs: a caller waits for the lock that long before it is refused', async () => {
    const { engine } = createHarness();
    const gate = deferred();
    const def = reactor('coord-lock-wait', { lock: { key: byAccount, waitMs: 10_000 } }, gate.promise);
    engine.register(def);
    const first = engine.run(def, { account: 'a' });
    const second = engine.run(def, { account: 'a' });
    gate.resolve();
    expect(await first).toMatchObject({ status: 'completed' });
    expect(await second).toMatchObject({ status: 'completed' });
  });

  it('a run parked on an async unit keeps its lock; it gives it back when it ends', async () => {
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const def = defineReactor(
      'coord-park',
      (r: ReactorBuilder<Input>) => {
        const slow = r.asyncStep('slow', async () => (await gate.promise, success(1)), {});
        return r.step('read', ({ v }: { v: number }) => success(v), { v: slow });
      },
      { lock: { key: () => 'parked' }, background: { all: true } },
    );
    const other = reactor('coord-park-other', { lock: { key: () => 'parked' } });
    engine.register(def);
    engine.register(other);
    const parked = await engine.start(def, { account: 'a' });
    while ((await engine.get(parked.runId))?.asyncUnits.slow === undefined) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    await expect(engine.run(other, { account: 'b' })).rejects.toMatchObject({ code: 'LOCK_CONTENDED' });
    gate.resolve();
    await dispatcher.idle();
    expect(await engine.wait(parked.runId)).toMatchObject({ status: 'completed', value: 1 });
    expect(await engine.run(other, { account: 'b' })).toMatchObject({ status: 'completed' });
  });

  it("a composed child's own lock is held by the run: re-entrant with the parent's, contended by another run", async () => {
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const child = reactor('coord-child', { lock: { key: () => 'shared' } }, gate.promise);
    engine.register(child);
    const parent = defineReactor(
      'coord-parent',
      (r: ReactorBuilder<Input>) => r.compose('pay', child, { account: r.input('account', { type: 'string' }) }),
      { lock: { key: () => 'shared' } },
    );
    engine.register(parent);
    // Same key in parent and child: one run, no deadlock.
    expect(await engine.run(parent, { account: 'b' })).toMatchObject({ status: 'completed', value: 'done b' });
    // Another run holds the child's key: the parent's child waits for it (handed to a worker).
    const holder = engine.run(child, { account: 'a' });
    const other = defineReactor('coord-parent-2', (r: ReactorBuilder<Input>) =>
      r.compose('pay', child, { account: r.input('account', { type: 'string' }) }),
    );
    engine.register(other);
    const waiting = await engine.run(other, { account: 'b' });
    expect(waiting.status).toBe('dispatched');
    gate.resolve();
    expect(await holder).toMatchObject({ status: 'completed' });
    await dispatcher.idle();
    expect(await engine.wait(waiting.runId)).toMatchObject({ status: 'completed', value: 'done b' });
  });

  it('a key function that throws fails a started run for good (never stuck), and a step whose key throws fails', async () => {
    const { engine, dispatcher } = createHarness();
    const def = reactor('coord-bad-key', {
      lock: {
        key: () => {
          throw new Error('no key');
        },
      },
      background: { all: true },
    });
    engine.register(def);
    const started = await engine.start(def, { account: 'a' });
    await dispatcher.idle();
    expect(await engine.wait(started.runId)).toMatchObject({
      status: 'failed',
      failure: { code: 'CONFIGURATION_INVALID', message: expect.stringContaining('lock key function threw: no key') },
    });
    const stepKey = defineReactor('coord-bad-step-key', (r: ReactorBuilder<Input>) =>
      r.step('work', () => success(1), { account: r.input('account', { type: 'string' }) } as never, {
        lock: { key: () => 42 as never },
      }),
    );
    engine.register(stepKey);
    expect(await engine.run(stepKey, { account: 'a' })).toMatchObject({
      status: 'failed',
      failure: {
        stepName: 'work',
        message: expect.stringContaining('lock key function must return a non-empty string'),
      },
    });
  });

  it('a semaphore: at most `limit` runs at once; a slot returns when a run ends', async () => {
    const { engine } = createHarness();
    const gate = deferred();
    const def = reactor('coord-sem', { semaphore: { key: () => 'crm', limit: 2 } }, gate.promise);
    engine.register(def);
    const running = [engine.run(def, { account: 'a1' }), engine.run(def, { account: 'a2' })];
    await expect(engine.run(def, { account: 'a3' })).rejects.toMatchObject({ code: 'SEMAPHORE_FULL', key: 'crm' });
    gate.resolve();
    for (const outcome of await Promise.all(running)) expect(outcome.status).toBe('completed');
    expect(await engine.run(def, { account: 'a3' })).toMatchObject({ status: 'completed' });
  });

  it('a named rate limit: refused past the window (exact retryAfterMs), allowed in the next window', async () => {
    const { engine, clock } = createHarness({ rateLimits: { crm: { second: 2 } } });
    const def = reactor('coord-rate', { rateLimit: 'crm' });
    engine.register(def);
    clock.advance(1_000 - (clock.now() % 1_000)); // the start of a window
    clock.advance(250);
    expect((await engine.run(def, { account: 'a' })).status).toBe('completed');
    expect((await engine.run(def, { account: 'b' })).status).toBe('completed');
    const error = await engine.run(def, { account: 'c' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'RATE_LIMITED', key: 'named:crm', retryAfterMs: 750 });
    clock.advance(750);
    expect((await engine.run(def, { account: 'c' })).status).toBe('completed');
  });

  it('an unknown named rate limit fails the registration, naming it and the fix', () => {
    const { engine } = createHarness({ rateLimits: { crm: { second: 2 } } });
    expect(() => engine.register(reactor('coord-rate-unknown', { rateLimit: 'stripe' }))).toThrow(
      /uses rate limit 'stripe', which is not registered/,
    );
  });

  it('a period: once per UTC bucket; a second run halts with the key; a failed run does not mark it', async () => {
    const { engine, clock } = createHarness();
    const def = reactor('coord-period', { period: { key: byAccount, every: 'day' } });
    engine.register(def);
    clock.advance(86_400_000 - (clock.now() % 86_400_000) + 3_600_000); // 01:00 UTC of a day
    expect((await engine.run(def, { account: 'a', fail: true })).status).toBe('failed');
    expect((await engine.run(def, { account: 'a' })).status).toBe('completed');
    const again = await engine.run(def, { account: 'a' });
    expect(again).toMatchObject({ status: 'halted', reason: 'period' });
    expect((await engine.get(again.runId))?.halt?.details).toMatchObject({ key: 'account:a' });
    expect((await engine.run(def, { account: 'b' })).status).toBe('completed');
    clock.advance(86_400_000);
    expect((await engine.run(def, { account: 'a' })).status).toBe('completed');
  });

  it('in a worker, a contended run snoozes (no retry spent) and runs once the lock is free', async () => {
    const { engine, dispatcher } = createHarness({
      snoozeDelayMs: 10,
      snoozeJitterMs: 0,
      lockSnoozeMaxAttempts: 10_000,
    });
    const contended: number[] = [];
    const dispatch = dispatcher.dispatch.bind(dispatcher);
    jest.spyOn(dispatcher, 'dispatch').mockImplementation(async (job, options) => {
      if (job.contentions) contended.push(job.contentions);
      return dispatch(job, options);
    });
    const gate = deferred();
    const calls: string[] = [];
    const def = defineReactor(
      'coord-worker',
      (r: ReactorBuilder<Input>) =>
        r.step(
          'work',
          async ({ account }: Input) => {
            calls.push(account);
            if (calls.length === 1) await gate.promise;
            return success(account);
          },
          { account: r.input('account', { type: 'string' }) },
        ),
      { lock: { key: () => 'one-at-a-time' }, background: { all: true } },
    );
    engine.register(def);
    const a = await engine.start(def, { account: 'a' });
    const b = await engine.start(def, { account: 'b' });
    // b waits for the lock: its job is snoozed (counted in `contentions`), its step not attempted.
    while (contended.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['a']);
    gate.resolve();
    await dispatcher.idle();
    expect(await engine.wait(a.runId)).toMatchObject({ status: 'completed' });
    expect(await engine.wait(b.runId)).toMatchObject({ status: 'completed', attempts: { work: 1 } });
    expect(calls.sort()).toEqual(['a', 'b']);
  });

  it('in a worker, a run still contended after lockSnoozeMaxAttempts fails with the code', async () => {
    const { engine, dispatcher } = createHarness({ lockSnoozeMaxAttempts: 0 });
    const gate = deferred();
    const def = reactor('coord-give-up', { lock: { key: () => 'k' }, background: { all: true } }, gate.promise);
    engine.register(def);
    const a = await engine.start(def, { account: 'a' });
    const b = await engine.start(def, { account: 'b' });
    const failed = await engine.wait(b.runId, { timeoutMs: 60_000 });
    expect(failed).toMatchObject({ status: 'failed', failure: { code: 'LOCK_CONTENDED' } });
    gate.resolve();
    await dispatcher.idle();
    expect(await engine.wait(a.runId)).toMatchObject({ status: 'completed' });
  });

  describe('ordered lock', () => {
    function ordered(name: string, strict: boolean, log: string[], gate?: Promise<void>) {
      return defineReactor(
        name,
        (r: ReactorBuilder<Input>) =>
          r.step(
            'apply',
            async ({ account, fail }: Input) => {
              log.push(account);
              if (account === 'first') await gate;
              return fail ? failure(new Error('rejected'), { retryable: false }) : success(account);
            },
            {
              account: r.input('account', { type: 'string' }),
              fail: r.input('fail', { type: 'boolean', optional: true }),
            },
          ),
        { orderedLock: { key: () => 'ledger', strict, poisonPillMs: 60_000 }, background: { all: true } },
      );
    }

    it('runs apply strictly in start order, each waiting for its turn', async () => {
      const log: string[] = [];
      const { engine, dispatcher } = createHarness({ snoozeDelayMs: 10, snoozeJitterMs: 0 });
      const gate = deferred();
      const def = ordered('coord-ordered', true, log, gate.promise);
      engine.register(def);
      const runs = [];
      for (const account of ['first', 'second', 'third', 'fourth']) runs.push(await engine.start(def, { account }));
      while (log.length === 0) await new Promise((resolve) => setImmediate(resolve));
      gate.resolve();
      await dispatcher.idle();
      for (const run of runs) expect((await engine.wait(run.runId)).status).toBe('completed');
      expect(log).toEqual(['first', 'second', 'third', 'fourth']);
    });

    it('strict: the runs after a failed one halt (ordered_lock_chain_failed); lenient: they pass', async () => {
      for (const strict of [true, false]) {
        const log: string[] = [];
        const { engine, dispatcher } = createHarness({ snoozeDelayMs: 10, snoozeJitterMs: 0 });
        const def = ordered(`coord-ordered-${strict}`, strict, log);
        engine.register(def);
        const bad = await engine.start(def, { account: 'bad', fail: true });
        const next = await engine.start(def, { account: 'next' });
        await dispatcher.idle();
        expect((await engine.wait(bad.runId)).status).toBe('failed');
        const outcome = await engine.wait(next.runId);
        if (strict) expect(outcome).toMatchObject({ status: 'halted', reason: 'ordered_lock_chain_failed' });
        else expect(outcome).toMatchObject({ status: 'completed' });
        expect(log).toEqual(strict ? ['bad'] : ['bad', 'next']);
      }
    });

    it('a holder that stops heartbeating is skipped after the poison-pill timeout', async () => {
      const log: string[] = [];
      const { engine, dispatcher, coordination } = createHarness({ snoozeDelayMs: 5_000, snoozeJitterMs: 0 });
      const def = ordered('coord-ordered-poison', true, log);
      engine.register(def);
      // A holder took nonce 1 and died before it ever ran.
      expect(await coordination.assignOrder('ledger', 86_400_000)).toMatchObject({ nonce: 1 });
      const run = await engine.start(def, { account: 'after-the-dead' });
      await dispatcher.idle();
      expect(await engine.wait(run.runId)).toMatchObject({ status: 'completed' });
      expect(log).toEqual(['after-the-dead']);
    });
  });

  describe("a step's own lock", () => {
    function withStepLock(name: string, log: string[], gate?: Promise<void>) {
      return defineReactor(name, (r: ReactorBuilder<Input>) =>
        r.step(
          'charge',
          {
            run: async ({ account }: Input) => {
              log.push(`run:${account}`);
              if (account === 'first') await gate;
              return success(account);
            },
            undo: (_v: unknown, { account }: Input) => void log.push(`undo:${account}`),
          },
          { account: r.input('account', { type: 'string' }) },
          { lock: { key: () => 'card-processor', ttlMs: 5_000 } },
        ),
      );
    }

    it('a step whose lock is taken never starts: the run waits (its attempts unspent) and goes on once it is free', async () => {
      const log: string[] = [];
      const { engine, dispatcher } = createHarness();
      const gate = deferred();
      const def = withStepLock('coord-step-lock', log, gate.promise);
      engine.register(def);
      const first = engine.run(def, { account: 'first' });
      while (log.length === 0) await new Promise((resolve) => setImmediate(resolve));
      const second = await engine.run(def, { account: 'second' });
      expect(second.status).toBe('dispatched'); // handed to a worker to wait for the lock
      expect(log).toEqual(['run:first']);
      gate.resolve();
      expect(await first).toMatchObject({ status: 'completed' });
      await dispatcher.idle();
      expect(await engine.wait(second.runId)).toMatchObject({ status: 'completed', attempts: { charge: 1 } });
      expect(log).toEqual(['run:first', 'run:second']);
    });

    it('undo takes the step lock again; when it stays taken the undo is reported (coordinationUnavailable)', async () => {
      const log: string[] = [];
      const { engine, coordination } = createHarness();
      const def = withStepLock('coord-step-undo', log);
      engine.register(def);
      const done = await engine.run(def, { account: 'a' });
      const other = await coordination.acquireLock('card-processor', 'someone-else', 60_000);
      expect(other.acquired).toBe(true);
      const undone = await engine.undo(done.runId);
      expect(undone).toMatchObject({
        status: 'cancelled',
        rollbackFailures: [{ step: 'charge', kind: 'undo', reason: 'coordinationUnavailable' }],
      });
      expect(log).toEqual(['run:a']);
    });
  });
});
