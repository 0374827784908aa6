/**
 * Coordination across worker processes: a semaphore bounds the runs executing at once over two
 * worker processes; an ordered lock applies runs strictly in start order over four, and skips a
 * holder SIGKILLed mid-step once its heartbeat is older than the poison-pill timeout; a lock whose
 * holder is SIGKILLed is free again within its TTL (refused before, with an honest retryAfterMs).
 */
import type Redis from 'ioredis';
import { CoordinationContendedError } from '../../lib/core/errors/coordination.error';
import type { RunView } from '../../lib/core/engine/run-view';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import {
  CHAOS_COORDINATION_PROVIDERS,
  CHAOS_LEDGER_POISON_PILL_MS,
  CHAOS_LOCK_TTL_MS,
  CHAOS_SEMAPHORE,
  ChaosLedgerReactor,
  ChaosLockedReactor,
  ChaosSemaphoreReactor,
  CoordinationKeys,
} from './chaos.fixtures';
import { createChaosApp, stopAllWorkers, waitFor, WorkerProcess, type ChaosApp } from './chaos.harness';

const LEASE_TTL_MS = 1500;

/**
 * Workers that retry a contended job quickly (20 ms + up to 20 ms of jitter) and never give up on
 * a lock or semaphore (the cap of `lockSnoozeMaxAttempts` is not what these tests are about).
 */
const FAST_SNOOZE = {
  LEASE_TTL_MS: String(LEASE_TTL_MS),
  SNOOZE_DELAY_MS: '20',
  LOCK_SNOOZE_MAX_ATTEMPTS: '1000000',
  WORKER_CONCURRENCY: '10',
};

describe('chaos: reactor coordination across worker processes (Redis, BullMQ, child processes)', () => {
  let redis: Redis;
  const prefixes: string[] = [];
  const producers: ChaosApp[] = [];

  /** A producer-only app on a prefix of its own, with the coordination fixtures. */
  async function newProducer(name: string): Promise<{ producer: ChaosApp; prefix: string; coord: CoordinationKeys }> {
    const prefix = uniquePrefix(`chaos-coord-${name}`);
    prefixes.push(prefix);
    const producer = await createChaosApp(
      prefix,
      { leaseTtlMs: LEASE_TTL_MS },
      { providers: CHAOS_COORDINATION_PROVIDERS },
    );
    producers.push(producer);
    return { producer, prefix, coord: new CoordinationKeys(prefix) };
  }

  /**
   * Start worker processes one after the other: started all at once on a loaded 2-core machine,
   * their boots (ts-node) compete, and each must be ready within the harness's 20 s.
   */
  async function startWorkers(names: string[], prefix: string, env: Record<string, string>): Promise<WorkerProcess[]> {
    const workers: WorkerProcess[] = [];
    for (const name of names) workers.push(await WorkerProcess.start(name, prefix, env));
    return workers;
  }

  /** Everything the workers printed, for failure messages. */
  function outputOf(workers: WorkerProcess[]): string {
    return workers.map((w) => `--- ${w.name}\n${w.output}`).join('\n');
  }

  /**
   * Wait until every run of `runIds` is terminal (polling the ones still pending), and return
   * their views; throws on the first that ends other than completed.
   */
  async function untilAllCompleted(
    producer: ChaosApp,
    runIds: string[],
    workers: WorkerProcess[],
    timeoutMs: number,
  ): Promise<Map<string, RunView>> {
    const views = new Map<string, RunView>();
    const pending = new Set(runIds);
    await waitFor(
      async () => {
        for (const runId of [...pending]) {
          const view = await producer.client.get(runId);
          if (!view || !['completed', 'failed', 'halted', 'cancelled'].includes(view.status)) continue;
          if (view.status !== 'completed') {
            throw new Error(`run ${runId} ended ${view.status}: ${JSON.stringify(view)}\n${outputOf(workers)}`);
          }
          views.set(runId, view);
          pending.delete(runId);
        }
        return pending.size === 0;
      },
      {
        timeoutMs,
        intervalMs: 100,
        what: () => `all ${runIds.length} runs completed (${pending.size} pending; output:\n${outputOf(workers)})`,
      },
    );
    return views;
  }

  /** The executions of step `step` of each run, by run id. */
  async function executions(producer: ChaosApp, runIds: string[], step: string): Promise<number[]> {
    const counts = await redis.mget(...runIds.map((runId) => producer.keys.ran(runId, step)));
    return counts.map(Number);
  }

  beforeAll(() => {
    redis = createTestRedis();
  });

  afterEach(async () => {
    await stopAllWorkers();
    await Promise.all(producers.splice(0).map((p) => p.app.close()));
  });

  afterAll(async () => {
    await stopAllWorkers();
    await Promise.all(producers.splice(0).map((p) => p.app.close()));
    for (const prefix of prefixes) await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('semaphore of 3: 200 runs over two worker processes (10 slots each) never have more than 3 steps in flight', async () => {
    const { producer, coord } = await newProducer('semaphore');
    const workers = await startWorkers(['A', 'B'], producer.keys.prefix, FAST_SNOOZE);

    const runIds: string[] = [];
    for (let i = 0; i < 200; i++) {
      const started = await producer.client.start(ChaosSemaphoreReactor, { holdMs: 15 });
      expect(started.status).toBe('dispatched');
      runIds.push(started.runId);
    }
    const views = await untilAllCompleted(producer, runIds, workers, 50_000);

    expect([...views.values()].every((v) => v.status === 'completed')).toBe(true);
    const maxInFlight = Number(await redis.get(coord.maxInFlight()));
    // Never above the limit, and the limit was reached more than once-at-a-time: concurrency happened.
    expect(maxInFlight).toBeLessThanOrEqual(CHAOS_SEMAPHORE.limit);
    expect(maxInFlight).toBeGreaterThanOrEqual(2);
    expect(Number(await redis.get(coord.inFlight()))).toBe(0);
    // Each run's step ran exactly once.
    expect(await executions(producer, runIds, 'work')).toEqual(runIds.map(() => 1));
    // Both processes executed runs: the semaphore held across processes, not only within one.
    const byPid = Object.values(await redis.hgetall(coord.executedBy())).map(Number);
    expect(byPid).toHaveLength(2);
    expect(byPid.every((n) => n > 0)).toBe(true);
    expect(byPid.reduce((a, b) => a + b, 0)).toBe(200);
    expect(workers.every((w) => w.alive)).toBe(true);
  }, 120_000);

  it('ordered lock: 50 runs started in sequence apply strictly in start order over four worker processes', async () => {
    const { producer, coord } = await newProducer('ordered');
    const workers = await startWorkers(['A', 'B', 'C', 'D'], producer.keys.prefix, FAST_SNOOZE);

    const runIds: string[] = [];
    for (let seq = 1; seq <= 50; seq++) {
      // Awaited one by one: start order is nonce order.
      const started = await producer.client.start(ChaosLedgerReactor, { seq });
      expect(started.status).toBe('dispatched');
      runIds.push(started.runId);
    }
    await untilAllCompleted(producer, runIds, workers, 50_000);

    const expected = Array.from({ length: 50 }, (_, i) => String(i + 1));
    expect(await redis.lrange(coord.ledger(), 0, -1)).toEqual(expected);
    expect(await executions(producer, runIds, 'append')).toEqual(runIds.map(() => 1));
    expect(workers.every((w) => w.alive)).toBe(true);
  }, 120_000);

  it('ordered lock, poison pill: the holder of run #10 SIGKILLed mid-step is skipped after poisonPillMs; the other 49 apply in order, none twice', async () => {
    const K = 10;
    const { producer, coord } = await newProducer('poison');
    const { client, keys } = producer;

    // Worker A alone first, one slot, hanging in the step of run #K only (before it appends): it
    // applies #1..#K-1 and is then stuck inside #K, heartbeating its place in the order.
    const workerA = await WorkerProcess.start('A', keys.prefix, {
      ...FAST_SNOOZE,
      WORKER_CONCURRENCY: '1',
      CRASH_AT_STEP: 'append',
      CRASH_AT_SEQ: String(K),
    });
    const runIds: string[] = [];
    const start = async (seq: number) => {
      const started = await client.start(ChaosLedgerReactor, { seq });
      expect(started.status).toBe('dispatched');
      runIds.push(started.runId);
    };
    for (let seq = 1; seq <= K; seq++) await start(seq);
    const runK = runIds[K - 1];
    await waitFor(async () => (await redis.exists(keys.inside(runK, 'append'))) === 1, {
      timeoutMs: 30_000,
      what: () => `worker A inside the step of run #${K} (output:\n${workerA.output})`,
    });
    const before = Array.from({ length: K - 1 }, (_, i) => String(i + 1));
    expect(await redis.lrange(coord.ledger(), 0, -1)).toEqual(before);

    // Then three more workers, and runs #K+1..#50 (started in sequence after #K: later nonces).
    // They are started only once B, C and D consume: a waiting run's heartbeat is stamped only when
    // its own job is delivered (orderTurn), so a run nobody polls for poisonPillMs would be skipped
    // as dead as well (the poison pill cannot tell a dead holder from a live run whose job is late).
    const others = await startWorkers(['B', 'C', 'D'], keys.prefix, FAST_SNOOZE);
    const workers = [workerA, ...others];
    for (let seq = K + 1; seq <= 50; seq++) await start(seq);
    // Nobody went past the live holder of #K.
    expect(await redis.lrange(coord.ledger(), 0, -1)).toEqual(before);

    const killedAt = Date.now();
    await workerA.kill('SIGKILL');
    expect((await workerA.exited).signal).toBe('SIGKILL');

    // No sweep yet: the others wait for #K until its heartbeat is older than the poison pill, then
    // skip it and apply in order.
    let skippedAt: number | undefined;
    await waitFor(
      async () => {
        const length = await redis.llen(coord.ledger());
        if (length > K - 1) skippedAt ??= Date.now();
        return length === 49;
      },
      {
        timeoutMs: 40_000,
        intervalMs: 25,
        what: () => `the 49 other runs applied (output:\n${outputOf(workers)})`,
      },
    );
    const othersIds = runIds.filter((_, i) => i !== K - 1);
    await untilAllCompleted(producer, othersIds, workers, 20_000);
    const rest = Array.from({ length: 50 - K }, (_, i) => String(K + 1 + i));
    expect(await redis.lrange(coord.ledger(), 0, -1)).toEqual([...before, ...rest]);
    expect(await executions(producer, othersIds, 'append')).toEqual(othersIds.map(() => 1));
    // #K's last heartbeat was at most a third of the poison pill before the kill: the skip came
    // after the rest of it, and not much later than the whole of it.
    const skipDelay = skippedAt! - killedAt;
    expect(skipDelay).toBeGreaterThanOrEqual(CHAOS_LEDGER_POISON_PILL_MS / 3);
    expect(skipDelay).toBeLessThanOrEqual(CHAOS_LEDGER_POISON_PILL_MS + 5_000);
    // #K itself is still running (its worker died; nothing swept it yet), and applied nothing.
    expect((await client.get(runK))?.status).toBe('running');

    // Now the sweeper recovers #K (its lease expired with A). Its turn was given away (skipped, and
    // drained once #50 completed): going on would apply it out of order, so it halts
    // (`ordered_lock_skipped`) without running its step again.
    const sweeps: number[] = [];
    await waitFor(
      async () => {
        const view = await client.get(runK);
        if (view && view.status !== 'running') return true;
        sweeps.push((await client.sweepOnce()).reactors);
        return false;
      },
      { timeoutMs: 20_000, intervalMs: 250, what: () => `run #${K} recovered (output:\n${outputOf(others)})` },
    );
    expect(sweeps.some((n) => n >= 1)).toBe(true);
    expect(await client.wait(runK, { timeoutMs: 5_000 })).toMatchObject({
      status: 'halted',
      reason: 'ordered_lock_skipped',
    });
    expect(await redis.lrange(coord.ledger(), 0, -1)).toEqual([...before, ...rest]);
    // Entered once (in A, hanging before it appended), never again.
    expect(Number(await redis.get(keys.ran(runK, 'append')))).toBe(1);
    expect(others.every((w) => w.alive)).toBe(true);
  }, 150_000);

  it('lock holder SIGKILLed mid-step: the lock is refused (retryAfterMs <= ttlMs) until its TTL runs out, then taken within ttlMs of the kill', async () => {
    const { producer } = await newProducer('lock');
    const { client, keys } = producer;
    const workerA = await WorkerProcess.start('A', keys.prefix, { ...FAST_SNOOZE, CRASH_AT_STEP: 'guarded' });

    const first = await client.start(ChaosLockedReactor, { seed: 'first' });
    expect(first.status).toBe('dispatched');
    await waitFor(async () => (await redis.exists(keys.inside(first.runId, 'guarded'))) === 1, {
      timeoutMs: 20_000,
      what: () => `worker A inside the guarded step (output:\n${workerA.output})`,
    });

    /** One inline run of the locked reactor: its outcome, or the contention it was refused with. */
    const attempt = async () => {
      const sentAt = Date.now();
      try {
        const outcome = await client.run(ChaosLockedReactor, { seed: 'second' });
        return { sentAt, answeredAt: Date.now(), outcome };
      } catch (error) {
        if (!(error instanceof CoordinationContendedError) || error.code !== 'LOCK_CONTENDED') throw error;
        return { sentAt, answeredAt: Date.now(), refused: error };
      }
    };

    // While A lives (and extends the lock every third of its TTL), the lock is refused.
    const whileAlive = await attempt();
    expect(whileAlive.refused?.code).toBe('LOCK_CONTENDED');
    expect(whileAlive.refused?.retryAfterMs).toBeGreaterThan(0);
    expect(whileAlive.refused?.retryAfterMs).toBeLessThanOrEqual(CHAOS_LOCK_TTL_MS);

    const killedAt = Date.now();
    await workerA.kill('SIGKILL');
    expect((await workerA.exited).signal).toBe('SIGKILL');

    const refusals: Array<{ sentAt: number; answeredAt: number; retryAfterMs: number }> = [];
    let acquired: Awaited<ReturnType<typeof attempt>> | undefined;
    await waitFor(
      async () => {
        const result = await attempt();
        if (result.refused) {
          refusals.push({
            sentAt: result.sentAt,
            answeredAt: result.answeredAt,
            retryAfterMs: result.refused.retryAfterMs,
          });
          return false;
        }
        acquired = result;
        return true;
      },
      { timeoutMs: CHAOS_LOCK_TTL_MS + 10_000, intervalMs: 25, what: 'the lock taken after the holder died' },
    );

    expect(acquired!.outcome).toMatchObject({ status: 'completed', value: 'second>guarded' });
    // Refused right after the kill: the dead holder's TTL still ran, and each refusal said at most the TTL.
    expect(refusals.length).toBeGreaterThanOrEqual(1);
    for (const r of refusals) {
      expect(r.retryAfterMs).toBeGreaterThan(0);
      expect(r.retryAfterMs).toBeLessThanOrEqual(CHAOS_LOCK_TTL_MS);
    }
    // Taken within the TTL of the kill (plus a margin for polling and executing the run).
    expect(acquired!.sentAt - killedAt).toBeLessThanOrEqual(CHAOS_LOCK_TTL_MS + 1_000);
    // ... and not before the lock expired: retryAfterMs was an honest remaining TTL (clock slack 50 ms).
    const firstAfterKill = refusals[0];
    expect(acquired!.answeredAt).toBeGreaterThanOrEqual(firstAfterKill.sentAt + firstAfterKill.retryAfterMs - 50);
    // The dead holder's run is left running (no sweep here); the second ran its step once, inline.
    expect((await client.get(first.runId))?.status).toBe('running');
    expect(Number(await redis.get(keys.ran(acquired!.outcome!.runId, 'guarded')))).toBe(1);
  }, 60_000);
});
