import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { Failure, failure, success } from '../../lib/core/results/step-outcome';
import { describeReactor, stepStates } from '../../lib/dashboard/dashboard-dag';
import { createHarness, deferred } from './harness';

describe('async units', () => {
  it('an async step runs in its own job while the run goes on; its reader waits and gets its value; never undone', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const def = defineReactor('async-basic', (r: ReactorBuilder<{ n: number }>) => {
      const n = r.input('n', { type: 'number' });
      const slow = r.asyncStep('score', ({ n: x }: { n: number }) => (log.push('run:score'), success(x * 10)), { n });
      const side = r.step(
        'side',
        { run: () => (log.push('run:side'), success('s')), undo: () => void log.push('undo:side') },
        {},
      );
      return r.step(
        'read',
        ({ score }: { score: number }) => (log.push(`read:${score}`), success(score + 1)),
        {
          score: slow,
        },
        { waitFor: [side] } as never,
      );
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 4 });
    await dispatcher.idle();
    expect(outcome).toMatchObject({ status: 'completed', value: 41 });
    expect(log.filter((l) => l === 'run:score')).toHaveLength(1);
    expect(log).toContain('run:side');
    const view = await engine.get(outcome.runId);
    expect(view?.asyncUnits.score).toMatchObject({ status: 'completed', value: 40, runId: `${outcome.runId}/score` });
    // Undo the finished run: its own step is undone, the unit is not (it is not on the undo stack).
    log.length = 0;
    await engine.undo(outcome.runId);
    expect(log).toEqual(['undo:side']);
  });

  it('a failed unit nobody reads fails nothing; it compensates once, after its last attempt', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const def = defineReactor('async-unread', (r: ReactorBuilder<{ n: number }>) => {
      r.asyncStep(
        'notify',
        {
          run: () => (log.push('run:notify'), failure(new Error('smtp down'))),
          compensate: () => void log.push('compensate:notify'),
        },
        {},
        { retries: { maxAttempts: 3, baseDelayMs: 10 } },
      );
      return r.step('main', () => success('done'), {});
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    expect(outcome).toMatchObject({ status: 'completed' });
    await dispatcher.idle();
    expect(log).toEqual(['run:notify', 'run:notify', 'run:notify', 'compensate:notify']);
    const view = await engine.get(outcome.runId);
    expect(view?.asyncUnits.notify).toMatchObject({ status: 'failed', failure: { errorMessage: 'smtp down' } });
  });

  it('a run whose only unfinished work is units nobody reads completes at once; the units run on in their jobs', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const emailGate = deferred();
    const childGate = deferred();
    const child = defineReactor('async-unread-child', (r: ReactorBuilder<{ n: number }>) =>
      r.step('work', async () => (await childGate.promise, log.push('child:done'), success('c')), {}),
    );
    engine.register(child);
    const def = defineReactor('async-fire-and-forget', (r: ReactorBuilder<{ n: number }>) => {
      const n = r.input('n', { type: 'number' });
      r.asyncStep('send-email', async () => (await emailGate.promise, log.push('email:sent'), success('sent')), {});
      r.asyncReactor('audit', child, { n });
      return r.step('record', () => (log.push('record'), success('recorded')), {});
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    // Completed at once (not `dispatched` after asyncWaitTimeoutMs), with both units still running.
    expect(outcome).toMatchObject({ status: 'completed', value: 'recorded' });
    expect(log).toEqual(['record']);
    let view = await engine.get(outcome.runId);
    expect(view?.status).toBe('completed');
    expect(view?.completed).toEqual(['record']);
    expect(view?.results).toEqual({ record: 'recorded' });
    const unfinished = expect.stringMatching(/^(pending|running)$/);
    expect(view?.asyncUnits['send-email']).toMatchObject({ runId: `${outcome.runId}/send-email`, status: unfinished });
    expect(view?.asyncUnits.audit).toMatchObject({ runId: `${outcome.runId}/audit`, status: unfinished });
    // The dashboard draws each unit as its own run goes.
    const nodes = () =>
      Object.fromEntries(stepStates(describeReactor(def).steps, view!).map((s) => [s.name, s.status]));
    expect(nodes()).toEqual({ 'send-email': 'running', audit: 'running', record: 'completed' });
    emailGate.resolve();
    childGate.resolve();
    await dispatcher.idle();
    expect(log.sort()).toEqual(['child:done', 'email:sent', 'record']);
    view = await engine.get(outcome.runId);
    // The run is as it completed; its units' own runs say how they ended.
    expect(view?.status).toBe('completed');
    expect(view?.completed).toEqual(['record']);
    expect(view?.asyncUnits['send-email']).toMatchObject({ status: 'completed', value: 'sent' });
    expect(view?.asyncUnits.audit).toMatchObject({ status: 'completed', value: 'c' });
    expect(nodes()).toEqual({ 'send-email': 'completed', audit: 'completed', record: 'completed' });
  });

  it('a unit nobody reads that fails after its run completed: the run stays completed; the unit compensates by itself', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const def = defineReactor('async-late-failure', (r: ReactorBuilder<{ n: number }>) => {
      r.asyncStep(
        'notify',
        {
          run: async () => (await gate.promise, log.push('run:notify'), failure(new Error('smtp down'))),
          compensate: () => void log.push('compensate:notify'),
        },
        {},
        { retries: { maxAttempts: 2, baseDelayMs: 10 } },
      );
      return r.step('main', { run: () => success('done'), undo: () => void log.push('undo:main') }, {});
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    expect(outcome).toMatchObject({ status: 'completed', value: 'done' });
    gate.resolve();
    await dispatcher.idle();
    expect(log).toEqual(['run:notify', 'run:notify', 'compensate:notify']);
    const view = await engine.get(outcome.runId);
    expect(view?.status).toBe('completed');
    expect(view?.asyncUnits.notify).toMatchObject({ status: 'failed', failure: { errorMessage: 'smtp down' } });
  });

  it('a step that only waits for a unit (waitFor) starts once the unit is dispatched, not when it ends', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const def = defineReactor('async-wait-for-dispatch', (r: ReactorBuilder<{ n: number }>) => {
      const unit = r.asyncStep('unit', async () => (await gate.promise, log.push('unit:done'), success(1)), {});
      return r.step('after', () => (log.push('after'), success('went on')), {}, { waitFor: [unit] });
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    expect(outcome).toMatchObject({ status: 'completed', value: 'went on' });
    expect(log).toEqual(['after']);
    gate.resolve();
    await dispatcher.idle();
    expect(log).toEqual(['after', 'unit:done']);
  });

  it('an async unit taking a lock or a one-slot semaphore its run holds is refused at dispatch: DEADLOCK, never stored or queued', async () => {
    const log: string[] = [];
    const { engine, dispatcher, storage } = createHarness();
    const byAccount = (i: Record<string, unknown>) => `account:${String(i.account)}`;
    const child = defineReactor(
      'deadlock-child',
      (r: ReactorBuilder<{ account: string }>) => r.step('work', () => (log.push('child:work'), success('c')), {}),
      { lock: { key: byAccount } },
    );
    engine.register(child);
    const first = (r: ReactorBuilder<{ account: string }>) =>
      r.step('first', { run: () => (log.push('run:first'), success(1)), undo: () => void log.push('undo:first') }, {});
    const parentOfReactor = defineReactor(
      'deadlock-parent-reactor',
      (r: ReactorBuilder<{ account: string }>) => {
        const done = first(r);
        r.asyncReactor('audit', child, { account: r.input('account', { type: 'string' }) }, { waitFor: [done] });
      },
      { lock: { key: byAccount } },
    );
    const parentOfStep = defineReactor(
      'deadlock-parent-step',
      (r: ReactorBuilder<{ account: string }>) => {
        const done = first(r);
        r.asyncStep(
          'notify',
          () => (log.push('unit:notify'), success('n')),
          { account: r.input('account', { type: 'string' }) },
          { waitFor: [done], semaphore: { key: (a) => `crm:${String(a.account)}`, limit: 1 } },
        );
      },
      { semaphore: { key: (i) => `crm:${String(i.account)}`, limit: 2 } },
    );
    engine.register(parentOfReactor);
    engine.register(parentOfStep);

    const viaReactor = await engine.run(parentOfReactor, { account: 'a1' });
    expect(viaReactor).toMatchObject({
      status: 'failed',
      failure: {
        code: 'DEADLOCK',
        stepName: 'audit',
        message: expect.stringContaining(
          `Reactor 'deadlock-parent-reactor' (run '${viaReactor.runId}'): async unit 'audit' would deadlock: it takes the lock 'account:a1' (reactor 'deadlock-child'), which the run holds (the lock of reactor 'deadlock-parent-reactor')`,
        ),
      },
    });
    const viaStep = await engine.run(parentOfStep, { account: 'a2' });
    expect(viaStep).toMatchObject({
      status: 'failed',
      failure: {
        code: 'DEADLOCK',
        stepName: 'notify',
        message: expect.stringContaining(
          "async unit 'notify' would deadlock: it takes the only slot of semaphore 'crm:a2' (reactor 'deadlock-parent-step::notify'), which the run holds (the semaphore of reactor 'deadlock-parent-step')",
        ),
      },
    });
    await dispatcher.idle();
    // Nothing of the units was stored or run; each run's own steps were rolled back.
    expect(await storage.load(`${viaReactor.runId}/audit`)).toBeUndefined();
    expect(await storage.load(`${viaStep.runId}/notify`)).toBeUndefined();
    expect(log).toEqual(['run:first', 'undo:first', 'run:first', 'undo:first']);
    // Once the run holds nothing (it failed), the same key is free for another run.
    expect(await engine.run(child, { account: 'a1' })).toMatchObject({ status: 'completed' });
  });

  it('the deadlock guard counts the lock of a composed reactor the unit is dispatched from', async () => {
    const { engine, dispatcher, storage } = createHarness();
    const shared = () => 'ledger';
    const unit = defineReactor(
      'deadlock-nested-unit',
      (r: ReactorBuilder<object>) => r.step('u', () => success(1), {}),
      {
        lock: { key: shared },
      },
    );
    const locked = defineReactor(
      'deadlock-nested-child',
      (r: ReactorBuilder<object>) => void r.asyncReactor('post', unit, {}),
      { lock: { key: shared } },
    );
    const top = defineReactor('deadlock-nested-top', (r: ReactorBuilder<object>) => r.compose('book', locked, {}));
    for (const def of [unit, locked, top]) engine.register(def);
    const outcome = await engine.run(top, {});
    await dispatcher.idle();
    expect(outcome).toMatchObject({ status: 'failed', failure: { code: 'DEADLOCK', stepName: 'book' } });
    if (outcome.status !== 'failed') return;
    expect(outcome.failure.cause).toMatchObject({
      code: 'DEADLOCK',
      stepName: 'post',
      reactorName: 'deadlock-nested-child',
    });
    expect(outcome.failure.cause?.message).toContain(
      "it takes the lock 'ledger' (reactor 'deadlock-nested-unit'), which the run holds (the lock of reactor 'deadlock-nested-child')",
    );
    expect(await storage.load(`${outcome.runId}/post`)).toBeUndefined();
  });

  it('background { after: unit } hands the run off once the unit is dispatched, not when it ends', async () => {
    const where: string[] = [];
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const def = defineReactor(
      'async-after-unit',
      (r: ReactorBuilder<{ n: number }>) => {
        const unit = r.asyncStep('unit', async () => (await gate.promise, success(1)), {});
        return r.step(
          'next',
          () => (where.push('next'), success('n')),
          {},
          {
            waitFor: [unit],
          },
        );
      },
      { background: { after: 'unit' } },
    );
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    expect(outcome.status).toBe('dispatched');
    expect(where).toEqual([]);
    // The worker runs the rest while the unit is still held: nobody reads it.
    expect(await engine.wait(outcome.runId, { timeoutMs: 60_000 })).toMatchObject({ status: 'completed', value: 'n' });
    const view = await engine.get(outcome.runId);
    expect(view?.trace.filter((e) => e.type === 'handoff').map((e) => [e.step, e.detail])).toEqual([
      ['unit', `async unit ${outcome.runId}/unit`],
      ['unit', 'after'],
    ]);
    expect(view?.asyncUnits.unit.status).toMatch(/^(pending|running)$/);
    gate.resolve();
    await dispatcher.idle();
    expect((await engine.get(outcome.runId))?.asyncUnits.unit).toMatchObject({ status: 'completed', value: 1 });
    expect(where).toEqual(['next']);
  });

  it("a reader gets the unit's Failure and decides: failing rolls back the run's own steps, not the unit", async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const def = defineReactor('async-read-failure', (r: ReactorBuilder<{ n: number }>) => {
      const first = r.step(
        'first',
        { run: () => (log.push('run:first'), success(1)), undo: () => void log.push('undo:first') },
        {},
      );
      const check = r.asyncStep('check', () => failure(new Error('fraud suspected'), { retryable: false }), {});
      return r.step(
        'decide',
        ({ result }: { result: unknown }) => {
          if (result instanceof Failure)
            return failure(new Error(`check failed: ${String((result.error as Error).message)}`));
          return success('ok');
        },
        { result: check },
        { waitFor: [first] },
      );
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    await dispatcher.idle();
    expect(outcome).toMatchObject({
      status: 'failed',
      failure: { stepName: 'decide', message: expect.stringMatching(/check failed: .*fraud suspected/) },
    });
    expect(log).toEqual(['run:first', 'undo:first']);
  });

  it('an async reactor is a run of its own; readers get its value; recovery re-attaches, never re-dispatches', async () => {
    const log: string[] = [];
    const { engine, dispatcher, storage } = createHarness();
    const gate = deferred();
    const child = defineReactor('async-child', (r: ReactorBuilder<{ sku: string }>) =>
      r.step(
        'reserve',
        async ({ sku }: { sku: string }) => (log.push(`reserve:${sku}`), await gate.promise, success(`R-${sku}`)),
        { sku: r.input('sku', { type: 'string' }) },
      ),
    );
    engine.register(child);
    const parent = defineReactor(
      'async-parent',
      (r: ReactorBuilder<{ sku: string }>) => {
        const reserved = r.asyncReactor('reserve', child, { sku: r.input('sku', { type: 'string' }) });
        return r.step('ship', ({ id }: { id: string }) => success(`shipped ${id}`), { id: reserved });
      },
      { background: { all: true } },
    );
    engine.register(parent);
    const started = await engine.start(parent, { sku: 'book' });
    // The parent parks on its unit in the worker; its resume jobs re-attach to the running child.
    await engine.recoverStalled({ graceMs: 0 });
    gate.resolve();
    const outcome = await engine.wait(started.runId, { timeoutMs: 60_000 });
    await dispatcher.idle();
    expect(outcome).toMatchObject({ status: 'completed', value: 'shipped R-book' });
    expect(log).toEqual(['reserve:book']);
    const unit = await storage.load(`${started.runId}/reserve`);
    expect(unit).toMatchObject({
      status: 'completed',
      reactorName: 'async-child',
      asyncParent: { runId: started.runId },
    });
  });

  it('a caller blocks for a unit at most asyncWaitTimeoutMs, then the run goes on in a worker', async () => {
    const { engine, dispatcher } = createHarness({ asyncWaitTimeoutMs: 5_000 });
    const gate = deferred();
    const def = defineReactor('async-caller-timeout', (r: ReactorBuilder<{ n: number }>) => {
      const slow = r.asyncStep('slow', async () => (await gate.promise, success(7)), {});
      return r.step('read', ({ v }: { v: number }) => success(v * 2), { v: slow });
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    expect(outcome.status).toBe('dispatched');
    gate.resolve();
    expect(await engine.wait(outcome.runId, { timeoutMs: 600_000 })).toMatchObject({ status: 'completed', value: 14 });
    await dispatcher.idle();
  });

  it('a worker waits for a unit at most asyncParkTimeoutMs from its dispatch: then the reading step fails', async () => {
    const { engine, dispatcher } = createHarness({ asyncParkTimeoutMs: 10_000 });
    const gate = deferred();
    const def = defineReactor(
      'async-park-timeout',
      (r: ReactorBuilder<{ n: number }>) => {
        const stuck = r.asyncStep('stuck', async () => (await gate.promise, success(1)), {});
        return r.step('read', ({ v }: { v: number }) => success(v), { v: stuck });
      },
      { background: { all: true } },
    );
    engine.register(def);
    const started = await engine.start(def, { n: 1 });
    const outcome = await engine.wait(started.runId, { timeoutMs: 600_000 });
    expect(outcome).toMatchObject({ status: 'failed', failure: { code: 'ASYNC_WAIT_TIMEOUT', stepName: 'stuck' } });
    gate.resolve();
    await dispatcher.idle();
  });

  it('an interrupt inside an async unit fails the unit (INTERRUPT_NOT_SUPPORTED): nobody could resume it', async () => {
    const { engine, dispatcher } = createHarness();
    const asking = defineReactor('async-asking', (r: ReactorBuilder<{ n: number }>) => r.interrupt<string>('ask'));
    engine.register(asking);
    const def = defineReactor('async-asks', (r: ReactorBuilder<{ n: number }>) => {
      const answer = r.asyncReactor('ask', asking, { n: r.input('n', { type: 'number' }) });
      return r.step('read', ({ a }: { a: unknown }) => success(a instanceof Failure ? 'unit failed' : 'answered'), {
        a: answer,
      });
    });
    engine.register(def);
    const outcome = await engine.run(def, { n: 1 });
    await dispatcher.idle();
    expect(outcome).toMatchObject({ status: 'completed', value: 'unit failed' });
    const view = await engine.get(outcome.runId);
    expect(view?.asyncUnits.ask).toMatchObject({ status: 'failed', failure: { code: 'INTERRUPT_NOT_SUPPORTED' } });
  });

  it('refuses at definition: undo on an async step, returning an async unit, a unit whose reactor leads back', () => {
    expect(() =>
      defineReactor('async-bad-1', (r) => r.asyncStep('x', { run: () => success(1), undo: () => undefined }, {})),
    ).toThrow(/async step 'x': undo is not allowed/);
    expect(() => defineReactor('async-bad-2', (r) => r.asyncStep('x', () => success(1), {}))).toThrow(
      /returned ref reads async unit 'x' directly/,
    );
    // A unit that waits for its own reader.
    expect(() =>
      defineReactor('async-bad-3', (r) => {
        const unit = r.asyncStep('unit', () => success(1), {}, { waitFor: ['reader'] });
        r.step('reader', ({ v }: { v: number }) => success(v), { v: unit });
      }),
    ).toThrow(/dependency cycle: (unit -> reader -> unit|reader -> unit -> reader)/);
    const { engine } = createHarness();
    engine.register(defineReactor('loop-a', (r) => void r.asyncReactor('b', 'loop-b', {})));
    engine.register(defineReactor('loop-b', (r) => void r.asyncReactor('a', 'loop-a', {})));
    expect(() => engine.validate()).toThrow(/cycle: loop-a -> loop-b -> loop-a/);
  });
});
