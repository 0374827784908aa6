import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { systemClock } from '../../lib/core/ports/clock.port';
import { EmbeddedReactorRuntime } from '../../lib/runtime/embedded.runtime';
import { CapturingLogger } from '../nest/fixtures';

const job: ReactorJob = { kind: 'resume', runId: 'r1', reactorName: 'order' };

describe('EmbeddedReactorRuntime', () => {
  it('holds jobs dispatched before startWorkers and delivers them once started', async () => {
    const runtime = new EmbeddedReactorRuntime(systemClock, new CapturingLogger());
    const delivered: ReactorJob[] = [];
    await runtime.dispatcher.dispatch(job);

    runtime.startWorkers(async (j) => {
      delivered.push(j);
    });
    await runtime.dispatcher.idle();

    expect(delivered).toEqual([job]);
    await runtime.close();
  });

  it('drops held jobs when stopped before starting, and ignores a later start', async () => {
    const runtime = new EmbeddedReactorRuntime(systemClock, new CapturingLogger());
    const delivered: ReactorJob[] = [];
    await runtime.dispatcher.dispatch(job);

    await runtime.stopWorkers();
    runtime.startWorkers(async (j) => {
      delivered.push(j);
    });
    await runtime.dispatcher.idle();
    await runtime.close();

    expect(delivered).toEqual([]);
  });

  it('logs a job that throws, naming the run and reactor', async () => {
    const logger = new CapturingLogger();
    const runtime = new EmbeddedReactorRuntime(systemClock, logger);
    runtime.startWorkers(async () => {
      throw new Error('worker broke');
    });

    await runtime.dispatcher.dispatch(job);
    await runtime.dispatcher.idle();
    await runtime.close();

    expect(logger.messages('error')).toEqual([
      expect.stringContaining("Job 'resume' for run 'r1' (reactor 'order') failed: Error: worker broke"),
    ]);
  });
});
