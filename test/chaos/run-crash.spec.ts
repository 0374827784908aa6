/**
 * Crash: a worker is SIGKILLed inside a step of a background run. Once its lease expires, the
 * recovery sweep re-enqueues the run, another worker resumes it from its last checkpoint, and it
 * completes with every checkpointed step run exactly once.
 */
import { CHAIN_STEPS } from './chaos.fixtures';
import { startChainUntilInsideS3, useChaosProducer, waitFor, WorkerProcess } from './chaos.harness';

const LEASE_TTL_MS = 1500;

describe('chaos: a worker killed inside a step (Redis, BullMQ, child processes)', () => {
  const chaos = useChaosProducer('chaos-run-crash', { leaseTtlMs: LEASE_TTL_MS });
  const { prefix } = chaos;

  it('SIGKILL inside s3: the sweeper re-enqueues the run after the lease TTL and worker B finishes it', async () => {
    const { client, keys } = chaos.producer;
    const workerA = await WorkerProcess.start('A', prefix, {
      CRASH_AT_STEP: 's3',
      LEASE_TTL_MS: String(LEASE_TTL_MS),
    });
    const runId = await startChainUntilInsideS3(chaos, workerA);
    // s1 and s2 were checkpointed before s3 started.
    expect((await client.get(runId))?.completed).toEqual(['s1', 's2']);
    await workerA.kill('SIGKILL');
    expect((await workerA.exited).signal).toBe('SIGKILL');

    const workerB = await WorkerProcess.start('B', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS) });
    const sweeps: Array<{ reactors: number; maps: number }> = [];
    await waitFor(
      async () => {
        const view = await client.get(runId);
        if (view?.status === 'completed') return true;
        sweeps.push(await client.sweepOnce());
        return false;
      },
      { timeoutMs: 15_000, intervalMs: 200, what: () => `run completed (worker B output:\n${workerB.output})` },
    );

    // The run was re-enqueued by the sweep (not by BullMQ: A's job stays locked for 30 s).
    expect(sweeps.some((s) => s.reactors >= 1)).toBe(true);
    const done = await client.wait<string>(runId, { timeoutMs: 5_000 });
    expect(done.status).toBe('completed');
    expect(done.status === 'completed' && done.value).toBe('seed>s1>s2>s3>s4>s5>s6');
    const results: Record<string, string> = {};
    let value = 'seed';
    for (const step of CHAIN_STEPS) results[step] = value = `${value}>${step}`;
    expect(done.results).toEqual(results);

    const ran: Record<string, number> = {};
    for (const step of CHAIN_STEPS) ran[step] = Number(await chaos.redis.get(keys.ran(runId, step)));
    expect(ran).toEqual({ s1: 1, s2: 1, s3: 2, s4: 1, s5: 1, s6: 1 });
    expect(await chaos.redis.lrange(keys.log(runId), 0, -1)).toEqual(['s1', 's2', 's3', 's3', 's4', 's5', 's6']);
    expect((await client.get(runId))?.completed).toEqual([...CHAIN_STEPS]);
    expect(workerB.alive).toBe(true);
  }, 45_000);
});
