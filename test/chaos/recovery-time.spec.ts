/**
 * Recovery times when a worker process does not hand its run off, measured against the bound that
 * docs/recovery.md gives: the run's lease expires at most `leaseTtlMs` after its last extension
 * (extensions come every third of it), and the scheduled sweeper of another process re-enqueues
 * the run at its next tick (`sweeper.intervalMs`). Worker B runs the scheduled sweeper (1 s); no
 * other process sweeps.
 *
 * - SIGKILL inside a step: resumed within `leaseTtlMs + intervalMs` (plus the rest of the run).
 * - SIGTERM while a step ignores its signal: the process exits after two graces with the lease
 *   still held; resumed within `2 x shutdownGraceMs + leaseTtlMs + intervalMs`.
 *
 * Neither is early: nothing recovers the run before its lease could have expired. Set
 * CHAOS_REPORT=1 to print the measured times.
 */
import { CHAIN_STEPS } from './chaos.fixtures';
import { startChainUntilInsideS3, useChaosProducer, waitFor, WorkerProcess } from './chaos.harness';

const LEASE_TTL_MS = 3_000;
const SWEEP_INTERVAL_MS = 1_000;
const GRACE_MS = 500;
/** The rest of the run after it is re-enqueued (job pick-up, four steps), on a loaded 2-core machine. */
const SLACK_MS = 3_000;
/** The earliest a lease can expire after the process holding it stopped extending it. */
const EARLIEST_EXPIRY_MS = (LEASE_TTL_MS * 2) / 3 - 100;

function report(what: string, ms: number): void {
  if (process.env.CHAOS_REPORT) process.stderr.write(`[recovery] ${what}: ${ms} ms\n`);
}

describe('chaos: recovery time after a worker dies (lease TTL + sweep interval; Redis, BullMQ, child processes)', () => {
  const chaos = useChaosProducer('chaos-recovery-time', { leaseTtlMs: LEASE_TTL_MS });
  const { prefix } = chaos;

  /** Start a chain run in worker A (misbehaving at s3 per `envA`), then worker B with the sweeper. */
  async function runStuckInA(envA: Record<string, string>): Promise<{
    runId: string;
    workerA: WorkerProcess;
    workerB: WorkerProcess;
  }> {
    const workerA = await WorkerProcess.start('A', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS), ...envA });
    const runId = await startChainUntilInsideS3(chaos, workerA);
    // B is up before A goes, so the time measured is the recovery's, not B's boot.
    const workerB = await WorkerProcess.start('B', prefix, {
      LEASE_TTL_MS: String(LEASE_TTL_MS),
      SWEEPER_INTERVAL_MS: String(SWEEP_INTERVAL_MS),
    });
    return { runId, workerA, workerB };
  }

  async function completedWithin(runId: string, timeoutMs: number, workerB: WorkerProcess): Promise<void> {
    await waitFor(async () => (await chaos.producer.client.get(runId))?.status === 'completed', {
      timeoutMs,
      intervalMs: 50,
      what: () => `run completed (B:\n${workerB.output})`,
    });
  }

  async function expectFinishedOnce(runId: string): Promise<void> {
    const done = await chaos.producer.client.wait<string>(runId, { timeoutMs: 5_000 });
    expect(done.status === 'completed' && done.value).toBe('seed>s1>s2>s3>s4>s5>s6');
    const ran: Record<string, number> = {};
    for (const step of CHAIN_STEPS) ran[step] = Number(await chaos.redis.get(chaos.producer.keys.ran(runId, step)));
    expect(ran).toEqual({ s1: 1, s2: 1, s3: 2, s4: 1, s5: 1, s6: 1 });
  }

  it('SIGKILL inside a step: the scheduled sweeper of another worker resumes the run within leaseTtlMs + intervalMs', async () => {
    const { runId, workerA, workerB } = await runStuckInA({ CRASH_AT_STEP: 's3' });
    const killed = Date.now();
    await workerA.kill('SIGKILL');
    const bound = LEASE_TTL_MS + SWEEP_INTERVAL_MS + SLACK_MS;
    await completedWithin(runId, bound + 5_000, workerB);
    const elapsed = Date.now() - killed;
    report(`SIGKILL (leaseTtlMs ${LEASE_TTL_MS}, sweeper.intervalMs ${SWEEP_INTERVAL_MS}) -> completed`, elapsed);
    expect(elapsed).toBeGreaterThanOrEqual(EARLIEST_EXPIRY_MS);
    expect(elapsed).toBeLessThanOrEqual(bound);
    // The sweep logs once it is over (after its other recoveries), which may be after the run completed.
    await waitFor(async () => /Recovery sweep re-enqueued 1 stalled run\b/.test(workerB.output), {
      timeoutMs: 5_000,
      intervalMs: 50,
      what: () => `the sweep's log line (B:\n${workerB.output})`,
    });
    await expectFinishedOnce(runId);
  }, 90_000);

  it('SIGTERM while a step ignores its signal: no hand-off (the lease is kept); resumed within 2 x shutdownGraceMs + leaseTtlMs + intervalMs', async () => {
    // CRASH_AT_STEP hangs without reading its signal: the drain aborts it after the grace, waits a
    // second grace, and the process exits with the run's lease still held.
    const { runId, workerA, workerB } = await runStuckInA({
      CRASH_AT_STEP: 's3',
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    const sigterm = Date.now();
    workerA.child.kill('SIGTERM');
    const exit = await workerA.exited;
    expect(exit.signal === 'SIGTERM' || exit.code === 0).toBe(true);
    expect(workerA.output).not.toMatch(/handed off/);
    const bound = 2 * GRACE_MS + LEASE_TTL_MS + SWEEP_INTERVAL_MS + SLACK_MS;
    await completedWithin(runId, bound + 5_000, workerB);
    const elapsed = Date.now() - sigterm;
    report(
      `SIGTERM, step ignoring its signal (shutdownGraceMs ${GRACE_MS}, leaseTtlMs ${LEASE_TTL_MS}, sweeper.intervalMs ${SWEEP_INTERVAL_MS}) -> completed`,
      elapsed,
    );
    expect(elapsed).toBeGreaterThanOrEqual(EARLIEST_EXPIRY_MS);
    expect(elapsed).toBeLessThanOrEqual(bound);
    // The sweep logs once it is over (after its other recoveries), which may be after the run completed.
    await waitFor(async () => /Recovery sweep re-enqueued 1 stalled run\b/.test(workerB.output), {
      timeoutMs: 5_000,
      intervalMs: 50,
      what: () => `the sweep's log line (B:\n${workerB.output})`,
    });
    await expectFinishedOnce(runId);
  }, 90_000);
});
