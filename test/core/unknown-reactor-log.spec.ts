import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { EngineLogger } from '../../lib/core/engine/engine-options';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

/** Captures what the engine logs, by level. */
function capturingLogger() {
  const lines: Array<{ level: string; message: string }> = [];
  const logger: EngineLogger = {
    log: (message) => lines.push({ level: 'log', message }),
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message) => lines.push({ level: 'error', message }),
  };
  const about = (runId: string, level: string) =>
    lines.filter((l) => l.level === level && l.message.includes(runId)).map((l) => l.message);
  return { logger, lines, about };
}

const newer = defineReactor('unknown-here', (r: ReactorBuilder<object>) => r.step('one', () => success(1), {}));

/** A run of `newer` stored by a process that knows it; its first job, which nobody consumed. */
async function storedElsewhere(adapters: Pick<ReturnType<typeof createHarness>, 'storage' | 'locks'>) {
  const jobs: ReactorJob[] = [];
  const dispatcher: JobDispatcher = { dispatch: async (job) => void jobs.push(job) };
  const { engine } = createHarness({ dispatcher, storage: adapters.storage, locks: adapters.locks });
  const runId = (await engine.start(newer, {})).runId;
  return { runId, job: jobs[0] };
}

describe('a job for a reactor this worker does not know (embedded runtime)', () => {
  it('is handed back unknownReactorRetries times, logged once with the retry count, and once more when parked', async () => {
    const { logger, about } = capturingLogger();
    // The older worker: it registers nothing, and handles every job its dispatcher delivers.
    const older = createHarness({ logger, unknownReactorRetries: 4, unknownReactorDelayMs: 500 });
    const { runId, job } = await storedElsewhere(older);
    const before = await older.storage.load(runId);

    await older.engine.handleJob(job);
    await older.dispatcher.idle();

    expect(older.clock.sleeps).toEqual([500, 500, 500, 500]); // four hand-backs, then parked
    const warnings = about(runId, 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("reactor 'unknown-here' is not registered in this process");
    expect(warnings[0]).toContain('up to 4 times 500 ms apart');
    expect(warnings[0]).toContain("Finish the deploy of workers that register 'unknown-here'");
    const errors = about(runId, 'error');
    expect(errors).toEqual([expect.stringContaining(`Run '${runId}' of reactor 'unknown-here' is parked`)]);
    expect(errors[0]).toContain('4 of 4 hand-backs');
    expect(await older.storage.load(runId)).toEqual(before);
  });

  it('a sweeper offering the parked run again in the same process does not announce it again', async () => {
    const { logger, about } = capturingLogger();
    const older = createHarness({ logger, unknownReactorRetries: 2, unknownReactorDelayMs: 0 });
    const { runId, job } = await storedElsewhere(older);
    await older.engine.handleJob(job);
    await older.dispatcher.idle();
    // A new round: the recovery sweeper's job carries no hand-back count.
    await older.engine.handleJob({ kind: 'resume', runId, reactorName: 'unknown-here' });
    await older.dispatcher.idle();
    expect(about(runId, 'warn')).toHaveLength(1);
    expect(about(runId, 'error')).toHaveLength(2); // parked at the end of each round
  });

  it('with no hand-backs allowed the run is parked at once: one error, no warning', async () => {
    const { logger, about } = capturingLogger();
    const older = createHarness({ logger, unknownReactorRetries: 0 });
    const { runId, job } = await storedElsewhere(older);
    await older.engine.handleJob(job);
    await older.dispatcher.idle();
    expect(about(runId, 'warn')).toEqual([]);
    expect(about(runId, 'error')).toEqual([expect.stringContaining('is parked')]);
  });
});
