import { ReactorEngine } from '../../lib/core/engine/reactor-engine';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { newRunState } from '../../lib/core/model/run-state';
import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { success } from '../../lib/core/results/step-outcome';
import { InProcessJobDispatcher } from '../../lib/runtime/in-process-job.dispatcher';
import { createMemoryAdapters } from '../../lib/storage/memory';
import { FakeClock } from '../../lib/testing/fake-clock';
import { deferred } from './harness';

describe('what a recovery sweep reports (embedded runtime)', () => {
  it('the jobs it added: none for a run whose recovery job is still pending', async () => {
    const clock = new FakeClock();
    const { storage, locks } = createMemoryAdapters(clock);
    const dispatcher = new InProcessJobDispatcher(clock);
    const engine = new ReactorEngine({ storage, locks, dispatcher, clock });
    const def = defineReactor('sweep-count', (r: ReactorBuilder<object>) => r.step('one', () => success(1), {}));
    engine.register(def);
    // A busy worker: the recovery job it takes stays pending until the test lets it go.
    const taken: ReactorJob[] = [];
    const busy = deferred();
    const entered = deferred();
    dispatcher.setHandler(async (job) => {
      taken.push(job);
      entered.resolve();
      await busy.promise;
    });
    const state = newRunState(def, 'stalled-1', {}, clock.now());
    state.status = 'running';
    await storage.save(state, { createOnly: true });
    clock.advance(120_000);

    expect(await engine.recoverStalled({ graceMs: 60_000 })).toBe(1);
    await entered.promise;
    expect(await engine.recoverStalled({ graceMs: 60_000 })).toBe(0);
    expect(taken).toEqual([{ kind: 'resume', runId: 'stalled-1', reactorName: 'sweep-count' }]);

    busy.resolve();
    await dispatcher.idle();
    // Its job is done (and the run still stalled, since this worker did nothing): the next sweep adds one.
    expect(await engine.recoverStalled({ graceMs: 60_000 })).toBe(1);
    await dispatcher.idle();
    expect(taken).toHaveLength(2);
  });
});
