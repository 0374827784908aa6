/**
 * Storm: workers are SIGKILLed at random while runs start, retry (a transient failure at s2) and
 * roll back (a permanent failure at s4 for a third of them), and replacements start. Sweeps recover
 * what the dead workers held. Every run must end terminal with its record and undo stack intact,
 * every completed step of a failed run undone, and no step body ever running in two live
 * processes at once.
 */
import type Redis from 'ioredis';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { ChaosStormReactor, STORM_STEPS } from './chaos.fixtures';
import { createChaosApp, stopAllWorkers, waitFor, WorkerProcess, type ChaosApp } from './chaos.harness';

const LEASE_TTL_MS = 1500;
const RUNS = 30;
const KILLS = 5;

describe('chaos: a storm of worker kills (Redis, BullMQ, child processes)', () => {
  const prefix = uniquePrefix('chaos-storm');
  let redis: Redis;
  let producer: ChaosApp;

  beforeAll(async () => {
    redis = createTestRedis();
    producer = await createChaosApp(prefix, { leaseTtlMs: LEASE_TTL_MS });
  });

  afterAll(async () => {
    await stopAllWorkers();
    await producer?.app.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('every run ends terminal, its record and undo stack intact, no step body twice at once', async () => {
    const { client, keys, runtime } = producer;
    const env = { LEASE_TTL_MS: String(LEASE_TTL_MS), WORKER_CONCURRENCY: '4' };
    let spawned = 0;
    const spawn = () => WorkerProcess.start(`W${spawned++}`, prefix, env);
    const workers = await Promise.all([spawn(), spawn()]);

    const runs: Array<{ runId: string; seed: string; fails: boolean }> = [];
    let kills = 0;
    // Sweeps recover what the dead workers held once their leases expire: from the first kill on,
    // as a scheduled sweeper would, not once every kill and replacement is done (BullMQ's own check
    // of stalled jobs, 30 s after a dead worker's last lock renewal, would then have re-delivered
    // them first on a machine where a worker takes seconds to boot).
    let recovered = 0;
    let sweeping: Promise<void> | undefined;
    let stopSweeping = false;
    const sweepInBackground = async (): Promise<void> => {
      while (!stopSweeping) {
        recovered += (await client.sweepOnce()).reactors;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    try {
      for (let batch = 0; batch < 3; batch++) {
        for (let i = 0; i < RUNS / 3; i++) {
          const n = runs.length;
          const fails = n % 3 === 0;
          const started = await client.start(ChaosStormReactor, { seed: `r${n}`, failAt: fails ? 's4' : 'none' });
          runs.push({ runId: started.runId, seed: `r${n}`, fails });
        }
        // Once a run of this batch is part way, kill every worker (runs are caught mid-step or
        // between steps) and start replacements.
        const batch = runs.slice(-RUNS / 3);
        await waitFor(
          async () => {
            const views = await Promise.all(batch.map((r) => client.get(r.runId)));
            return views.some((v) => v?.status === 'running' && v.completed.length > 0);
          },
          { timeoutMs: 20_000, intervalMs: 5, what: 'a run of the batch part way' },
        );
        for (const victim of workers.splice(0)) await victim.kill('SIGKILL');
        kills++;
        sweeping ??= sweepInBackground();
        workers.push(await spawn(), await spawn());
      }
      while (kills < KILLS) {
        const victim = workers.splice(Math.floor(Math.random() * workers.length), 1)[0];
        await victim.kill('SIGKILL');
        kills++;
        workers.push(await spawn());
      }

      await waitFor(
        async () => {
          const views = await Promise.all(runs.map((r) => client.get(r.runId)));
          return views.every((v) => v?.status === 'completed' || v?.status === 'failed');
        },
        {
          timeoutMs: 60_000,
          intervalMs: 250,
          what: () => `every run terminal (outputs:\n${workers.map((w) => w.output).join('\n')})`,
        },
      );
    } finally {
      stopSweeping = true;
      await sweeping;
    }

    // The kills left runs behind that the sweeps set going again.
    expect(recovered).toBeGreaterThan(0);
    expect(await redis.lrange(keys.violations(), 0, -1)).toEqual([]);
    for (const { runId, seed, fails } of runs) {
      const view = (await client.get(runId))!;
      const record = (await runtime.storage.load(runId))!;
      if (fails) {
        expect({ runId, status: view.status, step: view.failure?.stepName }).toEqual({
          runId,
          status: 'failed',
          step: 's4',
        });
        expect(view.failure?.rollbackFailures).toEqual([]);
        expect(record.undoStack).toEqual([]);
        expect(record.completed).toEqual(['s1', 's2', 's3']);
        // Every completed step was undone (a crash mid-rollback may repeat an undo: they are idempotent).
        const undone = new Set(await redis.lrange(keys.undone(runId), 0, -1));
        expect([...undone].sort()).toEqual(['s1', 's2', 's3']);
      } else {
        expect({ runId, status: view.status }).toEqual({ runId, status: 'completed' });
        expect(view.value).toBe([seed, ...STORM_STEPS].join('>'));
        expect(record.completed).toEqual([...STORM_STEPS]);
        expect(record.undoStack.map((u) => u.step)).toEqual([...STORM_STEPS]);
        expect(await redis.llen(keys.undone(runId))).toBe(0);
      }
      // s2 failed once and was retried: it ran at least twice.
      expect(Number(await redis.get(keys.ran(runId, 's2')))).toBeGreaterThanOrEqual(2);
    }
  }, 150_000);
});
