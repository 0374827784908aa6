import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import {
  AlreadyResumedError,
  InterruptTimedOutError,
  NotPausedError,
  PayloadValidationError,
  UnknownCorrelationIdError,
  UnknownInterruptError,
} from '../../lib/core/errors';
import { ReactorEngine } from '../../lib/core/engine/reactor-engine';
import { runLeaseKey } from '../../lib/core/model/keys';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

/** An approval flow: reserve, notify (beside the interrupt), approve (interrupt), charge. */
function approval(
  log: string[],
  options: { maxAttempts?: number; timeoutMs?: number; lazy?: boolean; onTimeout?: boolean } = {},
) {
  return defineReactor('approval', (r: ReactorBuilder<{ orderId: string; amount: number }>) => {
    const orderId = r.input('orderId', { type: 'string' });
    const amount = r.input('amount', { type: 'number' });
    const reserve = r.step(
      'reserve',
      { run: () => (log.push('run:reserve'), success('R1')), undo: () => void log.push('undo:reserve') },
      {},
    );
    r.step('notify', () => (log.push('run:notify'), success('sent')), {}, { waitFor: [reserve] });
    const decision = r.interrupt<{ approved: boolean; by: string }, { orderId: string }>('approve', {
      args: { orderId },
      waitFor: [reserve],
      correlationId: ({ args }) => `order-${args.orderId}`,
      payload: { approved: { type: 'boolean' }, by: { type: 'string', minLength: 1 } },
      maxAttempts: options.maxAttempts,
      timeoutMs: options.timeoutMs,
      timeoutStrategy: options.timeoutMs ? (options.lazy ? 'lazy' : 'active') : undefined,
      onTimeout: options.onTimeout ? () => success({ approved: false, by: 'timeout' }) : undefined,
    });
    return r.step(
      'charge',
      ({ decision: d, amount: a }: { decision: { approved: boolean; by: string }; amount: number }) => {
        log.push(`run:charge:${d.by}`);
        return d.approved ? success(`charged ${a}`) : failure(new Error('not approved'), { retryable: false });
      },
      { decision, amount },
    );
  });
}

const input = { orderId: 'o-1', amount: 42 };
const approve = { approved: true, by: 'alice' };

describe('interrupts', () => {
  it("gives its correlationId function the step's context: run, step, attempt, a signal, args, inputs and results so far", async () => {
    const seen: Record<string, unknown>[] = [];
    const { engine } = createHarness();
    const def = defineReactor('ctx-of-interrupt', (r: ReactorBuilder<{ orderId: string }>) => {
      const orderId = r.input('orderId', { type: 'string' });
      const reserve = r.step('reserve', () => success('R1'), {});
      r.interrupt<{ ok: boolean }, { orderId: string }>('approve', {
        args: { orderId },
        waitFor: [reserve],
        correlationId: (run) => {
          seen.push({ ...run, signal: run.signal });
          return `order-${run.args.orderId}`;
        },
      });
      return reserve;
    });
    const outcome = await engine.run(def, { orderId: 'o-9' });
    expect(outcome).toMatchObject({ status: 'paused', correlationId: 'order-o-9' });
    expect(seen[0]).toMatchObject({
      runId: outcome.runId,
      reactorName: 'ctx-of-interrupt',
      stepName: 'approve',
      attempt: 1,
      args: { orderId: 'o-9' },
      inputs: { orderId: 'o-9' },
      results: { reserve: 'R1' },
    });
    expect(seen[0].signal).toBeInstanceOf(AbortSignal);
    expect((seen[0].signal as AbortSignal).aborted).toBe(false);
  });

  it('pauses once nothing else can run, with the correlation id, the results so far and what it waits for', async () => {
    const log: string[] = [];
    const { engine, storage } = createHarness();
    const def = approval(log);
    engine.register(def);
    const outcome = await engine.run(def, input);
    expect(outcome).toMatchObject({
      status: 'paused',
      stepName: 'approve',
      correlationId: 'order-o-1',
      results: { reserve: 'R1', notify: 'sent' },
      waitingFor: [{ path: 'approve', correlationId: 'order-o-1' }],
    });
    // The step beside the interrupt ran before the pause.
    expect(log).toEqual(['run:reserve', 'run:notify']);
    const stored = await storage.load(outcome.runId);
    expect(stored?.status).toBe('paused');
    expect(stored?.trace.map((t) => t.type)).toContain('pause');
  });

  it('continue applies the payload: dependants get it, the run completes, the interrupt counts one attempt', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    const resumed = await engine.continue(paused.runId, 'approve', approve);
    expect(resumed).toMatchObject({ accepted: 'applied', outcome: { status: 'completed', value: 'charged 42' } });
    expect(log).toEqual(['run:reserve', 'run:notify', 'run:charge:alice']);
    const view = await engine.get(paused.runId);
    expect(view?.results.approve).toEqual(approve);
    expect(view?.attempts.approve).toBe(1);
    expect(view?.trace.filter((t) => t.type === 'resume')).toHaveLength(1);
  });

  it('20 concurrent resumes: exactly one is applied, the others are told it was already resumed', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => engine.continue(paused.runId, 'approve', { approved: true, by: `u${i}` })),
    );
    await dispatcher.idle();
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(fulfilled).toHaveLength(1);
    expect(rejected).toHaveLength(19);
    for (const r of rejected) expect(r.reason).toBeInstanceOf(AlreadyResumedError);
    const final = await engine.wait(paused.runId);
    expect(final.status).toBe('completed');
    expect(log.filter((l) => l.startsWith('run:charge'))).toHaveLength(1);
    const winner = (final.results.approve as { by: string }).by;
    expect(log).toContain(`run:charge:${winner}`);
  });

  it('an invalid payload is refused while attempts remain (the run stays paused); the last fails the run with rollback', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log, { maxAttempts: 3 });
    engine.register(def);
    const paused = await engine.run(def, input);
    for (const left of [2, 1]) {
      const error = await engine.continue(paused.runId, 'approve', { approved: 'yes' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PayloadValidationError);
      expect(error).toMatchObject({ code: 'PAYLOAD_INVALID', attemptsLeft: left, runFailed: false });
      expect((error as PayloadValidationError).fieldErrors).toHaveProperty('approved');
      expect((await engine.get(paused.runId))?.status).toBe('paused');
    }
    const last = await engine.continue(paused.runId, 'approve', { by: '' }).catch((e: unknown) => e);
    expect(last).toMatchObject({ code: 'PAYLOAD_INVALID', attemptsLeft: 0, runFailed: true });
    const failed = await engine.wait(paused.runId);
    expect(failed).toMatchObject({ status: 'failed', failure: { code: 'PAYLOAD_INVALID', stepName: 'approve' } });
    expect(log).toEqual(['run:reserve', 'run:notify', 'undo:reserve']);
  });

  it('with the default maxAttempts of 1, the first invalid payload fails the run', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    await expect(engine.continue(paused.runId, 'approve', {})).rejects.toMatchObject({ runFailed: true });
    expect((await engine.wait(paused.runId)).status).toBe('failed');
  });

  it('a resume that arrives before the run reaches the interrupt is kept and applied on arrival (no pause)', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const def = defineReactor('early', (r: ReactorBuilder<{ n: number }>) => {
      const slow = r.step('slow', async () => (await gate.promise, success('done')), {});
      const answer = r.interrupt<string>('answer', { waitFor: [slow] });
      return r.step('use', ({ a }: { a: string }) => (log.push(`use:${a}`), success(a)), { a: answer });
    });
    engine.register(def);
    const started = await engine.start(def, { n: 1 }, { runId: 'early-1' });
    const early = await engine.continue('early-1', 'answer', 'yes');
    expect(early).toMatchObject({ accepted: 'queued', runId: 'early-1' });
    gate.resolve();
    await dispatcher.idle();
    const final = await engine.wait(started.runId);
    expect(final).toMatchObject({ status: 'completed', value: 'yes' });
    expect(final.trace.map((t) => t.type)).not.toContain('pause');
  });

  it('an invalid payload before the run reaches the interrupt is refused without spending an attempt', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const gate = deferred();
    const def = defineReactor('early-invalid', (r: ReactorBuilder<{ n: number }>) => {
      const slow = r.step('slow', async () => (await gate.promise, success('done')), {});
      return r.interrupt<number>('answer', { waitFor: [slow], payload: { type: 'number' } });
    });
    engine.register(def);
    await engine.start(def, { n: 1 }, { runId: 'early-invalid-1' });
    await expect(engine.continue('early-invalid-1', 'answer', 'not a number')).rejects.toMatchObject({
      code: 'PAYLOAD_INVALID',
      attempts: 0,
    });
    gate.resolve();
    await dispatcher.idle();
    expect((await engine.get('early-invalid-1'))?.status).toBe('paused');
    expect(await engine.continue('early-invalid-1', 'answer', 7)).toMatchObject({ outcome: { status: 'completed' } });
    expect(log).toEqual([]);
  });

  it('resumes by correlation id; one that arrives before any run is kept; ifNotReached refuse says so', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    await expect(
      engine.continueByCorrelationId('approval', 'approve', 'order-nobody', approve, { ifNotReached: 'refuse' }),
    ).rejects.toBeInstanceOf(UnknownCorrelationIdError);

    const paused = await engine.run(def, input);
    const resumed = await engine.continueByCorrelationId('approval', 'approve', 'order-o-1', approve);
    expect(resumed).toMatchObject({ accepted: 'applied', outcome: { status: 'completed' } });
    expect(resumed.accepted === 'applied' && resumed.runId).toBe(paused.runId);

    const mailed = await engine.continueByCorrelationId('approval', 'approve', 'order-o-2', {
      approved: true,
      by: 'bob',
    });
    expect(mailed).toMatchObject({ accepted: 'queued', correlationId: 'order-o-2' });
    const second = await engine.run(def, { orderId: 'o-2', amount: 7 });
    expect(second).toMatchObject({ status: 'completed', value: 'charged 7' });
    expect(log).toContain('run:charge:bob');
  });

  it('by correlation id, an invalid payload counts as an attempt of the bound run; once answered, refuse says so', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log, { maxAttempts: 2 });
    engine.register(def);
    const paused = await engine.run(def, input);
    await expect(
      engine.continueByCorrelationId('approval', 'approve', 'order-o-1', { approved: 1 }),
    ).rejects.toMatchObject({ code: 'PAYLOAD_INVALID', attempts: 1, attemptsLeft: 1 });
    await engine.continueByCorrelationId('approval', 'approve', 'order-o-1', approve);
    expect((await engine.get(paused.runId))?.status).toBe('completed');
    await expect(
      engine.continueByCorrelationId('approval', 'approve', 'order-o-1', approve, { ifNotReached: 'refuse' }),
    ).rejects.toBeInstanceOf(AlreadyResumedError);
  });

  it('a late answer by correlation id to a finished run is refused, never kept for the next run with that id', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const first = await engine.run(def, input);
    await engine.cancel(first.runId, 'withdrawn');
    await expect(engine.continueByCorrelationId('approval', 'approve', 'order-o-1', approve)).rejects.toMatchObject({
      code: 'RUN_NOT_PAUSED',
    });
    // The next run with the id pauses for its own answer.
    expect(await engine.run(def, input)).toMatchObject({ status: 'paused', correlationId: 'order-o-1' });
  });

  it('an answer from a process with another shape of the reactor is refused (DEFINITION_CHANGED), nothing claimed', async () => {
    const log: string[] = [];
    const h = createHarness();
    const def = approval(log);
    h.engine.register(def);
    const paused = await h.engine.run(def, input);
    const other = new ReactorEngine({ storage: h.storage, locks: h.locks, interrupts: h.interrupts, clock: h.clock });
    other.register(
      defineReactor('approval', (r: ReactorBuilder<{ orderId: string }>) =>
        r.interrupt<unknown, { orderId: string }>('approve', {
          args: { orderId: r.input('orderId', { type: 'string' }) },
        }),
      ),
    );
    await expect(other.continue(paused.runId, 'approve', approve)).rejects.toMatchObject({
      code: 'DEFINITION_CHANGED',
    });
    expect(await h.engine.continue(paused.runId, 'approve', approve)).toMatchObject({ accepted: 'applied' });
  });

  it('a payload that cannot be written as JSON is refused without counting an attempt', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    const cyclic: Record<string, unknown> = { approved: true, by: 'x' };
    cyclic.self = cyclic;
    await expect(engine.continue(paused.runId, 'approve', cyclic)).rejects.toMatchObject({
      code: 'PAYLOAD_INVALID',
      fieldErrors: { '(payload)': [expect.stringContaining('a cycle (it holds itself')] },
    });
    expect((await engine.get(paused.runId))?.status).toBe('paused');
    expect(await engine.continue(paused.runId, 'approve', approve)).toMatchObject({ accepted: 'applied' });
  });

  it('a second live run reaching the same correlation id fails (CORRELATION_ID_TAKEN) and rolls back', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const first = await engine.run(def, input);
    const second = await engine.run(def, input);
    expect(second).toMatchObject({ status: 'failed', failure: { code: 'CORRELATION_ID_TAKEN' } });
    expect(log.filter((l) => l === 'undo:reserve')).toHaveLength(1);
    // Once the first run is finished, its id may be taken over.
    await engine.cancel(first.runId, 'superseded');
    expect((await engine.run(def, input)).status).toBe('paused');
  });

  it('a resume while the run is busy is deferred to a worker, never lost', async () => {
    const log: string[] = [];
    const { engine, locks, dispatcher } = createHarness({ snoozeDelayMs: 10, snoozeJitterMs: 0 });
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    const held = (await locks.acquire(runLeaseKey(paused.runId), 60_000))!;
    const resumed = await engine.continue(paused.runId, 'approve', approve);
    expect(resumed).toMatchObject({ accepted: 'deferred', reason: 'busy' });
    // `wait` right after a deferred resume waits for it: the stored pause is stale.
    const waiting = engine.wait(paused.runId, { timeoutMs: 600_000 });
    await locks.release(held);
    await dispatcher.idle();
    expect(await waiting).toMatchObject({ status: 'completed', value: 'charged 42' });
  });

  it('an active timeout fires with nobody calling: the run fails with INTERRUPT_TIMED_OUT and rolls back', async () => {
    const log: string[] = [];
    const { engine, dispatcher, clock } = createHarness();
    const def = approval(log, { timeoutMs: 60_000 });
    engine.register(def);
    const started = clock.now();
    const paused = await engine.run(def, input);
    expect(paused).toMatchObject({ status: 'paused', timeoutAt: started + 60_000 });
    await dispatcher.idle();
    const final = await engine.wait(paused.runId);
    expect(final).toMatchObject({ status: 'failed', failure: { code: 'INTERRUPT_TIMED_OUT' } });
    expect(log).toEqual(['run:reserve', 'run:notify', 'undo:reserve']);
    await expect(engine.continue(paused.runId, 'approve', approve)).rejects.toBeInstanceOf(NotPausedError);
  });

  it('onTimeout decides the interrupt value instead', async () => {
    const log: string[] = [];
    const { engine, dispatcher } = createHarness();
    const def = approval(log, { timeoutMs: 1_000, onTimeout: true });
    engine.register(def);
    const paused = await engine.run(def, input);
    await dispatcher.idle();
    const final = await engine.wait(paused.runId);
    expect(final).toMatchObject({ status: 'failed' });
    expect(log).toContain('run:charge:timeout');
  });

  it('a lazy timeout waits for a resume, which times the interrupt out', async () => {
    const log: string[] = [];
    const { engine, dispatcher, clock } = createHarness();
    const def = approval(log, { timeoutMs: 1_000, lazy: true });
    engine.register(def);
    const paused = await engine.run(def, input);
    await dispatcher.idle();
    expect((await engine.get(paused.runId))?.status).toBe('paused');
    clock.advance(1_001);
    await expect(engine.continue(paused.runId, 'approve', approve)).rejects.toBeInstanceOf(InterruptTimedOutError);
    await dispatcher.idle();
    expect(await engine.wait(paused.runId)).toMatchObject({
      status: 'failed',
      failure: { code: 'INTERRUPT_TIMED_OUT' },
    });
  });

  it('cancel while paused undoes the completed steps; a later resume is refused', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    expect(await engine.cancel(paused.runId, 'customer left')).toMatchObject({ status: 'cancelled' });
    expect(log).toEqual(['run:reserve', 'run:notify', 'undo:reserve']);
    await expect(engine.continue(paused.runId, 'approve', approve)).rejects.toMatchObject({
      code: 'RUN_NOT_PAUSED',
      status: 'cancelled',
    });
  });

  it('undo of a paused run undoes its completed steps and cancels it', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const def = approval(log);
    engine.register(def);
    const paused = await engine.run(def, input);
    expect(await engine.undo(paused.runId)).toMatchObject({ status: 'cancelled' });
    expect(log).toEqual(['run:reserve', 'run:notify', 'undo:reserve']);
    await expect(engine.continue(paused.runId, 'approve', approve)).rejects.toMatchObject({ code: 'RUN_NOT_PAUSED' });
  });

  it('an interrupt inside a composed child pauses the run; it is resumed by path; cancel undoes the child first', async () => {
    const log: string[] = [];
    const { engine } = createHarness();
    const child = defineReactor('approval-child', (r: ReactorBuilder<{ n: number }>) => {
      const hold = r.step(
        'hold',
        { run: () => (log.push('run:hold'), success('H')), undo: () => void log.push('undo:hold') },
        {},
      );
      return r.interrupt<string>('approve', { waitFor: [hold], payload: { type: 'string' } });
    });
    engine.register(child);
    const parent = defineReactor('approval-parent', (r: ReactorBuilder<{ n: number }>) => {
      const first = r.step(
        'first',
        { run: () => (log.push('run:first'), success(1)), undo: () => void log.push('undo:first') },
        {},
      );
      return r.compose('pay', child, { n: r.input('n', { type: 'number' }) }, { waitFor: [first] });
    });
    engine.register(parent);

    const paused = await engine.run(parent, { n: 1 });
    expect(paused).toMatchObject({ status: 'paused', stepName: 'pay.approve', waitingFor: [{ path: 'pay.approve' }] });
    await expect(engine.continue(paused.runId, 'approve', 'x')).rejects.toBeInstanceOf(UnknownInterruptError);
    await expect(engine.continue(paused.runId, 'approve', 'x')).rejects.toThrow(/Its interrupts: pay\.approve/);
    expect(await engine.continue(paused.runId, 'pay.approve', 'ok')).toMatchObject({
      outcome: { status: 'completed', value: 'ok' },
    });

    log.length = 0;
    const again = await engine.run(parent, { n: 2 });
    await engine.cancel(again.runId, 'stop');
    expect(log).toEqual(['run:first', 'run:hold', 'undo:hold', 'undo:first']);
  });

  it('waits at several interrupts; answering one leaves it paused at the other', async () => {
    const { engine } = createHarness();
    const def = defineReactor('two-questions', (r: ReactorBuilder<{ n: number }>) => {
      const a = r.interrupt<string>('a');
      const b = r.interrupt<string>('b');
      return r.step('both', ({ x, y }: { x: string; y: string }) => success(x + y), { x: a, y: b });
    });
    engine.register(def);
    const paused = await engine.run(def, { n: 1 });
    expect(paused).toMatchObject({ status: 'paused', waitingFor: [{ path: 'a' }, { path: 'b' }] });
    const first = await engine.continue(paused.runId, 'b', 'B');
    expect(first).toMatchObject({ accepted: 'applied', outcome: { status: 'paused', waitingFor: [{ path: 'a' }] } });
    expect(await engine.continue(paused.runId, 'a', 'A')).toMatchObject({
      outcome: { status: 'completed', value: 'AB' },
    });
    await expect(engine.continue(paused.runId, 'a', 'again')).rejects.toBeInstanceOf(AlreadyResumedError);
  });

  it('refuses bad interrupt options at definition, and an interrupt inside a map element at run time', async () => {
    expect(() => defineReactor('bad-1', (r) => r.interrupt('x', { maxAttempts: 0 }))).toThrow(/maxAttempts must be/);
    expect(() => defineReactor('bad-2', (r) => r.interrupt('x', { onTimeout: () => success(1) }))).toThrow(
      /onTimeout needs timeoutMs/,
    );
    expect(() => defineReactor('bad-3', (r) => r.interrupt('x', { retries: 3 } as never))).toThrow(
      /unknown option 'retries'/,
    );

    const { engine } = createHarness();
    const element = defineReactor('pausing-element', (r: ReactorBuilder<{ n: number }>) => r.interrupt('ask'));
    engine.register(element);
    const def = defineReactor('maps-pauses', (r) =>
      r.map('each', { source: r.value([1]), element: 'pausing-element', inputs: (n) => ({ n }) }),
    );
    engine.register(def);
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('failed');
    expect(JSON.stringify(outcome)).toContain('INTERRUPT_NOT_SUPPORTED');
  });
});
