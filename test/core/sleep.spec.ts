import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { Ref } from '../../lib/core/definition/ref';
import { DefinitionError } from '../../lib/core/errors/definition.error';
import { runLeaseKey } from '../../lib/core/model/keys';
import { ReactorEngine } from '../../lib/core/engine/reactor-engine';
import { success } from '../../lib/core/results/step-outcome';
import { describeReactor, stepStates } from '../../lib/dashboard/dashboard-dag';
import { InProcessJobDispatcher } from '../../lib/runtime/in-process-job.dispatcher';
import { createTestEngine } from '../../lib/testing/test-engine';
import { TestClock } from '../../lib/testing/test-clock';
import { deferred } from './harness';

const DAY = 24 * 60 * 60 * 1000;

/** Let fired timers hand their jobs to the dispatcher, then wait until none is pending. */
async function settle(dispatcher: InProcessJobDispatcher): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    await dispatcher.idle();
  }
}

/** reserve (undoable), then a sleep, then ship: what ran and what was undone goes in `log`. */
function coolOff(log: string[], sleep: (r: ReactorBuilder<{ at?: string | number }>) => void, name = 'cool-off') {
  return defineReactor(name, (r: ReactorBuilder<{ at?: string | number }>) => {
    r.step(
      'reserve',
      { run: () => (log.push('run:reserve'), success('R1')), undo: () => void log.push('undo:reserve') },
      {},
    );
    sleep(r);
    return r.step('ship', () => (log.push('run:ship'), success('shipped')), {}, { waitFor: ['wait'] });
  });
}

function sleeper(clock = new TestClock(), options: { interruptRetentionMs?: number } = {}) {
  const test = createTestEngine({ clock, ...options });
  return { ...test, clock, settle: () => settle(test.dispatcher) };
}

describe('r.sleep (embedded runtime)', () => {
  it('a sleep of milliseconds parks the run (lease released, nothing held) and completes once the clock passes it', async () => {
    const log: string[] = [];
    const { engine, clock, locks, storage, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: 250, waitFor: ['reserve'] }));
    engine.register(def);
    const start = clock.now();

    const outcome = await engine.run(def, {});
    expect(outcome).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait', wakeAt: start + 250 } });
    expect(log).toEqual(['run:reserve']);
    expect(await locks.isHeld(runLeaseKey(outcome.runId))).toBe(false);
    const parked = await storage.load(outcome.runId);
    expect(parked).toMatchObject({ status: 'running', handoff: { mode: 'all', step: 'wait' } });
    expect(parked?.trace).toContainEqual(
      expect.objectContaining({
        type: 'pause',
        step: 'wait',
        detail: `sleeping until ${new Date(start + 250).toISOString()}`,
      }),
    );
    expect(await engine.get(outcome.runId)).toMatchObject({
      status: 'running',
      sleeping: { step: 'wait', wakeAt: start + 250 },
    });

    // The dashboard's DAG shows the sleep as a waiting step of its own kind.
    const steps = stepStates(describeReactor(def).steps, (await engine.get(outcome.runId))!);
    expect(steps.find((s) => s.name === 'wait')).toMatchObject({ kind: 'sleep', status: 'paused' });
    expect(steps.find((s) => s.name === 'ship')).toMatchObject({ status: 'pending' });

    clock.advance(249);
    await settle();
    expect(log).toEqual(['run:reserve']);

    clock.advance(1);
    await settle();
    const done = await engine.get(outcome.runId);
    expect(done).toMatchObject({
      status: 'completed',
      value: 'shipped',
      results: { wait: { sleptUntil: start + 250 } },
      attempts: { wait: 1 },
    });
    expect(done?.sleeping).toBeUndefined();
    expect(done?.trace).toContainEqual(
      expect.objectContaining({ type: 'run', step: 'wait', detail: 'waking from sleep' }),
    );
    expect(log).toEqual(['run:reserve', 'run:ship']);
  });

  it('a sleep of days wakes when the clock passes it, not a millisecond before', async () => {
    const log: string[] = [];
    const { engine, clock, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: 3 * DAY, waitFor: ['reserve'] }));
    engine.register(def);
    const start = clock.now();
    const { runId } = await engine.run(def, {});

    clock.advance(3 * DAY - 1);
    await settle();
    expect(await engine.get(runId)).toMatchObject({ status: 'running', sleeping: { wakeAt: start + 3 * DAY } });
    expect(log).toEqual(['run:reserve']);

    clock.advance(1);
    await settle();
    expect(await engine.get(runId)).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: start + 3 * DAY } },
    });
  });

  it('a sleep longer than half the record retention parks in hops that write the run again; the wake-up time stays', async () => {
    const log: string[] = [];
    const HOUR = 60 * 60 * 1000;
    const clock = new TestClock();
    const test = createTestEngine({ clock, interruptRetentionMs: 10 * HOUR });
    const { engine, storage } = test;
    const def = coolOff(log, (r) => r.sleep('wait', { ms: DAY, waitFor: ['reserve'] }));
    engine.register(def);
    const start = clock.now();
    const { runId } = await engine.run(def, {});
    expect((await storage.load(runId))?.retryAt).toEqual({ wait: start + 5 * HOUR });

    clock.advance(5 * HOUR);
    await settle(test.dispatcher);
    const hopped = await storage.load(runId);
    expect(hopped).toMatchObject({
      status: 'running',
      updatedAt: start + 5 * HOUR,
      retryAt: { wait: start + 10 * HOUR },
    });
    expect(await engine.get(runId)).toMatchObject({ sleeping: { step: 'wait', wakeAt: start + DAY } });
    expect(log).toEqual(['run:reserve']);

    for (let hour = 5; hour < 24; hour += 5) {
      clock.advance(Math.min(5, 24 - hour) * HOUR);
      await settle(test.dispatcher);
    }
    expect(await engine.get(runId)).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: start + DAY } },
    });
    expect(clock.now()).toBe(start + DAY);
    expect(log).toEqual(['run:reserve', 'run:ship']);
  });

  it('sleeps until an input: an ISO 8601 string or epoch milliseconds; a time already past wakes at once', async () => {
    const log: string[] = [];
    const { engine, clock, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { until: r.input('at') as Ref<string | number> }));
    engine.register(def);
    const at = clock.now() + 2 * DAY;

    const iso = await engine.run(def, { at: new Date(at).toISOString() });
    const epoch = await engine.run(def, { at });
    expect(iso).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait', wakeAt: at } });
    expect(epoch).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait', wakeAt: at } });
    const past = await engine.run(def, { at: clock.now() - 1 });
    expect(past).toMatchObject({ status: 'completed', results: { wait: { sleptUntil: clock.now() - 1 } } });

    clock.advance(2 * DAY);
    await settle();
    for (const { runId } of [iso, epoch]) {
      expect(await engine.get(runId)).toMatchObject({ status: 'completed', results: { wait: { sleptUntil: at } } });
    }
  });

  it('sleeps until a time a step computed (its result, read like any step argument)', async () => {
    const { engine, clock, settle } = sleeper();
    const def = defineReactor('until-result', (r: ReactorBuilder<object>) => {
      const slot = r.step('book', () => success({ startsAt: new Date(clock.now() + DAY).toISOString() }), {});
      return r.sleep('wait', { until: slot.path('startsAt') });
    });
    engine.register(def);
    const outcome = await engine.run(def, {});
    expect(outcome).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait', wakeAt: clock.now() + DAY } });
    clock.advance(DAY);
    await settle();
    expect(await engine.get(outcome.runId)).toMatchObject({ status: 'completed', value: { sleptUntil: clock.now() } });
  });

  it('an until that is not a time fails the run (rolled back) naming the reactor, the step and the field', async () => {
    const log: string[] = [];
    const { engine } = sleeper();
    const def = coolOff(
      log,
      (r) => r.sleep('wait', { until: r.input('at') as Ref<string | number>, waitFor: ['reserve'] }),
      'bad-until',
    );
    engine.register(def);
    for (const at of ['next tuesday', '2026-13-45T00:00:00Z', '2026-12-24T08:00:00']) {
      const outcome = await engine.run(def, { at });
      expect(outcome).toMatchObject({
        status: 'failed',
        failure: {
          code: 'INPUT_VALIDATION',
          stepName: 'wait',
          errorMessage: expect.stringMatching(
            /^Reactor 'bad-until' sleep 'wait': until must (be an ISO 8601 date string|give its time zone)/,
          ),
        },
      });
    }
    expect(log).toEqual([...Array(3)].flatMap(() => ['run:reserve', 'undo:reserve']));
  });

  it('a duration from a ref that is not a number fails naming the field', async () => {
    const { engine } = sleeper();
    const def = defineReactor('bad-ms', (r: ReactorBuilder<{ ms: unknown }>) =>
      r.sleep('wait', { ms: r.input('ms') as never }),
    );
    engine.register(def);
    expect(await engine.run(def, { ms: -5 })).toMatchObject({
      status: 'failed',
      failure: {
        code: 'INPUT_VALIDATION',
        errorMessage: "Reactor 'bad-ms' sleep 'wait': ms must be a finite number of milliseconds >= 0 (got -5).",
      },
    });
    // Past the latest time a date can hold: refused the same way, not a RangeError of the step.
    expect(await engine.run(def, { ms: 1e16 })).toMatchObject({
      status: 'failed',
      failure: { code: 'INPUT_VALIDATION', errorMessage: expect.stringContaining('ms is too long') },
    });
  });

  it('an until past the latest time a date can hold fails naming the field', async () => {
    const { engine } = sleeper();
    const def = defineReactor('far-until', (r: ReactorBuilder<{ at: number }>) =>
      r.sleep('wait', { until: r.input('at', { type: 'number' }) }),
    );
    engine.register(def);
    expect(await engine.run(def, { at: 1e20 })).toMatchObject({
      status: 'failed',
      failure: {
        code: 'INPUT_VALIDATION',
        errorMessage: expect.stringContaining("sleep 'wait': until must be no later than +275760-09-13T00:00:00.000Z"),
      },
    });
  });

  it('refuses bad options when the reactor is defined', () => {
    const define = (options: unknown) => () =>
      defineReactor('bad-options', (r: ReactorBuilder<object>) => {
        r.sleep('wait', options as never);
      });
    expect(define({ ms: 1, until: undefined, extra: 1 })).toThrow(
      "Reactor 'bad-options': sleep 'wait': unknown option 'extra'; a sleep takes 'ms' or 'until', and 'waitFor'.",
    );
    expect(define({})).toThrow("give exactly one of 'ms' (a duration) or 'until' (a time)");
    expect(define({ ms: -1 })).toThrow('ms must be a finite number of milliseconds >= 0 (got -1)');
    expect(define({ ms: Infinity })).toThrow(DefinitionError);
    expect(define({ until: '2026-01-01' })).toThrow('until must be a ref');
  });

  it('cancel while sleeping undoes what ran (as while paused) and the wake-up does nothing', async () => {
    const log: string[] = [];
    const { engine, clock, locks, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: DAY, waitFor: ['reserve'] }));
    engine.register(def);
    const { runId } = await engine.run(def, {});

    const cancelled = await engine.cancel(runId, 'customer changed their mind');
    expect(cancelled).toMatchObject({ status: 'cancelled', reason: 'customer changed their mind' });
    expect(log).toEqual(['run:reserve', 'undo:reserve']);
    expect(await locks.isHeld(runLeaseKey(runId))).toBe(false);

    clock.advance(DAY);
    await settle();
    expect(await engine.get(runId)).toMatchObject({ status: 'cancelled' });
    expect((await engine.get(runId))?.sleeping).toBeUndefined();
    expect(log).toEqual(['run:reserve', 'undo:reserve']);
  });

  it('undo while sleeping works as for a paused run; undo after it woke says a sleep has nothing to undo', async () => {
    const log: string[] = [];
    const { engine, clock, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: DAY, waitFor: ['reserve'] }));
    engine.register(def);

    const sleeping = await engine.run(def, {});
    expect(await engine.undo(sleeping.runId)).toMatchObject({ status: 'cancelled' });
    expect(log).toEqual(['run:reserve', 'undo:reserve']);

    log.length = 0;
    const woke = await engine.run(def, {});
    clock.advance(DAY);
    await settle();
    expect(await engine.get(woke.runId)).toMatchObject({ status: 'completed' });
    expect(await engine.undo(woke.runId)).toMatchObject({ status: 'cancelled', rollbackFailures: [] });
    expect(log).toEqual(['run:reserve', 'run:ship', 'undo:reserve']);
    // The sleep is not on the undo stack: nothing is attempted for it.
    const undone = (await engine.get(woke.runId))?.trace.filter((t) => t.type === 'undo').map((t) => t.step);
    expect(undone).toEqual(['ship', 'reserve']);
  });

  it('a lost wake-up job: the sweeper leaves the run alone until it is due, then wakes it', async () => {
    const log: string[] = [];
    const clock = new TestClock();
    // Retention of 30 days: the week is one hop (hops are tested above).
    const first = sleeper(clock, { interruptRetentionMs: 30 * DAY });
    const def = coolOff(log, (r) => r.sleep('wait', { ms: 7 * DAY, waitFor: ['reserve'] }));
    first.engine.register(def);
    const { runId } = await first.engine.run(def, {});
    // Every process stops: the delayed job is gone with the in-process queue.
    first.dispatcher.close();

    // A new process on the same storage, with a sweeper.
    const dispatcher = new InProcessJobDispatcher(clock);
    const engine = new ReactorEngine({
      storage: first.storage,
      locks: first.locks,
      maps: first.maps,
      interrupts: first.interrupts,
      coordination: first.coordination,
      dispatcher,
      clock,
      leaseTtlMs: 30_000,
      interruptRetentionMs: 30 * DAY,
    });
    engine.register(def);
    dispatcher.setHandler((job) => engine.handleJob(job));

    clock.advance(6 * DAY);
    expect(await engine.recoverStalled()).toBe(0); // not due: the index sorts it at its wake-up time
    clock.advance(DAY + 30_000);
    expect(await engine.recoverStalled()).toBe(1);
    await settle(dispatcher);
    expect(await engine.get(runId)).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: clock.now() - 30_000 } },
    });
    expect(log).toEqual(['run:reserve', 'run:ship']);
  });

  it('a sleep inside a composed child parks the parent; the view names it by path', async () => {
    const { engine, clock, settle } = sleeper();
    const child = defineReactor('nap', (r: ReactorBuilder<object>) => r.sleep('wait', { ms: DAY }));
    const parent = defineReactor('parent', (r: ReactorBuilder<object>) => r.compose('child', child, {}));
    engine.register(child);
    engine.register(parent);
    const outcome = await engine.run(parent, {});
    expect(outcome).toMatchObject({
      status: 'dispatched',
      sleeping: { step: 'child.wait', wakeAt: clock.now() + DAY },
    });
    clock.advance(DAY);
    await settle();
    expect(await engine.get(outcome.runId)).toMatchObject({ status: 'completed', value: { sleptUntil: clock.now() } });
  });

  it('is refused in a map element, naming the reactor and step', async () => {
    const { engine } = sleeper();
    const def = defineReactor('map-sleep', (r: ReactorBuilder<{ items: number[] }>) =>
      r.map('each', {
        source: r.input('items'),
        element: (e: ReactorBuilder<{ n: number }>) => e.sleep('wait', { ms: 10 }),
        inputs: (item) => ({ n: item }),
      }),
    );
    engine.register(def);
    expect(await engine.run(def, { items: [1] })).toMatchObject({
      status: 'failed',
      failure: {
        code: 'CONFIGURATION_INVALID',
        errorMessage: expect.stringContaining("sleep 'wait': a sleep cannot run in a map element"),
      },
    });
  });

  it('a wake-up delivered early is delayed again: the run sleeps on and wakes at its time, each step once', async () => {
    const log: string[] = [];
    const { engine, clock, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: DAY, waitFor: ['reserve'] }));
    engine.register(def);
    const start = clock.now();
    const { runId } = await engine.run(def, {});

    // A duplicate or stray resume job delivered half-way through the sleep.
    clock.advance(DAY / 2);
    await engine.handleJob({ kind: 'resume', runId, reactorName: def.name });
    await settle();
    expect(await engine.get(runId)).toMatchObject({
      status: 'running',
      sleeping: { step: 'wait', wakeAt: start + DAY },
    });
    expect(log).toEqual(['run:reserve']);

    clock.advance(DAY / 2 - 1);
    await settle();
    expect(log).toEqual(['run:reserve']);
    clock.advance(1);
    await settle();
    expect(await engine.get(runId)).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: start + DAY } },
      attempts: { wait: 1 },
    });
    expect(log).toEqual(['run:reserve', 'run:ship']);
  });

  /** `quick` then a sleep; `slow` runs beside them and `independent` waits for `slow` only. */
  function besideSleep(log: string[], slow: Promise<void>) {
    return defineReactor('beside-sleep', (r: ReactorBuilder<object>) => {
      r.step('quick', () => (log.push('run:quick'), success(1)), {});
      r.step('slow', async () => (await slow, log.push('run:slow'), success(2)), {});
      r.sleep('wait', { ms: DAY, waitFor: ['quick'] });
      // Depends on `slow` only, not on the sleep.
      r.step('independent', () => (log.push('run:independent'), success(3)), {}, { waitFor: ['slow'] });
      return r.step('after', () => (log.push('run:after'), success(4)), {}, { waitFor: ['wait', 'independent'] });
    });
  }

  /** Run `def` until it sleeps, `slow` released once `quick` ran (so it is in flight when the run reaches the sleep). */
  async function runToSleep(
    engine: ReactorEngine,
    def: ReturnType<typeof besideSleep>,
    log: string[],
    slow: () => void,
  ) {
    const running = engine.run(def, {});
    await waitUntil(() => log.includes('run:quick'));
    slow();
    return running;
  }

  it('steps that do not depend on the sleep still wait for it (those in flight finish first)', async () => {
    const log: string[] = [];
    // Retention of 30 days: the day is one hop.
    const { engine, clock, settle } = sleeper(new TestClock(), { interruptRetentionMs: 30 * DAY });
    const slow = deferred();
    const def = besideSleep(log, slow.promise);
    engine.register(def);
    const start = clock.now();
    const outcome = await runToSleep(engine, def, log, slow.resolve);
    expect(outcome).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait', wakeAt: start + DAY } });
    // `slow` was in flight when the run reached the sleep: it finished; `independent` became ready
    // after that and waits for the wake-up although it does not depend on the sleep.
    expect(log).toEqual(['run:quick', 'run:slow']);

    clock.advance(DAY - 1);
    await settle();
    expect(log).toEqual(['run:quick', 'run:slow']);
    expect((await engine.get(outcome.runId))?.completed).not.toContain('independent');
    clock.advance(1);
    await settle();
    expect(await engine.get(outcome.runId)).toMatchObject({ status: 'completed', value: 4 });
    expect(log).toEqual(['run:quick', 'run:slow', 'run:independent', 'run:after']);
  });

  it('a sleep parked in hops wakes the run at each hop: a step that does not depend on it starts at the first hop', async () => {
    const log: string[] = [];
    const HOUR = 60 * 60 * 1000;
    // Retention of 10 hours: the day parks in hops of 5 hours.
    const { engine, clock, settle } = sleeper(new TestClock(), { interruptRetentionMs: 10 * HOUR });
    const slow = deferred();
    const def = besideSleep(log, slow.promise);
    engine.register(def);
    const start = clock.now();
    const outcome = await runToSleep(engine, def, log, slow.resolve);
    expect(log).toEqual(['run:quick', 'run:slow']);

    clock.advance(5 * HOUR - 1);
    await settle();
    expect(log).toEqual(['run:quick', 'run:slow']);
    clock.advance(1);
    await settle();
    expect(log).toEqual(['run:quick', 'run:slow', 'run:independent']);
    expect(await engine.get(outcome.runId)).toMatchObject({ status: 'running', sleeping: { wakeAt: start + DAY } });

    for (let hour = 5; hour < 24; hour += 5) {
      clock.advance(Math.min(5, 24 - hour) * HOUR);
      await settle();
    }
    expect(await engine.get(outcome.runId)).toMatchObject({ status: 'completed', value: 4 });
    expect(log).toEqual(['run:quick', 'run:slow', 'run:independent', 'run:after']);
  });

  describe.each([
    ['lock', { lock: { key: () => 'account:a' } }, 'LOCK_CONTENDED'],
    ['semaphore slot', { semaphore: { key: () => 'crm', limit: 1 } }, 'SEMAPHORE_FULL'],
  ] as const)('a reactor %s the run holds', (_what, options, code) => {
    it('is kept across the sleep (past its TTL), and given back when the run ends', async () => {
      const log: string[] = [];
      const { engine, clock, settle } = sleeper();
      const def = defineReactor(
        `held-${code}`,
        (r: ReactorBuilder<object>) => {
          r.sleep('wait', { ms: DAY });
          return r.step('ship', () => (log.push('run:ship'), success('shipped')), {}, { waitFor: ['wait'] });
        },
        options,
      );
      engine.register(def);
      const sleeping = await engine.run(def, {});
      expect(sleeping).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait' } });

      // Another run of the key is refused while the first sleeps, well past the TTL (60 s).
      await expect(engine.run(def, {})).rejects.toMatchObject({ code });
      clock.advance(DAY / 2);
      await settle();
      await expect(engine.run(def, {})).rejects.toMatchObject({ code });
      clock.advance(DAY / 2 - 1);
      await settle();
      await expect(engine.run(def, {})).rejects.toMatchObject({ code });

      clock.advance(1);
      await settle();
      expect(await engine.get(sleeping.runId)).toMatchObject({ status: 'completed', value: 'shipped' });
      const next = await engine.run(def, {});
      expect(next).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait' } });
    });
  });

  it('a run reopened by retry (its job retries exhausted while it slept) keeps its wake-up time', async () => {
    const log: string[] = [];
    const { engine, clock, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: DAY, waitFor: ['reserve'] }));
    engine.register(def);
    const start = clock.now();
    const { runId } = await engine.run(def, {});

    // Its resume job could not be processed: the queue gave up on it, the run failed without a rollback.
    clock.advance(DAY / 4);
    await engine.failRun(runId, { code: 'JOB_RETRIES_EXHAUSTED', message: 'Redis timed out' });
    expect(await engine.get(runId)).toMatchObject({ status: 'failed' });

    clock.advance(DAY / 4);
    const reopened = await engine.retry(runId);
    expect(reopened.runId).toBe(runId);
    await settle();
    // Not started over (that would wake at start + 1.5 days): the same wake-up time.
    expect(await engine.get(runId)).toMatchObject({
      status: 'running',
      sleeping: { step: 'wait', wakeAt: start + DAY },
    });
    expect(log).toEqual(['run:reserve']);

    clock.advance(DAY / 2);
    await settle();
    expect(await engine.get(runId)).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: start + DAY } },
    });
    expect(log).toEqual(['run:reserve', 'run:ship']);
  });

  it('a run reopened by retry after its wake-up time has passed wakes at once, with the recorded time', async () => {
    const log: string[] = [];
    const { engine, clock, settle } = sleeper();
    const def = coolOff(log, (r) => r.sleep('wait', { ms: DAY, waitFor: ['reserve'] }));
    engine.register(def);
    const start = clock.now();
    const { runId } = await engine.run(def, {});
    await engine.failRun(runId, { code: 'JOB_RETRIES_EXHAUSTED', message: 'Redis timed out' });

    clock.advance(2 * DAY);
    await engine.retry(runId);
    await settle();
    expect(await engine.get(runId)).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: start + DAY } },
    });
    expect(log).toEqual(['run:reserve', 'run:ship']);
  });
});

/** Resolve once `condition()` holds, yielding to the event loop between checks. */
async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  if (!condition()) throw new Error('condition not met');
}
