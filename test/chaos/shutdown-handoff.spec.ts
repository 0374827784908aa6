/**
 * Graceful shutdown hands off: a worker process that gets SIGTERM while a step runs stops the
 * run after `shutdownGraceMs` (the step honours its signal), gives the run's lease back and puts a
 * resume job on the queue at once, so another worker process finishes the run promptly: long before
 * the lease TTL (60 s here) would have let a sweeper recover it. No sweeper runs anywhere in these
 * tests, so only the hand-off can finish the run. The same holds for a fan-out map's elements
 * (each element's job goes back on the queue). (A step that ignores its signal past the second
 * grace keeps the lease: recovery then waits for the lease TTL and a sweep, as after a SIGKILL;
 * see recovery-time.spec.ts.)
 *
 * Set CHAOS_REPORT=1 to print the measured times.
 */
import { elementRunId, mapIdOf } from '../../lib/core/model/keys';
import type { MapResults } from '../../lib/core/map/map-results';
import { CHAIN_STEPS, ChaosMapReactor, mapItems } from './chaos.fixtures';
import { startChainUntilInsideS3, useChaosProducer, waitFor, WorkerProcess } from './chaos.harness';

/** Far above every wait of these tests: a run finished before it was not recovered by a lease expiry. */
const LONG_LEASE_TTL_MS = 60_000;
/** Worker A's `shutdownGraceMs`: the run goes on this long after SIGTERM, then its step is aborted. */
const GRACE_MS = 500;
/** A hand-off must finish the run within this after SIGTERM (grace, job pick-up, the rest of the run). */
const PROMPT_MS = 10_000;

function report(what: string, ms: number): void {
  if (process.env.CHAOS_REPORT) process.stderr.write(`[recovery] ${what}: ${ms} ms\n`);
}

describe('chaos: SIGTERM hands the run off to another worker (Redis, BullMQ, child processes)', () => {
  const chaos = useChaosProducer('chaos-handoff', { leaseTtlMs: LONG_LEASE_TTL_MS });
  const { prefix } = chaos;

  it('SIGTERM during a long step: worker B finishes the run well within the lease TTL, the step run twice, duplicates harmless', async () => {
    const { client, keys, runtime } = chaos.producer;
    const workerA = await WorkerProcess.start('A', prefix, {
      SLOW_AT_STEP: 's3',
      SLOW_MS: '120000', // the long step: far longer than the test, unless its signal is aborted
      LEASE_TTL_MS: String(LONG_LEASE_TTL_MS),
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    const runId = await startChainUntilInsideS3(chaos, workerA);
    expect((await client.get(runId))?.completed).toEqual(['s1', 's2']);
    // B is consuming before A goes, so the time measured is the hand-off's, not B's boot.
    const workerB = await WorkerProcess.start('B', prefix, {
      LEASE_TTL_MS: String(LONG_LEASE_TTL_MS),
      SNOOZE_DELAY_MS: '200',
    });
    // Two more deliveries of the run (a sweeper's, a BullMQ retry's) while A still holds it: B finds
    // the lease held and snoozes them; whichever delivery comes after the hand-off finds the run
    // executing or finished, and touches nothing.
    for (let i = 0; i < 2; i++) {
      await runtime.dispatcher.dispatch({ kind: 'resume', runId, reactorName: 'chaos-chain' });
    }

    const sigterm = Date.now();
    workerA.child.kill('SIGTERM');
    await waitFor(async () => (await client.get(runId))?.status === 'completed', {
      timeoutMs: PROMPT_MS,
      intervalMs: 50,
      what: () => `run completed after SIGTERM (A:\n${workerA.output}\nB:\n${workerB.output})`,
    });
    const elapsed = Date.now() - sigterm;
    report(`SIGTERM during a long step (shutdownGraceMs ${GRACE_MS}) -> run completed by worker B`, elapsed);
    // At least the grace (the run went on in A for that long), far below the lease TTL.
    expect(elapsed).toBeGreaterThanOrEqual(GRACE_MS);
    expect(elapsed).toBeLessThan(PROMPT_MS);
    expect(elapsed).toBeLessThan(LONG_LEASE_TTL_MS / 4);

    // A shut down gracefully and said it handed the run off.
    const exit = await workerA.exited;
    expect(exit.signal === 'SIGTERM' || exit.code === 0).toBe(true);
    expect(workerA.output).toMatch(new RegExp(`Run '${runId}' was stopped at shutdown and handed off`));

    const done = await client.wait<string>(runId, { timeoutMs: 5_000 });
    expect(done.status === 'completed' && done.value).toBe('seed>s1>s2>s3>s4>s5>s6');
    // s3 ran in A (aborted, nothing written) and once more in B; every other step exactly once.
    const ran: Record<string, number> = {};
    for (const step of CHAIN_STEPS) ran[step] = Number(await chaos.redis.get(keys.ran(runId, step)));
    expect(ran).toEqual({ s1: 1, s2: 1, s3: 2, s4: 1, s5: 1, s6: 1 });
    expect(await chaos.redis.lrange(keys.log(runId), 0, -1)).toEqual(['s1', 's2', 's3', 's3', 's4', 's5', 's6']);
    // The snoozed duplicates come back to a finished run and leave it alone.
    await waitFor(async () => (await runtime.dispatcher.pending()) === 0, {
      timeoutMs: 15_000,
      intervalMs: 100,
      what: 'the duplicate deliveries settled',
    });
    expect(Number(await chaos.redis.get(keys.ran(runId, 's4')))).toBe(1);
    expect((await client.get(runId))?.status).toBe('completed');
    expect(workerB.alive).toBe(true);
  }, 90_000);

  it('SIGTERM while map elements run: each element is handed off and worker B finishes the map within the lease TTL', async () => {
    const { client, keys } = chaos.producer;
    const count = 3;
    const workerA = await WorkerProcess.start('A', prefix, {
      SLOW_FROM_ELEMENT: '0',
      SLOW_MS: '120000',
      LEASE_TTL_MS: String(LONG_LEASE_TTL_MS),
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    const started = await client.start(ChaosMapReactor, mapItems(count));
    const runId = started.runId;
    const mapId = mapIdOf(runId, 'items');
    await waitFor(async () => (await chaos.redis.scard(keys.elementsInside(mapId))) === count, {
      timeoutMs: 15_000,
      what: () => `worker A inside every element (output:\n${workerA.output})`,
    });
    const workerB = await WorkerProcess.start('B', prefix, { LEASE_TTL_MS: String(LONG_LEASE_TTL_MS) });

    const sigterm = Date.now();
    workerA.child.kill('SIGTERM');
    await waitFor(async () => (await client.get(runId))?.status === 'completed', {
      timeoutMs: PROMPT_MS,
      intervalMs: 50,
      what: () => `map run completed after SIGTERM (A:\n${workerA.output}\nB:\n${workerB.output})`,
    });
    const elapsed = Date.now() - sigterm;
    report(`SIGTERM while map elements run (shutdownGraceMs ${GRACE_MS}) -> map completed by worker B`, elapsed);
    expect(elapsed).toBeLessThan(LONG_LEASE_TTL_MS / 4);
    await workerA.exited;
    for (let index = 0; index < count; index++) {
      expect(workerA.output).toMatch(
        new RegExp(`Element ${index} of map '${mapId}' was stopped at shutdown and handed off`),
      );
      // Once in A (stopped), once in B.
      expect(Number(await chaos.redis.get(keys.element(elementRunId(mapId, index))))).toBe(2);
    }
    const done = await client.wait<MapResults<number>>(runId, { timeoutMs: 5_000 });
    expect(done.status).toBe('completed');
    if (done.status !== 'completed') return;
    const outcomes: unknown[] = [];
    for await (const outcome of done.value) outcomes.push(outcome);
    expect(outcomes).toEqual([0, 1, 2].map((index) => ({ index, status: 'completed', value: index * 7 })));
  }, 90_000);
});
