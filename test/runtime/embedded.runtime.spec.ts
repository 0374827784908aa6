import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { systemClock } from '../../lib/core/ports/clock.port';
import { EmbeddedReactorRuntime } from '../../lib/runtime/embedded.runtime';
import { CapturingLogger } from '../nest/fixtures';
import { ManualClock } from '../conformance/manual-clock';
import { makeRunState, T0 } from '../conformance/run-state.factory';

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

  it('claims interrupts on the runs of its own storage', async () => {
    const runtime = new EmbeddedReactorRuntime(new ManualClock(), new CapturingLogger());
    const state = makeRunState({ status: 'paused' });
    await runtime.storage.save(state);
    const claim = { kind: 'timeout' as const, at: T0 };
    const options = { now: T0 + 5, retentionMs: 60_000 };
    await expect(runtime.interrupts.claim(state.runId, 'approve', claim, options)).resolves.toEqual({
      won: true,
      status: 'paused',
    });
    await expect(runtime.interrupts.claims(state.runId, ['approve'], 'take', T0 + 5)).resolves.toEqual({
      approve: claim,
    });
    expect(await runtime.storage.listActive(1, T0 + 5)).toEqual([]);
    expect(await runtime.storage.listActive(1, T0 + 6)).toEqual([state.runId]);
    await runtime.close();
  });

  it('coordinates on its clock with an in-memory coordination store', async () => {
    const clock = new ManualClock();
    const runtime = new EmbeddedReactorRuntime(clock, new CapturingLogger());
    await expect(runtime.coordination.now()).resolves.toBe(T0);
    await expect(runtime.coordination.acquireLock('invoice:42', 'run-a', 1000)).resolves.toEqual({
      acquired: true,
      fence: 1,
      count: 1,
    });
    clock.advance(1001);
    await expect(runtime.coordination.acquireLock('invoice:42', 'run-b', 1000)).resolves.toEqual({
      acquired: true,
      fence: 2,
      count: 1,
    });
    await runtime.close();
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
