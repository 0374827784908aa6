/**
 * Crash: a worker is SIGKILLed inside an async unit's body. The unit is a run of its own: once its
 * lease expires the recovery sweep offers it again, another worker runs it (once more, at most),
 * its end resumes the parent parked on it, and the parent completes with every other step run once.
 */
import { CHAOS_ASYNC_PROVIDERS, ChaosAsyncReactor } from './chaos.fixtures';
import { useChaosProducer, waitFor, WorkerProcess } from './chaos.harness';

const LEASE_TTL_MS = 1500;

describe('chaos: a worker killed inside an async unit (Redis, BullMQ, child processes)', () => {
  const chaos = useChaosProducer(
    'chaos-async-crash',
    { leaseTtlMs: LEASE_TTL_MS },
    { providers: CHAOS_ASYNC_PROVIDERS },
  );
  const { prefix } = chaos;

  it('SIGKILL inside the unit: the sweeper offers the unit again, worker B runs it once more, the parent completes', async () => {
    const { client, keys } = chaos.producer;
    const workerA = await WorkerProcess.start('A', prefix, {
      CRASH_AT_STEP: 'unit',
      LEASE_TTL_MS: String(LEASE_TTL_MS),
    });
    const started = await client.start(ChaosAsyncReactor, { seed: 'seed' });
    const runId = started.runId;
    const unitRunId = `${runId}/unit`;

    await waitFor(async () => (await chaos.redis.exists(keys.inside(unitRunId, 'unit'))) === 1, {
      timeoutMs: 15_000,
      what: () => `worker A inside the unit (output:\n${workerA.output})`,
    });
    // The parent dispatched the unit and parked on it (s2 reads it).
    expect((await client.get(runId))?.asyncUnits.unit).toMatchObject({ runId: unitRunId, status: 'running' });
    await workerA.kill('SIGKILL');
    expect((await workerA.exited).signal).toBe('SIGKILL');

    const workerB = await WorkerProcess.start('B', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS) });
    await waitFor(
      async () => {
        if ((await client.get(runId))?.status === 'completed') return true;
        await client.sweepOnce();
        return false;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: () => `run completed (worker B output:\n${workerB.output})` },
    );
    const done = await client.wait<string>(runId, { timeoutMs: 5_000 });
    expect(done).toMatchObject({ status: 'completed', value: 'seed>s1>unit>s2' });
    const ran = async (id: string, step: string) => Number(await chaos.redis.get(keys.ran(id, step)));
    expect(await ran(runId, 's1')).toBe(1);
    expect(await ran(unitRunId, 'unit')).toBe(2);
    expect(await ran(runId, 's2')).toBe(1);
    expect((await client.get(runId))?.asyncUnits.unit).toMatchObject({ status: 'completed', value: 'seed>s1>unit' });
  }, 60_000);
});
