import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { InvalidRunStateError } from '../../lib/core/errors/run-state.error';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

describe('retry(runId)', () => {
  it('a failed run that was rolled back starts again as a new run with the same inputs, linked to the first', async () => {
    const { engine, dispatcher } = createHarness();
    const log: string[] = [];
    let broken = true;
    const def = defineReactor('ship', (r: ReactorBuilder<{ order: string }>) => {
      const order = r.input('order', { type: 'string' });
      const a = r.step(
        'reserve',
        { run: () => (log.push('reserve'), success('r')), undo: () => log.push('release') },
        {},
      );
      return r.step(
        'ship',
        ({ order: o }: { order: string }) => (
          log.push(`ship:${o}`),
          broken ? failure('no courier', { retryable: false }) : success(`shipped ${o}`)
        ),
        { order },
        { waitFor: [a] },
      );
    });
    engine.register(def);
    const first = await engine.run(def, { order: 'o-1' });
    expect(first.status).toBe('failed');
    expect(log).toEqual(['reserve', 'ship:o-1', 'release']);

    const retried = await engine.retry(first.runId);
    expect(retried.runId).not.toBe(first.runId);
    const again = await engine.wait(retried.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();
    expect(again.status).toBe('failed');
    const view = await engine.get(retried.runId);
    expect(view).toMatchObject({ retriedFrom: first.runId, retryCount: 1, inputs: { order: 'o-1' } });

    broken = false;
    const third = await engine.retry(retried.runId);
    const done = await engine.wait(third.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();
    expect(done.status === 'completed' && done.value).toBe('shipped o-1');
    expect(await engine.get(third.runId)).toMatchObject({ retriedFrom: retried.runId, retryCount: 2 });
    // The first run is untouched.
    expect((await engine.get(first.runId))?.status).toBe('failed');
  });

  it('a run that stopped without a rollback (job retries exhausted) resumes from its failed step, completed steps kept', async () => {
    const jobs: ReactorJob[] = [];
    const dispatcher: JobDispatcher = { dispatch: async (job) => void jobs.push(job) };
    const { engine } = createHarness({ dispatcher });
    const log: string[] = [];
    let calls = 0;
    const def = defineReactor(
      'import',
      (r: ReactorBuilder<object>) => {
        const a = r.step(
          'fetch',
          { run: () => (log.push('fetch'), success('rows')), undo: () => log.push('undo:fetch') },
          {},
        );
        return r.step(
          'store',
          () => (log.push('store'), ++calls === 1 ? failure('db down') : success('ok')),
          {},
          {
            waitFor: [a],
            retries: { maxAttempts: 3, baseDelayMs: 1000 },
          },
        );
      },
      { background: { all: true } },
    );
    engine.register(def);
    const { runId } = await engine.start(def, {});
    await engine.handleJob(jobs[0]);
    // The resume job of the retry could not be processed: the queue gave up on it.
    await engine.failRun(runId, { code: 'JOB_RETRIES_EXHAUSTED', message: 'Redis timed out' });
    expect((await engine.get(runId))?.status).toBe('failed');

    const resumed = await engine.retry(runId);
    expect(resumed.runId).toBe(runId);
    await engine.handleJob(jobs[jobs.length - 1]);
    const view = await engine.get(runId);
    expect(view?.status).toBe('completed');
    expect(log).toEqual(['fetch', 'store', 'store']);
    expect(view?.failure).toBeUndefined();
  });

  it('is refused for a run that is not failed', async () => {
    const { engine } = createHarness();
    const def = defineReactor('fine', (r: ReactorBuilder<object>) => r.step('x', () => success(1), {}));
    const done = await engine.run(def, {});
    const refused = await engine.retry(done.runId).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidRunStateError);
    expect((refused as Error).message).toBe(`Run '${done.runId}' is completed; only a failed run can be retried.`);
  });
});
