import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { InvalidRunStateError, RunNotFoundError } from '../../lib/core/errors/run-state.error';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

/** a -> b -> c, each undoable; `b` waits for `gate` when given one. */
function chain(log: string[], gate?: Promise<void>) {
  return defineReactor('chain', (r: ReactorBuilder<object>) => {
    const a = r.step('a', { run: () => (log.push('run:a'), success('A')), undo: () => log.push('undo:a') }, {});
    const b = r.step(
      'b',
      {
        run: async () => {
          log.push('run:b');
          await gate;
          return success('B');
        },
        undo: () => log.push('undo:b'),
      },
      {},
      { waitFor: [a] },
    );
    return r.step(
      'c',
      { run: () => (log.push('run:c'), success('C')), undo: () => log.push('undo:c') },
      {},
      { waitFor: [b] },
    );
  });
}

describe('cancel(runId, reason)', () => {
  it('a running run stops at the next step boundary: the step in flight finishes, completed steps are undone newest first', async () => {
    const { engine, recorder } = createHarness();
    const log: string[] = [];
    const gate = deferred();
    const running = engine.run(chain(log, gate.promise), {});
    while (!log.includes('run:b')) await new Promise((r) => setImmediate(r));
    const runId = recorder.events.find((e) => e.type === 'reactor.start')!.runId;

    // The caller holds the run: cancel records the request and returns the run as it is now.
    const now = await engine.cancel(runId, 'customer changed their mind');
    expect(now.status).toBe('dispatched'); // not finished: the caller's execution cancels it
    gate.resolve();
    const outcome = await running;

    expect(log).toEqual(['run:a', 'run:b', 'undo:b', 'undo:a']);
    expect(outcome.status).toBe('cancelled');
    const view = await engine.get(runId);
    expect(view?.status).toBe('cancelled');
    expect(view?.cancellation).toEqual({ reason: 'customer changed their mind', rollbackFailures: [] });
    expect(view?.completed).toEqual(['a', 'b']);
  });

  it('a run no process holds (waiting for a retry) is cancelled at once; its pending delivery then does nothing', async () => {
    const jobs: Array<{ job: ReactorJob; delayMs?: number }> = [];
    const dispatcher: JobDispatcher = {
      dispatch: async (job, options) => void jobs.push({ job, delayMs: options?.delayMs }),
    };
    const { engine } = createHarness({ dispatcher });
    const log: string[] = [];
    let calls = 0;
    const def = defineReactor(
      'retrying',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', { run: () => (log.push('run:a'), success('A')), undo: () => log.push('undo:a') }, {});
        r.step(
          'b',
          () => (log.push('run:b'), ++calls < 5 ? failure('busy') : success('B')),
          {},
          {
            waitFor: [a],
            retries: { maxAttempts: 5, baseDelayMs: 1000 },
          },
        );
      },
      { background: { all: true } },
    );
    engine.register(def);
    const { runId } = await engine.start(def, {});
    await engine.handleJob(jobs[0].job);
    expect(jobs[1].delayMs).toBe(1000);

    const outcome = await engine.cancel(runId, 'stop');
    expect(outcome.status).toBe('cancelled');
    expect(log).toEqual(['run:a', 'run:b', 'undo:a']);
    await engine.handleJob(jobs[1].job);
    expect(log).toEqual(['run:a', 'run:b', 'undo:a']);
    expect((await engine.get(runId))?.cancellation?.reason).toBe('stop');
  });

  it('is refused with a clear error for a finished run, and for a run that does not exist', async () => {
    const { engine } = createHarness();
    const done = await engine.run(chain([]), {});
    expect(done.status).toBe('completed');
    const refused = await engine.cancel(done.runId, 'late').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidRunStateError);
    expect((refused as Error).message).toBe(
      `Run '${done.runId}' is completed: a finished run cannot be cancelled; undo it instead (client.undo).`,
    );
    expect((await engine.get(done.runId))?.status).toBe('completed');
    await expect(engine.cancel('no-such-run', 'x')).rejects.toBeInstanceOf(RunNotFoundError);
  });
});
