import { ReactorEngine, type ReactorDefinition } from '../../lib/core';
import { InProcessJobDispatcher } from '../../lib/runtime/in-process-job.dispatcher';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepContext } from '../../lib/core/definition/step';
import { isStepAborted, StepAbortedError } from '../../lib/core/errors/step-aborted.error';
import { elementLeaseKey, runLeaseKey } from '../../lib/core/model/keys';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

/** Resolves with the signal's reason once it is aborted (at once if it already is). */
function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

/** Resolves once `check` holds, yielding to the event loop in between (no timers). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}

/**
 * a -> b: `a` completes (undo logged); `b` takes its signal, says it started (`entered`), then
 * waits for it and throws its reason (a cooperative step), unless `ignore` is set: then it waits
 * for `gate` and succeeds.
 */
function cooperative(
  log: string[],
  seen: { ctx?: StepContext; undoCtx?: StepContext; compensateCtx?: StepContext; compensateError?: unknown },
  entered: () => void,
  options: { ignore?: Promise<void>; retries?: number; then?: boolean } = {},
) {
  return defineReactor('cooperative', (r: ReactorBuilder<object>) => {
    const a = r.step(
      'a',
      {
        run: () => (log.push('run:a'), success('A')),
        undo: (_result, _args, ctx) => {
          seen.undoCtx = ctx;
          log.push('undo:a');
        },
      },
      {},
    );
    const b = r.step(
      'b',
      {
        run: async (_args, ctx) => {
          log.push(`run:b#${ctx.attempt}`);
          seen.ctx = ctx;
          entered();
          if (options.ignore) {
            await options.ignore;
            return success('B');
          }
          throw await aborted(ctx.signal);
        },
        compensate: (error, _args, ctx) => {
          seen.compensateCtx = ctx;
          seen.compensateError = error;
          log.push('compensate:b');
        },
        undo: () => log.push('undo:b'),
      },
      {},
      { waitFor: [a], retries: options.retries ? { maxAttempts: options.retries, baseDelayMs: 10 } : undefined },
    );
    if (options.then) r.step('c', () => (log.push('run:c'), success('C')), {}, { waitFor: [b] });
  });
}

/** Another process on the same storage: an engine of its own, with its own in-process worker. */
function otherProcess(h: ReturnType<typeof createHarness>, def: ReactorDefinition): ReactorEngine {
  const dispatcher = new InProcessJobDispatcher(h.clock);
  const engine = new ReactorEngine({
    storage: h.storage,
    locks: h.locks,
    maps: h.maps,
    dispatcher,
    clock: h.clock,
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
  });
  engine.register(def);
  dispatcher.setHandler((job) => engine.handleJob(job));
  return engine;
}

describe('ctx.signal', () => {
  it('every attempt, compensate and undo gets a signal of its own, not aborted while nothing asks it to stop', async () => {
    const { engine } = createHarness();
    const signals: AbortSignal[] = [];
    let calls = 0;
    const def = defineReactor('plain', (r: ReactorBuilder<object>) => {
      const a = r.step(
        'a',
        {
          run: (_a, ctx) => (signals.push(ctx.signal), success(1)),
          undo: (_r, _a, ctx) => void signals.push(ctx.signal),
        },
        {},
      );
      r.step(
        'b',
        {
          run: (_a, ctx) => (signals.push(ctx.signal), ++calls < 2 ? failure('again') : failure(new Error('no'))),
          compensate: (_e, _a, ctx) => void signals.push(ctx.signal),
        },
        {},
        { waitFor: [a], retries: { maxAttempts: 2, baseDelayMs: 1 } },
      );
    });
    const outcome = await engine.run(def, {});
    expect(outcome.status).toBe('failed');
    // a's run, b's two attempts, b's compensate, a's undo.
    expect(signals).toHaveLength(5);
    expect(new Set(signals).size).toBe(5);
    expect(signals.every((s) => s instanceof AbortSignal && !s.aborted)).toBe(true);
  });

  describe('on cancel', () => {
    it('in this process, the step in flight is aborted at once; it is compensated (not retried) and the run ends cancelled', async () => {
      const { engine, recorder } = createHarness();
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      const def = cooperative(log, seen, inside.resolve, { retries: 3 });
      const running = engine.run(def, {});
      await inside.promise;
      const runId = recorder.events.find((e) => e.type === 'reactor.start')!.runId;

      await engine.cancel(runId, 'customer changed their mind');
      const outcome = await running;

      const reason = seen.ctx!.signal.reason as StepAbortedError;
      expect(reason).toBeInstanceOf(StepAbortedError);
      expect(isStepAborted(reason, 'cancel')).toBe(true);
      expect(reason).toMatchObject({
        code: 'STEP_ABORTED',
        abortCause: 'cancel',
        cancelReason: 'customer changed their mind',
        runId,
        reactorName: 'cooperative',
        stepName: 'b',
        phase: 'run',
      });
      expect(reason.message).toBe(
        `Reactor 'cooperative' run '${runId}' step 'b' was aborted: the run was cancelled (customer changed their mind); stop and let the run undo its completed steps.`,
      );
      expect(outcome).toMatchObject({
        status: 'cancelled',
        reason: 'customer changed their mind',
        rollbackFailures: [],
      });
      // One attempt only (retries: 3), compensated with the abort reason, then a undone.
      expect(log).toEqual(['run:a', 'run:b#1', 'compensate:b', 'undo:a']);
      expect(seen.compensateError).toBe(reason);
      // A cancel never aborts the rollback it starts.
      expect(seen.compensateCtx!.signal.aborted).toBe(false);
      expect(seen.undoCtx!.signal.aborted).toBe(false);
      const view = await engine.get(runId);
      expect(view?.status).toBe('cancelled');
      expect(view?.completed).toEqual(['a']);
    });

    it('a step that ignores its aborted signal finishes as before; the run is cancelled at the step boundary', async () => {
      const { engine, recorder } = createHarness();
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      const gate = deferred();
      const running = engine.run(cooperative(log, seen, inside.resolve, { ignore: gate.promise, then: true }), {});
      await inside.promise;
      const runId = recorder.events.find((e) => e.type === 'reactor.start')!.runId;

      await engine.cancel(runId, 'stop');
      expect(seen.ctx!.signal.aborted).toBe(true);
      gate.resolve();
      const outcome = await running;

      expect(outcome.status).toBe('cancelled');
      // b completed: it is undone like any completed step, not compensated; c never starts.
      expect(log).toEqual(['run:a', 'run:b#1', 'undo:b', 'undo:a']);
    });

    it('learned from the lease extension when the cancel is stored by another engine (another process)', async () => {
      const h = createHarness({ leaseTtlMs: 300 });
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      // The executing engine reads its storage directly, so its lease extension reads the cancel request.
      const executing = new ReactorEngine({ storage: h.storage, locks: h.locks, clock: h.clock, leaseTtlMs: 300 });
      const running = executing.run(cooperative(log, seen, inside.resolve), {});
      await inside.promise;
      const runId = seen.ctx!.runId;

      // The other engine finds the run held: it stores the request; nothing in it executes the run.
      const now = await h.engine.cancel(runId, 'from elsewhere');
      expect(now.status).toBe('dispatched');
      const reason = (await aborted(seen.ctx!.signal)) as StepAbortedError;

      expect(reason).toMatchObject({ abortCause: 'cancel', cancelReason: 'from elsewhere', stepName: 'b' });
      expect(await running).toMatchObject({ status: 'cancelled', reason: 'from elsewhere' });
      expect(log).toEqual(['run:a', 'run:b#1', 'compensate:b', 'undo:a']);
    });
  });

  describe('at shutdown (engine.drain)', () => {
    it('past the grace, the step is aborted; the run is left running for recovery, which resumes it', async () => {
      const h = createHarness();
      const { engine, recorder, locks, clock } = h;
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      let calls = 0;
      const def = cooperative(log, seen, () => (++calls === 1 ? inside.resolve() : undefined));
      engine.register(def);
      const running = engine.run(def, {});
      await inside.promise;
      const runId = recorder.events.find((e) => e.type === 'reactor.start')!.runId;
      expect(engine.executing).toBe(1);

      const drained = await engine.drain(10);

      expect(drained).toEqual({ aborted: 1, left: 0 });
      const reason = seen.ctx!.signal.reason as StepAbortedError;
      expect(reason).toMatchObject({ abortCause: 'shutdown', runId, stepName: 'b', phase: 'run', retryable: true });
      expect(reason.message).toContain('this process is shutting down and shutdownGraceMs passed');
      // The caller is told the run goes on elsewhere; nothing was failed, compensated or undone.
      expect((await running).status).toBe('dispatched');
      expect(log).toEqual(['run:a', 'run:b#1']);
      const stored = await engine.get(runId);
      expect(stored?.status).toBe('running');
      expect(stored?.completed).toEqual(['a']);
      expect(stored?.failure).toBeUndefined();
      // The lease was released as the execution stopped: recovery need not wait for it to expire.
      expect(await locks.isHeld(runLeaseKey(runId))).toBe(false);
      expect(engine.executing).toBe(0);

      // The sweeper of another process finds it stalled and a worker there resumes it: b runs again.
      clock.advance(60_000);
      const other = otherProcess(h, def);
      expect(await other.recoverStalled({ graceMs: 1 })).toBe(1);
      await until(() => calls === 2);
      // The resumed attempt gets a fresh signal, not aborted; this test ends it with a cancel.
      expect(seen.ctx!.signal.aborted).toBe(false);
      await other.cancel(runId, 'done with it');
      expect((await other.wait(runId, { timeoutMs: 1_000 })).status).toBe('cancelled');
      expect(log).toEqual(['run:a', 'run:b#1', 'run:b#1', 'compensate:b', 'undo:a']);
    });

    it('aborts nothing when the runs end within the grace', async () => {
      const { engine } = createHarness();
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      const gate = deferred();
      const running = engine.run(cooperative(log, seen, inside.resolve, { ignore: gate.promise }), {});
      await inside.promise;

      const draining = engine.drain(30_000);
      gate.resolve();

      expect(await draining).toEqual({ aborted: 0, left: 0 });
      expect(seen.ctx!.signal.aborted).toBe(false);
      expect((await running).status).toBe('completed');
      expect(await engine.drain(30_000)).toEqual({ aborted: 0, left: 0 });
    });

    it('a step that ignores its signal is not waited for past the second grace; once it returns, its run completes', async () => {
      const { engine } = createHarness();
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      const gate = deferred();
      const running = engine.run(cooperative(log, seen, inside.resolve, { ignore: gate.promise }), {});
      await inside.promise;

      expect(await engine.drain(5)).toEqual({ aborted: 1, left: 1 });
      expect(seen.ctx!.signal.aborted).toBe(true);
      gate.resolve();

      // b was the last step: with nothing left to start, the run completes as it would have.
      expect((await running).status).toBe('completed');
      expect(log).toEqual(['run:a', 'run:b#1']);
    });

    it('after the grace, a run that starts in this process is stopped before its first step', async () => {
      const { engine } = createHarness();
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      const gate = deferred();
      const first = engine.run(cooperative(log, seen, inside.resolve, { ignore: gate.promise }), {});
      await inside.promise;
      const draining = engine.drain(5);
      await until(() => seen.ctx!.signal.aborted);

      const late = await engine.run(
        cooperative(log, {}, () => undefined),
        {},
      );
      expect(late.status).toBe('dispatched');
      expect((await engine.get(late.runId))?.status).toBe('running');
      gate.resolve();
      await draining;
      await first;
      expect(log).toEqual(['run:a', 'run:b#1']);
    });

    it('a run stopped mid-rollback keeps the rest of its rollback (the aborted undo included) for recovery', async () => {
      const h = createHarness();
      const { engine, clock } = h;
      const log: string[] = [];
      const undoSignals: AbortSignal[] = [];
      const inUndo = deferred();
      const def = defineReactor('rolling', (r: ReactorBuilder<object>) => {
        const a = r.step('a', { run: () => success('A'), undo: () => void log.push('undo:a') }, {});
        const b = r.step(
          'b',
          {
            run: () => success('B'),
            undo: async (_r, _a, ctx: StepContext) => {
              undoSignals.push(ctx.signal);
              log.push('undo:b');
              if (undoSignals.length > 1) return;
              inUndo.resolve();
              throw await aborted(ctx.signal);
            },
          },
          {},
          { waitFor: [a] },
        );
        r.step('c', () => failure(new Error('declined')), {}, { waitFor: [b] });
      });
      engine.register(def);
      const running = engine.run(def, {});
      await inUndo.promise;

      expect(await engine.drain(5)).toEqual({ aborted: 1, left: 0 });
      const reason = undoSignals[0].reason as StepAbortedError;
      expect(reason).toMatchObject({ abortCause: 'shutdown', stepName: 'b', phase: 'undo' });
      const runId = reason.runId;
      expect((await running).status).toBe('dispatched');
      // Nothing recorded of the aborted undo: b is still on the undo stack, a was not undone.
      const stored = await engine.get(runId);
      expect(stored?.status).toBe('rolling_back');
      expect(log).toEqual(['undo:b']);

      clock.advance(60_000);
      const other = otherProcess(h, def);
      expect(await other.recoverStalled({ graceMs: 1 })).toBe(1);
      const outcome = await other.wait(runId, { timeoutMs: 1_000 });
      expect(outcome).toMatchObject({ status: 'failed', failure: { errorMessage: 'declined', rollbackFailures: [] } });
      expect(log).toEqual(['undo:b', 'undo:b', 'undo:a']);
      expect(undoSignals[1].aborted).toBe(false);
    });
  });

  describe('on a lost lease', () => {
    it('the step is aborted when an extension finds the lease gone; the execution writes nothing more', async () => {
      const { engine, clock, storage } = createHarness({ leaseTtlMs: 300 });
      const log: string[] = [];
      const seen: Parameters<typeof cooperative>[1] = {};
      const inside = deferred();
      const running = engine.run(cooperative(log, seen, inside.resolve, { retries: 3 }), {});
      await inside.promise;
      const runId = seen.ctx!.runId;
      const before = await storage.load(runId);

      // Time passes beyond the lease (the event loop was busy, say): the next extension finds it expired.
      clock.advance(1_000);
      const reason = (await aborted(seen.ctx!.signal)) as StepAbortedError;

      expect(reason).toMatchObject({ abortCause: 'lease-lost', runId, stepName: 'b', phase: 'run' });
      expect(reason.message).toContain("this process lost the run's lease");
      // A caller's execution reports the lost lease as before; nothing was compensated, undone or written.
      await expect(running).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(log).toEqual(['run:a', 'run:b#1']);
      const after = await storage.load(runId);
      expect(after).toEqual(before);
    });
  });
  describe('in a fan-out map element', () => {
    /** A map of one element whose step waits for its signal the first time and succeeds after. */
    function mapOfOne(seen: { ctx?: StepContext; calls: number }, entered: () => void) {
      const element = defineReactor('abort-element', (r: ReactorBuilder<{ n: number }>) =>
        r.step(
          'work',
          async (_args, ctx) => {
            seen.ctx = ctx;
            if (++seen.calls > 1) return success('again');
            entered();
            throw await aborted(ctx.signal);
          },
          {},
        ),
      );
      const owner = defineReactor('abort-map-owner', (r) =>
        r.map('each', {
          source: r.value([1]),
          element: 'abort-element',
          inputs: (n) => ({ n }),
          fanOut: { batchSize: 1 },
        }),
      );
      return { element, owner };
    }

    it('at shutdown past the grace, the element step is aborted, its lease let go, and recovery runs it again', async () => {
      const h = createHarness();
      const { engine, locks, clock } = h;
      const seen: { ctx?: StepContext; calls: number } = { calls: 0 };
      const inside = deferred();
      const { element, owner } = mapOfOne(seen, inside.resolve);
      engine.register(element);
      engine.register(owner);
      void engine.run(owner, {});
      await inside.promise;

      const drained = await engine.drain(10);

      expect(drained.aborted).toBeGreaterThanOrEqual(1);
      const reason = seen.ctx!.signal.reason as StepAbortedError;
      expect(reason).toMatchObject({ abortCause: 'shutdown', stepName: 'work', phase: 'run' });
      const elementRunId = seen.ctx!.runId;
      const mapId = elementRunId.slice(0, elementRunId.lastIndexOf(':'));
      expect(await locks.isHeld(elementLeaseKey(mapId, 0))).toBe(false);
      expect(engine.executing).toBe(0);

      // Another process's sweep finds the element stalled; its worker runs it again and the map completes.
      clock.advance(60_000);
      const dispatcher = new InProcessJobDispatcher(h.clock);
      const other = new ReactorEngine({
        storage: h.storage,
        locks: h.locks,
        maps: h.maps,
        dispatcher,
        clock: h.clock,
        logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      });
      other.register(element);
      other.register(owner);
      dispatcher.setHandler((job) => other.handleJob(job));
      expect(await other.recoverMaps({ graceMs: 1 })).toBeGreaterThanOrEqual(1);
      await until(() => seen.calls === 2);
      expect(seen.ctx!.signal.aborted).toBe(false);
    });

    it('the element step is aborted when an extension finds its lease gone; the job still ends', async () => {
      const { engine, clock } = createHarness({ leaseTtlMs: 300 });
      const seen: { ctx?: StepContext; calls: number } = { calls: 0 };
      const inside = deferred();
      const { element, owner } = mapOfOne(seen, inside.resolve);
      engine.register(element);
      engine.register(owner);
      void engine.run(owner, {});
      await inside.promise;

      clock.advance(1_000);
      const reason = (await aborted(seen.ctx!.signal)) as StepAbortedError;

      expect(reason).toMatchObject({ abortCause: 'lease-lost', stepName: 'work', phase: 'run' });
      await until(() => engine.executing === 0);
    });
  });
});
