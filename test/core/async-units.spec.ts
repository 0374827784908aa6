import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorJob, ResumeJob } from '../../lib/core/ports/job-dispatcher.port';
import { Failure, failure, Halt, halt, success } from '../../lib/core/results/step-outcome';
import { AsyncUnitFailedError } from '../../lib/core/steps/async.step';
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

  describe('what callers see of a unit, and how its jobs and run id are marked', () => {
    /** A reactor returning nothing whose reader reads a unit that succeeds, one that fails and one that halts. */
    function threeUnits(received: Record<string, unknown>) {
      return defineReactor('async-public', (r: ReactorBuilder<{ n: number }>) => {
        const ok = r.asyncStep('ok', () => success({ a: 1 }), {});
        const bad = r.asyncStep('bad', () => failure(new Error('boom')), {}, { retries: { maxAttempts: 1 } });
        const stop = r.asyncStep('stop', () => halt('not today', { why: 'closed' }), {});
        r.step('read', (args: Record<string, unknown>) => (Object.assign(received, args), success('read')), {
          ok,
          bad,
          stop,
        });
      });
    }

    /** `results` or the value as callers must see them: the value, a Failure, a Halt; never `{ ok, ... }`. */
    function expectPublic(entries: Record<string, unknown> | undefined): void {
      expect(entries?.ok).toEqual({ a: 1 });
      const bad = entries?.bad;
      expect(bad).toBeInstanceOf(Failure);
      expect((bad as Failure).error).toBeInstanceOf(AsyncUnitFailedError);
      expect(((bad as Failure).error as AsyncUnitFailedError).failure).toMatchObject({
        code: 'STEP_FAILED',
        stepName: 'bad',
        errorMessage: 'boom',
      });
      expect(entries?.stop).toBeInstanceOf(Halt);
      expect(entries?.stop).toMatchObject({ reason: 'not today', details: { why: 'closed' } });
    }

    it("a unit's value in results and in the run's value is its value, a Failure or a Halt, as its reader gets it", async () => {
      const received: Record<string, unknown> = {};
      const { engine, dispatcher } = createHarness();
      const def = threeUnits(received);
      engine.register(def);
      const outcome = await engine.run(def, { n: 1 });
      await dispatcher.idle();
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      expectPublic(received);
      expectPublic(outcome.results);
      expectPublic(outcome.value as Record<string, unknown>);
      const view = await engine.get(outcome.runId);
      expectPublic(view?.results);
      expectPublic(view?.value as Record<string, unknown>);
      expectPublic(view?.outcome.results);
      const waited = await engine.wait(outcome.runId);
      expectPublic(waited.results);
      expectPublic((waited as { value: Record<string, unknown> }).value);
      // A value a step returned is left as it is, even with a key named like a unit.
      expect(outcome.results.read).toBe('read');
    });

    it("every job of a unit carries unit: true (its dispatch, its delayed retries, the resume of a parent that is a unit); a run's own jobs do not", async () => {
      const { engine, dispatcher } = createHarness();
      const jobs: ReactorJob[] = [];
      const dispatch = dispatcher.dispatch.bind(dispatcher);
      jest
        .spyOn(dispatcher, 'dispatch')
        .mockImplementation((job, options) => (jobs.push({ ...job }), dispatch(job, options)));
      let attempts = 0;
      const inner = defineReactor('async-marked-child', (r: ReactorBuilder<{ n: number }>) => {
        const deep = r.asyncStep(
          'deep',
          () => (++attempts < 2 ? failure(new Error('again')) : success(7)),
          {},
          {
            retries: { maxAttempts: 2, baseDelayMs: 10 },
          },
        );
        return r.step('twice', ({ v }: { v: number }) => success(v * 2), { v: deep });
      });
      engine.register(inner);
      const def = defineReactor(
        'async-marked',
        (r: ReactorBuilder<{ n: number }>) => {
          const audit = r.asyncReactor('audit', inner, { n: r.input('n', { type: 'number' }) });
          return r.step('read', ({ v }: { v: number }) => success(v + 1), { v: audit });
        },
        { background: { all: true } },
      );
      engine.register(def);
      const started = await engine.start(def, { n: 1 });
      expect(await engine.wait(started.runId, { timeoutMs: 60_000 })).toMatchObject({ status: 'completed', value: 15 });
      await dispatcher.idle();
      const runId = started.runId;
      const of = (id: string) => jobs.filter((j) => j.runId === id);
      // The unit's dispatch and the resume its own unit's end queues; the unit of the unit's dispatch and retry.
      expect(of(`${runId}/audit`).length).toBeGreaterThanOrEqual(2);
      expect(of(`${runId}/audit/deep`).length).toBeGreaterThanOrEqual(2);
      for (const job of [...of(`${runId}/audit`), ...of(`${runId}/audit/deep`)]) {
        expect(job).toMatchObject({ kind: 'resume', unit: true });
      }
      expect(of(runId).length).toBeGreaterThanOrEqual(2);
      for (const job of of(runId)) expect('unit' in job).toBe(false);
    });

    it('a unit job queued before the marker existed (no unit field) still runs the unit and resumes its parent', async () => {
      const { engine, dispatcher } = createHarness();
      const dispatch = dispatcher.dispatch.bind(dispatcher);
      const seen: ReactorJob[] = [];
      jest.spyOn(dispatcher, 'dispatch').mockImplementation((job, options) => {
        const { unit: _unit, ...old } = job as ResumeJob;
        seen.push(old);
        return dispatch(old as ReactorJob, options);
      });
      const received: Record<string, unknown> = {};
      const def = threeUnits(received);
      engine.register(def);
      const outcome = await engine.run(def, { n: 1 });
      await dispatcher.idle();
      expect(outcome.status).toBe('completed');
      expect(seen.some((j) => j.runId === `${outcome.runId}/ok`)).toBe(true);
      expectPublic(received);
      expectPublic(outcome.results);
    });

    it("a composed child's units are read the same way: by the parent's readers, in the parent's results and value", async () => {
      const { engine, dispatcher } = createHarness();
      const inner: Record<string, unknown> = {};
      const child = threeUnits(inner);
      engine.register(child);
      let outer: Record<string, unknown> | undefined;
      const all = defineReactor('async-public-compose', (r: ReactorBuilder<{ n: number }>) => {
        const composed = r.compose('child', child, { n: r.input('n', { type: 'number' }) });
        r.step('outer', ({ c }: { c: Record<string, unknown> }) => ((outer = c), success('outer')), { c: composed });
      });
      const returned = defineReactor('async-public-compose-returns', (r: ReactorBuilder<{ n: number }>) =>
        r.compose('child', child, { n: r.input('n', { type: 'number' }) }),
      );
      const path = defineReactor('async-public-compose-path', (r: ReactorBuilder<{ n: number }>) =>
        r.compose('child', child, { n: r.input('n', { type: 'number' }) }).path('bad'),
      );
      engine.register(all);
      engine.register(returned);
      engine.register(path);
      // A unit inside a composed child hands its run to a worker: wait for it.
      const outcome = await engine.wait((await engine.run(all, { n: 1 })).runId, { timeoutMs: 60_000 });
      await dispatcher.idle();
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      expectPublic(outer);
      expectPublic(outcome.results.child as Record<string, unknown>);
      expectPublic((outcome.value as Record<string, Record<string, unknown>>).child);
      const view = await engine.get(outcome.runId);
      expectPublic(view?.results.child as Record<string, unknown>);
      expectPublic((view?.value as Record<string, Record<string, unknown>>).child);
      expectPublic(view?.children.child.results);
      const direct = await engine.wait((await engine.run(returned, { n: 1 })).runId, { timeoutMs: 60_000 });
      await dispatcher.idle();
      expect(direct.status).toBe('completed');
      expectPublic((direct as { value: Record<string, unknown> }).value);
      expectPublic((await engine.get(direct.runId))?.value as Record<string, unknown>);
      // A path into the child's value that lands on a failed unit: its Failure.
      const bad = await engine.wait((await engine.run(path, { n: 1 })).runId, { timeoutMs: 60_000 });
      await dispatcher.idle();
      expectPublic({ ...inner, bad: (bad as { value: unknown }).value });
      expectPublic({ ...inner, bad: (await engine.get(bad.runId))?.value });
    });

    it('the client reaches a unit by its run id: get, wait and cancel; a cancelled unit is a Failure to its reader', async () => {
      // The parent parks (polling on the fake clock) for as long as the test needs.
      const { engine, dispatcher } = createHarness({ asyncParkTimeoutMs: 365 * 24 * 3600_000 });
      const dispatch = dispatcher.dispatch.bind(dispatcher);
      // The unit's first job is held back: the unit is stored and queued, but no process executes it.
      let held: { job: ReactorJob; options: Parameters<typeof dispatch>[1] } | undefined;
      const queued = deferred();
      jest.spyOn(dispatcher, 'dispatch').mockImplementation((job, options) => {
        if ((job as ResumeJob).unit && !held) {
          held = { job, options };
          queued.resolve();
          return Promise.resolve('held' as Awaited<ReturnType<typeof dispatch>>);
        }
        return dispatch(job, options);
      });
      let got: unknown;
      let ran = 0;
      const def = defineReactor(
        'async-cancel-unit',
        (r: ReactorBuilder<{ n: number }>) => {
          const score = r.asyncStep('score', () => (ran++, success(1)), {});
          return r.step('read', ({ v }: { v: unknown }) => ((got = v), success('read')), { v: score });
        },
        { background: { all: true } },
      );
      engine.register(def);
      const started = await engine.start(def, { n: 1 });
      await queued.promise;
      const unitRunId = `${started.runId}/score`;
      expect(held?.job).toMatchObject({ runId: unitRunId, unit: true });
      expect(await engine.get(unitRunId)).toMatchObject({
        runId: unitRunId,
        reactorName: 'async-cancel-unit::score',
        status: 'pending',
      });
      const cancelled = await engine.cancel(unitRunId, 'not needed');
      expect(cancelled).toMatchObject({ status: 'cancelled', reason: 'not needed' });
      expect(await engine.wait(unitRunId)).toMatchObject({ status: 'cancelled' });
      // Its parent was resumed by the cancel: its reader got the unit's Failure.
      const outcome = await engine.wait(started.runId, { timeoutMs: 60_000 });
      expect(outcome).toMatchObject({ status: 'completed', value: 'read' });
      expect(got).toBeInstanceOf(Failure);
      expect((got as Failure).error).toBeInstanceOf(AsyncUnitFailedError);
      expect(((got as Failure).error as AsyncUnitFailedError).failure.message).toContain('was cancelled: not needed');
      // The held job, delivered late, finds the unit finished and runs nothing.
      await dispatch(held!.job, held!.options);
      await dispatcher.idle();
      expect(ran).toBe(0);
      // A new run cannot take a unit-shaped id; a malformed one is refused everywhere.
      await expect(engine.start(def, { n: 1 }, { runId: unitRunId })).rejects.toThrow(/must not contain/);
      await expect(engine.get(`${started.runId}/`)).rejects.toThrow(/async unit's run id/);
    });
  });
});
