import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { InputValidationError } from '../../lib/core/errors/input-validation.error';
import { InvalidArgumentError } from '../../lib/core/errors/invalid-argument.error';
import { InvalidRunStateError } from '../../lib/core/errors/run-state.error';
import { buildShipping, type ShippingInput } from '../support/redrive.fixtures';
import { createHarness } from './harness';

/** a(order) -> c(a); b(note); d(c, b) = the value. Each step logs its runs and undos. */
function shipping(log: string[], fail: { d: boolean }, pause = false) {
  return defineReactor('ship25', (r: ReactorBuilder<ShippingInput>) => {
    return buildShipping(r, { record: (entry) => void log.push(entry), failD: () => fail.d }, () => {
      const gate = pause ? r.interrupt('approve') : undefined;
      return gate ? { waitFor: [gate] } : {};
    });
  });
}

describe('retry(runId, { fromStep, inputs })', () => {
  it('reuses the results of the steps that do not depend on fromStep, runs the rest, and moves their undo to the new run', async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    const def = shipping(log, { d: false });
    engine.register(def);
    const first = await engine.run(def, { order: 'o1', note: 'n1' });
    expect(first.status).toBe('completed');
    log.length = 0;

    const redriven = await engine.retry(first.runId, { fromStep: 'c' });
    const done = await engine.wait(redriven.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();
    expect(done.status === 'completed' && done.value).toBe('C(A:o1)+B:n1');
    expect(log.sort()).toEqual(['c', 'd']);
    const view = await engine.get(redriven.runId);
    expect(view).toMatchObject({ retriedFrom: first.runId, retryCount: 1 });
    const reused = view!.trace.filter((t) => t.type === 'skip').map((t) => [t.step, t.detail]);
    expect(reused).toEqual([
      ['a', `reused from run ${first.runId}`],
      ['b', `reused from run ${first.runId}`],
    ]);

    // Idempotent per source run: the same run again, nothing executed.
    log.length = 0;
    const again = await engine.retry(first.runId, { fromStep: 'c' });
    expect(again).toMatchObject({ runId: redriven.runId, replayed: true });
    expect(log).toEqual([]);

    // Undo of the new run undoes the reused steps too; the source keeps only what ran again.
    expect((await engine.undo(redriven.runId)).status).toBe('cancelled');
    expect(log.sort()).toEqual(['undo-a', 'undo-b', 'undo-c', 'undo-d']);
    log.length = 0;
    expect((await engine.undo(first.runId)).status).toBe('cancelled');
    expect(log.sort()).toEqual(['undo-c', 'undo-d']);
    const source = await engine.get(first.runId);
    expect(source!.trace.filter((t) => t.detail?.startsWith('undo handed to run')).map((t) => t.step)).toEqual([
      'a',
      'b',
    ]);
  });

  it('new inputs: a step reading a changed input runs again, and its dependents', async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    const def = shipping(log, { d: false });
    engine.register(def);
    const first = await engine.run(def, { order: 'o1', note: 'n1' });
    log.length = 0;
    const withNote = await engine.retry(first.runId, { fromStep: 'd', inputs: { order: 'o1', note: 'n2' } });
    const done = await engine.wait(withNote.runId, { timeoutMs: 5_000 });
    expect(done.status === 'completed' && done.value).toBe('C(A:o1)+B:n2');
    expect(log.sort()).toEqual(['b', 'd']);

    // Inputs alone (no fromStep), on another completed run: a, c and d read the changed order.
    const second = await engine.run(def, { order: 'o1', note: 'n1' });
    log.length = 0;
    const withOrder = await engine.retry(second.runId, { inputs: { order: 'o9', note: 'n1' } });
    const done2 = await engine.wait(withOrder.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();
    expect(done2.status === 'completed' && done2.value).toBe('C(A:o9)+B:n1');
    expect(log.sort()).toEqual(['a', 'c', 'd']);
    expect((await engine.get(withOrder.runId))!.inputs).toEqual({ order: 'o9', note: 'n1' });
  });

  it('refuses an unknown step (did you mean), a rolled-back failed run, a cancelled run and invalid inputs', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const fail = { d: true };
    const def = shipping(log, fail);
    engine.register(def);
    const failed = await engine.run(def, { order: 'o1', note: 'n1' });
    expect(failed.status).toBe('failed');
    const rolledBack = await engine.retry(failed.runId, { fromStep: 'c' }).catch((e: unknown) => e);
    expect(rolledBack).toBeInstanceOf(InvalidRunStateError);
    expect((rolledBack as Error).message).toMatch(/was rolled back.*Retry it without fromStep/);

    fail.d = false;
    const completed = await engine.run(def, { order: 'o1', note: 'n1' });
    const unknown = await engine.retry(completed.runId, { fromStep: 'cc' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(InvalidArgumentError);
    expect((unknown as Error).message).toMatch(/'cc' is not one\. Did you mean 'c'\?/);
    const invalid = await engine
      .retry(completed.runId, { fromStep: 'c', inputs: { order: 1 } })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InputValidationError);
    expect(await engine.list({ reactor: 'ship25' })).toMatchObject({ runs: [{}, {}] }); // nothing started

    await engine.undo(completed.runId);
    const cancelled = await engine.retry(completed.runId, { fromStep: 'c' }).catch((e: unknown) => e);
    expect(cancelled).toBeInstanceOf(InvalidRunStateError);
    expect((cancelled as Error).message).toMatch(/is cancelled/);
  });

  it('a failed run that was not rolled back (job retries exhausted) is redriven; new: true does not reuse steps handed over', async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    const def = shipping(log, { d: false }, true);
    engine.register(def);
    const paused = await engine.run(def, { order: 'o1', note: 'n1' });
    expect(paused.status).toBe('paused');
    await engine.failRun(paused.runId, { code: 'JOB_RETRIES_EXHAUSTED', message: 'worker died' });
    expect((await engine.get(paused.runId))!.status).toBe('failed');
    log.length = 0;

    const redriven = await engine.retry(paused.runId, { fromStep: 'c' });
    expect(redriven.runId).not.toBe(paused.runId);
    // a and b are reused; c runs again and the run pauses at the interrupt before d.
    const view = await engine.get(redriven.runId);
    expect(view!.trace.filter((t) => t.type === 'skip').map((t) => t.step)).toEqual(expect.arrayContaining(['a', 'b']));
    await dispatcher.idle();
    expect(log.filter((s) => s === 'a' || s === 'b')).toEqual([]);

    log.length = 0;
    const another = await engine.retry(paused.runId, { fromStep: 'c', new: true });
    expect(another.runId).not.toBe(redriven.runId);
    await dispatcher.idle();
    // a and b were handed to the first redrive: this one runs them again.
    expect(log.filter((s) => s === 'a' || s === 'b').sort()).toEqual(['a', 'b']);
  });

  it('retryMany: a dry run lists the runs, a real one retries each once, a second call replays', async () => {
    const { engine, dispatcher, clock } = createHarness();
    const log: string[] = [];
    const fail = { d: true };
    const def = shipping(log, fail);
    engine.register(def);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await engine.run(def, { order: `o${i}`, note: 'n' })).runId);
      clock.advance(10);
    }
    const until = (await engine.get(ids[1]))!.createdAt;
    await engine.run(def, { order: 'late', note: 'n' });
    fail.d = false;
    const ok = await engine.run(def, { order: 'fine', note: 'n' });

    const dry = await engine.retryMany({ reactor: 'ship25', until, dryRun: true });
    expect(dry).toEqual({ dryRun: true, refused: [], retried: [{ runId: ids[1] }, { runId: ids[0] }] });
    log.length = 0;
    const real = await engine.retryMany({ reactor: 'ship25', until });
    expect(real.dryRun).toBe(false);
    expect(real.retried.map((r) => r.runId)).toEqual([ids[1], ids[0]]);
    expect(real.retried.every((r) => r.newRunId && !r.replayed)).toBe(true);
    await dispatcher.idle();
    const again = await engine.retryMany({ reactor: 'ship25', until });
    expect(again.retried).toEqual(real.retried.map((r) => ({ ...r, replayed: true })));

    // Completed runs need fromStep; a refusal is collected, not thrown.
    const completed = await engine.retryMany({ reactor: 'ship25', status: 'completed', limit: 10 });
    expect(completed.refused).toEqual(
      expect.arrayContaining([expect.objectContaining({ runId: ok.runId, code: 'INVALID_RUN_STATE' })]),
    );
  });
});
