import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { runLeaseKey } from '../../lib/core';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createMemoryAdapters } from '../../lib/storage/memory';
import { createHarness } from './harness';

/** A dispatcher that only records what it was asked to do. */
function recordingDispatcher() {
  const jobs: Array<{ job: ReactorJob; delayMs?: number }> = [];
  const dispatcher: JobDispatcher = {
    dispatch: async (job, options) => {
      jobs.push({ job, delayMs: options?.delayMs });
    },
  };
  return { dispatcher, jobs };
}

const twoSteps = (log: string[]) =>
  defineReactor(
    'two',
    (r: ReactorBuilder<object>) => {
      const a = r.step('a', { run: () => (log.push('run:a'), success('A')), undo: () => log.push('undo:a') }, {});
      r.step(
        'b',
        { run: () => (log.push('run:b'), success('B')), undo: () => log.push('undo:b') },
        {},
        { waitFor: [a] },
      );
    },
    { maxConcurrency: 1 },
  );

describe('durability: workers', () => {
  it('retries in a worker by re-enqueueing with the backoff delay, never sleeping in the job', async () => {
    const { engine, recorder, dispatcher } = createHarness();
    let calls = 0;
    const def = defineReactor(
      'bg-retry',
      (r: ReactorBuilder<object>) =>
        r.step(
          'flaky',
          () => (++calls < 3 ? failure('busy') : success(calls)),
          {},
          {
            retries: { maxAttempts: 3, baseDelayMs: 100 },
          },
        ),
      { background: { all: true } },
    );
    const started = await engine.run(def, {});
    const done = await engine.wait(started.runId, { timeoutMs: 5000 });
    await dispatcher.idle();
    expect(done.status === 'completed' && done.value).toBe(3);
    expect(done.attempts).toEqual({ flaky: 3 });
    // Each attempt was its own delivery of the run: three executions, two retries scheduled.
    expect(recorder.sequence(['reactor.start', 'step.retry'])).toEqual([
      'reactor.start',
      'step.retry:flaky',
      'reactor.start',
      'step.retry:flaky',
      'reactor.start',
    ]);
    expect(done.trace.filter((t) => t.type === 'retry').map((t) => t.delayMs)).toEqual([100, 200]);
  });

  it('re-enqueues a delivery that comes before a scheduled retry is due', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, clock } = createHarness({ dispatcher });
    const def = defineReactor('early', (r: ReactorBuilder<object>) =>
      r.step('x', () => failure('later'), {}, { retries: { maxAttempts: 2, baseDelayMs: 1000 } }),
    );
    engine.register(def);
    const runId = (await engine.start(def, {})).runId;
    await engine.handleJob(jobs[0].job);
    expect(jobs[1]).toEqual({ job: { kind: 'resume', runId, reactorName: 'early' }, delayMs: 1000 });
    clock.advance(400);
    await engine.handleJob(jobs[1].job);
    expect(jobs[2].delayMs).toBe(600);
    expect((await engine.get(runId))?.attempts).toEqual({ x: 1 });
  });

  it('snoozes a delivery of a run that another process holds, touching nothing', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, locks, storage } = createHarness({ dispatcher, snoozeDelayMs: 5000, snoozeJitterMs: 1000 });
    const def = twoSteps([]);
    const runId = (await engine.start(def, {})).runId;
    const before = await storage.load(runId);
    const held = await locks.acquire(runLeaseKey(runId), 60_000);
    expect(held).not.toBeNull();
    await engine.handleJob(jobs[0].job);
    expect(jobs[1].job).toEqual({ ...jobs[0].job, snoozes: 1 });
    expect(jobs[1].delayMs).toBeGreaterThanOrEqual(5000);
    expect(jobs[1].delayMs).toBeLessThan(6000);
    expect(await storage.load(runId)).toEqual(before);
  });

  it('finishes a rollback that a crashed process left half done', async () => {
    const log: string[] = [];
    const { engine, storage, dispatcher } = createHarness();
    const def = twoSteps(log);
    const done = await engine.run(def, {});
    // The state a process leaves when it dies after undoing 'b' during a rollback.
    const state = (await storage.load(done.runId))!;
    state.status = 'rolling_back';
    state.failure = {
      ...(state.failure ?? {}),
      message: 'c failed',
      code: 'STEP_FAILED',
      reactorName: 'two',
      stepName: 'c',
      exceptionClass: 'Error',
      errorMessage: 'c failed',
      retryable: true,
      inputs: {},
      rollbackFailures: [],
    };
    state.rollback = { target: 'failed', compensate: [], failures: [] };
    state.undoStack = state.undoStack.filter((e) => e.step === 'a');
    await storage.save(state, { reopen: true });
    log.length = 0;
    expect(await engine.recoverStalled({ graceMs: 0 })).toBe(1);
    const outcome = await engine.wait(done.runId, { timeoutMs: 5000 });
    await dispatcher.idle();
    expect(log).toEqual(['undo:a']);
    expect(outcome.status === 'failed' && outcome.failure.stepName).toBe('c');
  });
});

describe('durability: sweeper', () => {
  it('re-enqueues running runs with no lease past the grace period, and skips held or fresh ones', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, locks, clock } = createHarness({ dispatcher });
    const def = twoSteps([]);
    const stale = (await engine.start(def, {})).runId;
    const held = (await engine.start(def, {})).runId;
    await locks.acquire(runLeaseKey(held), 120_000);
    clock.advance(61_000);
    const fresh = (await engine.start(def, {})).runId;
    jobs.length = 0;
    expect(await engine.recoverStalled({ graceMs: 60_000 })).toBe(1);
    expect(jobs.map((j) => j.job.runId)).toEqual([stale]);
    expect(fresh).not.toBe(stale);
  });
});

describe('durability: records that cannot be used', () => {
  it('a worker that does not know the reactor hands the job back for one that does, touching nothing', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, storage, locks } = createHarness({ dispatcher });
    const log: string[] = [];
    const runId = (await engine.start(twoSteps(log), {})).runId;
    const before = await storage.load(runId);
    // Another process (an older release) that has not registered the reactor.
    const { engine: other } = createHarness({ dispatcher, storage, locks });
    await other.handleJob(jobs[0].job);

    expect(await storage.load(runId)).toEqual(before);
    expect(jobs[1]).toEqual({
      job: { kind: 'resume', runId, reactorName: 'two', deferrals: 1 },
      delayMs: 20_000,
    });
    // The worker that knows it runs the run to the end.
    await engine.handleJob(jobs[1].job);
    expect((await engine.get(runId))?.status).toBe('completed');
    expect(log).toEqual(['run:a', 'run:b']);
  });

  it('never touches a finished run, or one executing elsewhere, for a job naming a reactor it does not know', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, storage, locks } = createHarness({ dispatcher });
    const done = await engine.run(twoSteps([]), {});
    const finished = await storage.load(done.runId);
    const { engine: other } = createHarness({ dispatcher, storage, locks });
    await other.handleJob({ kind: 'resume', runId: done.runId, reactorName: 'some-other-reactor' });
    expect(await storage.load(done.runId)).toEqual(finished);

    const busy = (await engine.start(twoSteps([]), {})).runId;
    const held = (await locks.acquire(runLeaseKey(busy), 60_000))!;
    const waiting = await storage.load(busy);
    jobs.length = 0;
    await other.handleJob({ kind: 'resume', runId: busy, reactorName: 'some-other-reactor' });
    expect(await storage.load(busy)).toEqual(waiting);
    expect(jobs.map((j) => j.job.snoozes)).toEqual([1]); // snoozed: the holder carries on
    await locks.release(held);
  });

  it('parks a run after a bounded number of hand-backs, its record intact', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, storage, locks } = createHarness({ dispatcher });
    const runId = (await engine.start(twoSteps([]), {})).runId;
    const before = await storage.load(runId);
    const errors: string[] = [];
    const { engine: other } = createHarness({
      dispatcher,
      storage,
      locks,
      logger: { log: () => undefined, warn: () => undefined, error: (m) => errors.push(m) },
    });
    jobs.length = 0;
    await other.handleJob({ kind: 'resume', runId, reactorName: 'two', deferrals: 30 });
    expect(jobs).toEqual([]);
    expect(errors).toEqual([expect.stringContaining(`Run '${runId}' of reactor 'two' is parked`)]);
    expect(await storage.load(runId)).toEqual(before);
  });

  it('fails a run whose stored record is corrupt, once, and a definition change too', async () => {
    const clockless = createMemoryAdapters();
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine } = createHarness({ dispatcher, storage: clockless.storage, locks: clockless.locks });
    const def = twoSteps([]);
    const runId = (await engine.start(def, {})).runId;
    clockless.storage.writeRaw(runId, '{not json');
    await engine.handleJob(jobs[0].job);
    const view = await engine.get(runId);
    expect(view?.status).toBe('failed');
    expect(view?.failure?.code).toBe('CORRUPT_RECORD');

    const changed = (await engine.start(def, {})).runId;
    const state = (await clockless.storage.load(changed))!;
    state.definitionHash = 'older-shape';
    await clockless.storage.save(state);
    await engine.handleJob({ kind: 'resume', runId: changed, reactorName: 'two' });
    expect((await engine.get(changed))?.failure?.code).toBe('DEFINITION_CHANGED');
  });

  it('a run started under another definition fails with its whole record kept, and can still be undone', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const { engine, storage } = createHarness({ dispatcher });
    const log: string[] = [];
    const def = twoSteps(log);
    const runId = (await engine.start(def, {})).runId;
    // It ran `a` and was checkpointed, then a deploy changed the reactor's shape.
    const state = (await storage.load(runId))!;
    state.results.a = 'A';
    state.completed.push('a');
    state.undoStack.push({ step: 'a', args: {}, result: 'A' });
    state.definitionHash = 'older-shape';
    await storage.save(state);

    await engine.handleJob(jobs[0].job);
    const failed = await engine.get(runId);
    expect(failed?.status).toBe('failed');
    expect(failed?.failure?.code).toBe('DEFINITION_CHANGED');
    expect(failed?.results).toEqual({ a: 'A' });
    expect((await storage.load(runId))?.undoStack).toEqual([{ step: 'a', args: {}, result: 'A' }]);

    // The step implementations are still there by name: undo runs the undo of `a`.
    const undone = await engine.undo(runId);
    expect(undone.status).toBe('cancelled');
    expect(log).toEqual(['undo:a']);
  });

  it('fails a run with CONTEXT_TOO_LARGE instead of storing a huge result, undoing that step', async () => {
    const small = createMemoryAdapters(undefined, { maxContextBytes: 4_000 });
    const { engine } = createHarness({ storage: small.storage, locks: small.locks });
    const log: string[] = [];
    const def = defineReactor('big', (r: ReactorBuilder<object>) => {
      const a = r.step('a', { run: () => success('x'.repeat(10_000)), undo: () => log.push('undo:a') }, {});
      r.step('b', () => (log.push('run:b'), success(1)), {}, { waitFor: [a] });
    });
    const outcome = await engine.run(def, {});
    expect(log).toEqual(['undo:a']);
    expect(outcome.status === 'failed' && outcome.failure).toMatchObject({ code: 'CONTEXT_TOO_LARGE', stepName: 'a' });
    const stored = await engine.get(outcome.runId);
    expect(stored?.status).toBe('failed');
    expect(stored?.results).toEqual({});
  });

  it('marks a run failed when its job retries are exhausted, and never a finished one', async () => {
    const { dispatcher } = recordingDispatcher();
    const { engine } = createHarness({ dispatcher });
    const def = twoSteps([]);
    const stuck = (await engine.start(def, {})).runId;
    await engine.failRun(stuck, {
      code: 'JOB_RETRIES_EXHAUSTED',
      message: 'redis went away',
      exceptionClass: 'MaxRetriesPerRequestError',
    });
    expect((await engine.get(stuck))?.failure).toMatchObject({
      code: 'JOB_RETRIES_EXHAUSTED',
      errorMessage: 'redis went away',
    });
    const finished = await engine.run(
      defineReactor('fine', (r: ReactorBuilder<object>) => r.step('a', () => success(1), {})),
      {},
    );
    await engine.failRun(finished.runId, { code: 'JOB_RETRIES_EXHAUSTED', message: 'late' });
    expect((await engine.get(finished.runId))?.status).toBe('completed');
  });
});

describe('durability: background failures are logged', () => {
  it('a run that fails in a worker is logged with its code, and each undo that did not complete as an error', async () => {
    const warned: string[] = [];
    const errors: string[] = [];
    const { engine, dispatcher } = createHarness({
      logger: { log: () => undefined, warn: (m) => warned.push(m), error: (m) => errors.push(m) },
    });
    const def = defineReactor(
      'logged',
      (r: ReactorBuilder<object>) => {
        const a = r.step(
          'a',
          {
            run: () => success('A'),
            undo: () => {
              throw new Error('refund API down');
            },
          },
          {},
        );
        r.step('b', () => failure(new Error('card declined'), { retryable: false }), {}, { waitFor: [a] });
      },
      { background: { all: true } },
    );
    const started = await engine.run(def, {});
    await engine.wait(started.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();

    expect(warned).toEqual([
      expect.stringMatching(new RegExp(`Run '${started.runId}' failed \\(STEP_FAILED\\).*card declined`)),
    ]);
    expect(errors).toEqual([`Run '${started.runId}': the undo of step 'a' did not complete (raised): refund API down`]);
  });
});

describe('durability: a composed child retrying in a worker', () => {
  it('resumes the parent when the child step’s retry is due, not only when a sweeper finds it', async () => {
    const { engine, dispatcher, clock } = createHarness();
    let tries = 0;
    const child = defineReactor('flaky-child', (r: ReactorBuilder<object>) =>
      r.step(
        'call',
        () => (++tries === 1 ? failure(new Error('timeout')) : success('paid')),
        {},
        {
          retries: { maxAttempts: 2, baseDelayMs: 2_000 },
        },
      ),
    );
    engine.register(child);
    const parent = defineReactor('parent', (r: ReactorBuilder<object>) => r.compose('pay', child, {}), {
      background: { all: true },
    });
    const started = await engine.run(parent, {});
    const outcome = await engine.wait(started.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();

    expect(outcome.status).toBe('completed');
    expect(outcome.status === 'completed' && outcome.value).toBe('paid');
    expect(tries).toBe(2);
    // Resumed by the delayed job of the backoff, on the engine's clock.
    expect(clock.sleeps).toContain(2_000);
  });
});

describe('durability: reactor versions side by side', () => {
  const checkout = (version: number, log: string[]) =>
    defineReactor(
      'versioned',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', () => (log.push(`v${version}:a`), success('A')), {});
        // Version 2 adds a step: another shape.
        if (version === 2) r.step('b', () => (log.push('v2:b'), success('B')), {}, { waitFor: [a] });
      },
      { version, background: { all: true } },
    );

  it('a run resumes under the version it started with; new runs take the highest version', async () => {
    const { dispatcher, jobs } = recordingDispatcher();
    const log: string[] = [];
    const { engine: before, storage, locks } = createHarness({ dispatcher });
    const old = (await before.start(checkout(1, log), {})).runId;

    // The next release registers version 2 beside version 1.
    const { engine: after } = createHarness({ dispatcher, storage, locks });
    after.register(checkout(1, log));
    after.register(checkout(2, log));
    await after.handleJob(jobs[0].job);
    expect((await after.get(old))?.status).toBe('completed');
    expect(log).toEqual(['v1:a']);

    const fresh = (await after.start('versioned', {})).runId;
    await after.handleJob(jobs[jobs.length - 1].job);
    expect((await after.get(fresh))?.status).toBe('completed');
    expect(log).toEqual(['v1:a', 'v2:a', 'v2:b']);
    expect((await storage.load(fresh))?.reactorVersion).toBe('2');
  });

  it('the pre-deploy check lists the live runs this build cannot carry on, and only those', async () => {
    const { dispatcher } = recordingDispatcher();
    const { engine: before, storage, locks } = createHarness({ dispatcher });
    const onV1 = (await before.start(checkout(1, []), {})).runId;
    const unknown = (await before.start(twoSteps([]), {})).runId;

    // A build with version 2 only, and no 'two' reactor.
    const { engine: v2Only } = createHarness({ dispatcher, storage, locks });
    v2Only.register(checkout(2, []));
    expect(await v2Only.runsOnOtherDefinitions()).toEqual(
      expect.arrayContaining([
        { runId: onV1, reactorName: 'versioned', version: '1', status: 'running', registeredVersions: ['2'] },
        { runId: unknown, reactorName: 'two', version: '1', status: 'running', registeredVersions: [] },
      ]),
    );
    // A build that keeps version 1 beside version 2 (and knows 'two') can carry every one of them on.
    const { engine: both } = createHarness({ dispatcher, storage, locks });
    both.register(checkout(1, []));
    both.register(checkout(2, []));
    both.register(twoSteps([]));
    expect(await both.runsOnOtherDefinitions()).toEqual([]);
  });
});
