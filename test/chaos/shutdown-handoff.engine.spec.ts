/**
 * The hand-off at shutdown, in one process (the engine on memory adapters; shutdown-handoff.spec.ts
 * runs it with real worker processes and SIGTERM): `engine.drain(graceMs, { handOff: true })`
 * enqueues a resume of each run it stopped, after the run's lease was given back; without the
 * option nothing is enqueued (the embedded runtime: its queue ends with the process); and a
 * hand-off job delivered back to the engine that is shutting down is stopped at once and never
 * handed off again (no loop).
 */
import type { DispatchOptions, JobDispatcher, ReactorJob } from '../../lib/core';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepContext } from '../../lib/core/definition/step';
import { runLeaseKey } from '../../lib/core/model/keys';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from '../core/harness';

/** a -> b; `b` says it started, then waits for its signal and throws its reason (a step that honours it). */
function cooperative(entered: (ctx: StepContext) => void) {
  return defineReactor('cooperative', (r: ReactorBuilder<object>) => {
    const a = r.step('a', { run: () => success('A') }, {});
    return r.step(
      'b',
      {
        run: async (_args: object, ctx: StepContext) => {
          entered(ctx);
          throw await new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(ctx.signal.reason)));
        },
      },
      {},
      { waitFor: [a] },
    );
  });
}

/** A dispatcher that records each job, and whether the run's lease was held when it was enqueued. */
class RecordingDispatcher implements JobDispatcher {
  readonly jobs: Array<{ job: ReactorJob; leaseHeld: boolean; options: DispatchOptions }> = [];
  constructor(private readonly isHeld: (key: string) => Promise<boolean>) {}
  async dispatch(job: ReactorJob, options: DispatchOptions = {}): Promise<void> {
    this.jobs.push({ job, leaseHeld: await this.isHeld(runLeaseKey(job.runId)), options });
  }
}

async function stoppedAtShutdown(handOff: boolean | undefined) {
  const h = createHarness();
  const dispatcher = new RecordingDispatcher((key) => h.locks.isHeld(key));
  const { engine, locks, recorder } = createHarness({ dispatcher, locks: h.locks, storage: h.storage });
  const def = cooperative(() => inside.resolve());
  const inside = deferred();
  engine.register(def);
  const running = engine.run(def, {});
  await inside.promise;
  const runId = recorder.events.find((e) => e.type === 'reactor.start')!.runId;
  const drained = await engine.drain(5, handOff === undefined ? undefined : { handOff });
  return { engine, dispatcher, locks, runId, drained, outcome: await running, storage: h.storage };
}

describe('shutdown hand-off (engine.drain, in process)', () => {
  it('with handOff, a run stopped at shutdown is enqueued again at once, after its lease was given back', async () => {
    const { dispatcher, locks, runId, drained, outcome, storage } = await stoppedAtShutdown(true);
    expect(drained).toEqual({ aborted: 1, left: 0 });
    expect(outcome.status).toBe('dispatched');
    expect(dispatcher.jobs).toEqual([
      { job: { kind: 'resume', runId, reactorName: 'cooperative' }, leaseHeld: false, options: {} },
    ]);
    expect(await locks.isHeld(runLeaseKey(runId))).toBe(false);
    // The job carries identity only; the run as last stored is what the next worker resumes.
    const stored = await storage.load(runId);
    expect(stored?.status).toBe('running');
    expect(stored?.completed).toEqual(['a']);
  });

  it('without handOff (the default, and the embedded runtime) nothing is enqueued: the run is left for the sweeper', async () => {
    for (const handOff of [undefined, false]) {
      const { dispatcher, locks, runId, drained } = await stoppedAtShutdown(handOff);
      expect(drained).toEqual({ aborted: 1, left: 0 });
      expect(dispatcher.jobs).toEqual([]);
      expect(await locks.isHeld(runLeaseKey(runId))).toBe(false);
    }
  });

  it('a hand-off job delivered back to the engine that is shutting down is stopped at once and not handed off again', async () => {
    const { engine, dispatcher, locks, runId, storage } = await stoppedAtShutdown(true);
    expect(dispatcher.jobs).toHaveLength(1);
    await engine.handleJob(dispatcher.jobs[0].job);
    // Stopped before its first step (the drain's grace has passed): nothing written, nothing enqueued.
    expect(dispatcher.jobs).toHaveLength(1);
    expect(await locks.isHeld(runLeaseKey(runId))).toBe(false);
    expect((await storage.load(runId))?.status).toBe('running');
  });

  it('a run that completes within the grace is not handed off', async () => {
    const h = createHarness();
    const dispatcher = new RecordingDispatcher((key) => h.locks.isHeld(key));
    const { engine } = createHarness({ dispatcher, locks: h.locks, storage: h.storage });
    const gate = deferred();
    const inside = deferred();
    const def = defineReactor('quick', (r: ReactorBuilder<object>) =>
      r.step('only', { run: async () => (inside.resolve(), await gate.promise, success('done')) }, {}),
    );
    const running = engine.run(def, {});
    await inside.promise;
    const draining = engine.drain(30_000, { handOff: true });
    gate.resolve();
    expect(await draining).toEqual({ aborted: 0, left: 0 });
    expect((await running).status).toBe('completed');
    expect(dispatcher.jobs).toEqual([]);
  });
});
