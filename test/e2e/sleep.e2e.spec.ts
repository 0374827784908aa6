/**
 * Durable sleep on Redis and BullMQ: a run that reaches `r.sleep` is parked (status `running`, a
 * hand-off, its lease released, no worker held) and a BullMQ job delayed to its wake-up time resumes
 * it. A sleep of milliseconds completes; a sleep of days leaves that delayed job and nothing else,
 * and when the job is lost the sweeper wakes the run once the (moved) clock passes its time, not
 * before. Cancel and undo while sleeping work as while paused. A resume delivered early is delayed
 * again; a run reopened by `retry` keeps its wake-up time; a reactor lock or semaphore slot is kept
 * across the sleep past its TTL; a sleep in a fan-out map element fails `CONFIGURATION_INVALID`; a
 * sleep of 3x the record retention (4 s) parks in hops that refresh the record's TTL. The embedded
 * side: test/core/sleep.spec.ts.
 */
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { runLeaseKey } from '../../lib/core/model/keys';
import type { LockManager } from '../../lib/core/ports/lock-manager.port';
import { success } from '../../lib/core/results/step-outcome';
import { REACTOR_LOCKS, REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { ReactorEngine } from '../../lib/core/engine/reactor-engine';
import { RedisKeys } from '../../lib/storage/redis/redis.keys';
import { createEmbeddedApp, createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

const DAY = 24 * 60 * 60 * 1000;
const WAIT = { timeoutMs: 15_000 };

/** What the steps did, per run id. */
const ledger = new Map<string, string[]>();
const note = (ctx: StepContext, entry: string) => ledger.set(ctx.runId, [...(ledger.get(ctx.runId) ?? []), entry]);
const ledgerOf = (runId: string) => ledger.get(runId) ?? [];

/** The module's clock: the system's, moved forward by `offset` (a test "lets days pass"). */
const clock = {
  offset: 0,
  now: () => Date.now() + clock.offset,
  sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
};

function coolOff(r: ReactorBuilder<{ ms: number }>) {
  r.step(
    'reserve',
    {
      run: (_a: object, ctx: StepContext) => (note(ctx, 'run:reserve'), success('R1')),
      undo: (_r: string, _a: object, ctx: StepContext) => void note(ctx, 'undo:reserve'),
    },
    {},
  );
  r.sleep('wait', { ms: r.input('ms', { type: 'number' }), waitFor: ['reserve'] });
  return r.step(
    'ship',
    (_a: object, ctx: StepContext) => (note(ctx, 'run:ship'), success('shipped')),
    {},
    {
      waitFor: ['wait'],
    },
  );
}

@Reactor('e2e-sleep')
class SleepReactor implements ReactorBlueprint<{ ms: number }> {
  build(r: ReactorBuilder<{ ms: number }>) {
    return coolOff(r);
  }
}

@Reactor('e2e-sleep-locked', { lock: { key: () => 'e2e-sleep:account', ttlMs: 1_000 } })
class LockedSleepReactor implements ReactorBlueprint<{ ms: number }> {
  build(r: ReactorBuilder<{ ms: number }>) {
    return coolOff(r);
  }
}

@Reactor('e2e-sleep-slot', { semaphore: { key: () => 'e2e-sleep:crm', limit: 1, leaseMs: 1_000 } })
class SlotSleepReactor implements ReactorBlueprint<{ ms: number }> {
  build(r: ReactorBuilder<{ ms: number }>) {
    return coolOff(r);
  }
}

@Reactor('e2e-sleep-in-element')
class SleepInElementReactor implements ReactorBlueprint<{ items: number[] }> {
  build(r: ReactorBuilder<{ items: number[] }>) {
    return r.map('each', {
      source: r.input('items'),
      element: (e: ReactorBuilder<{ n: number }>) => e.sleep('wait', { ms: 10 }),
      inputs: (item) => ({ n: item }),
      fanOut: { batchSize: 10 },
    });
  }
}

/** Resolve once the real clock reaches `at` (the promise under test is about time passing). */
const untilTime = (at: number) => pollUntil(() => Date.now() >= at, at - Date.now() + 5_000);

const { prefix: redisPrefix, redis } = useRedisPrefixes();

describe('r.sleep on Redis and BullMQ (e2e)', () => {
  let app: TestingModule;
  let client: ReactorClient;
  let locks: LockManager;

  beforeAll(async () => {
    ({ app, client } = await createRedisApp(
      redisPrefix('e2e-sleep'),
      // Records kept a week: a 3-day sleep is one hop (a longer one parks in hops of half that).
      { sweeper: { enabled: false }, clock, contextTtlMs: 7 * DAY },
      { providers: [SleepReactor, LockedSleepReactor, SlotSleepReactor, SleepInElementReactor] },
    ));
    locks = app.get<LockManager>(REACTOR_LOCKS);
  });

  afterAll(async () => {
    await app?.close();
  });

  const queue = () => app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
  async function wakeJob(runId: string) {
    const jobs = await queue().getJobs(['delayed', 'waiting', 'active']);
    return jobs.find((job) => (job.data as { runId?: string }).runId === runId);
  }

  it('a sleep of milliseconds parks the run with its lease released and completes after it, in a worker', async () => {
    const outcome = await client.run(SleepReactor, { ms: 300 });
    expect(outcome).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait' } });
    if (outcome.status !== 'dispatched' || !outcome.sleeping) throw new Error('not sleeping');
    const { wakeAt } = outcome.sleeping;
    expect(await locks.isHeld(runLeaseKey(outcome.runId))).toBe(false);

    const done = await client.wait(outcome.runId, WAIT);
    expect(done).toMatchObject({ status: 'completed', value: 'shipped', results: { wait: { sleptUntil: wakeAt } } });
    expect(clock.now()).toBeGreaterThanOrEqual(wakeAt);
    expect(ledgerOf(outcome.runId)).toEqual(['run:reserve', 'run:ship']);
  });

  it('a sleep of days: one delayed job due at the wake-up time; a lost job is recovered by the sweeper only once the clock passes it', async () => {
    const before = clock.now();
    const outcome = await client.run(SleepReactor, { ms: 3 * DAY });
    if (outcome.status !== 'dispatched' || !outcome.sleeping) throw new Error('not sleeping');
    const { runId } = outcome;
    const { wakeAt } = outcome.sleeping;
    expect(wakeAt).toBeGreaterThanOrEqual(before + 3 * DAY);

    // Parked: no lease, the view says where and until when, and the wake-up is a delayed job.
    expect(await locks.isHeld(runLeaseKey(runId))).toBe(false);
    expect(await client.get(runId)).toMatchObject({ status: 'running', sleeping: { step: 'wait', wakeAt } });
    const job = await wakeJob(runId);
    expect(job).toBeDefined();
    expect(await job!.isDelayed()).toBe(true);
    // BullMQ's due time is from the real clock: within the few ms between the delay's computation and its add.
    expect(job!.timestamp + job!.delay - (wakeAt - clock.offset)).toBeGreaterThanOrEqual(0);
    expect(job!.timestamp + job!.delay - (wakeAt - clock.offset)).toBeLessThan(1_000);

    // The job is lost (its Redis data gone); a sweep before the wake-up time leaves the run asleep.
    await job!.remove();
    clock.offset += 2 * DAY;
    expect((await client.sweepOnce()).reactors).toBe(0);
    expect(ledgerOf(runId)).toEqual(['run:reserve']);

    // Days pass: the next sweep wakes it (the grace is the lease TTL, 60 s by default).
    clock.offset += DAY + 61_000;
    expect((await client.sweepOnce()).reactors).toBe(1);
    const done = await client.wait(runId, WAIT);
    expect(done).toMatchObject({ status: 'completed', results: { wait: { sleptUntil: wakeAt } } });
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:ship']);
  });

  it('cancel while sleeping undoes what ran; its wake-up job then does nothing', async () => {
    const outcome = await client.run(SleepReactor, { ms: 400 });
    const cancelled = await client.cancel(outcome.runId, 'no longer wanted');
    expect(cancelled).toMatchObject({ status: 'cancelled', reason: 'no longer wanted' });
    expect(ledgerOf(outcome.runId)).toEqual(['run:reserve', 'undo:reserve']);
    expect((await client.get(outcome.runId))?.sleeping).toBeUndefined();
    // The wake-up job comes and goes: nothing more runs.
    const job = await wakeJob(outcome.runId);
    if (job)
      await pollUntil(async () => ['completed', 'failed', 'unknown'].includes(await job.getState()), WAIT.timeoutMs);
    expect(await client.get(outcome.runId)).toMatchObject({ status: 'cancelled' });
    expect(ledgerOf(outcome.runId)).toEqual(['run:reserve', 'undo:reserve']);
  });

  it('undo while sleeping works as for a paused run', async () => {
    const outcome = await client.run(SleepReactor, { ms: DAY });
    expect(await client.undo(outcome.runId)).toMatchObject({ status: 'cancelled', rollbackFailures: [] });
    expect(ledgerOf(outcome.runId)).toEqual(['run:reserve', 'undo:reserve']);
    expect(await locks.isHeld(runLeaseKey(outcome.runId))).toBe(false);
  });
  it('a wake-up delivered early is delayed again: the run sleeps on and wakes at its time, each step once', async () => {
    const outcome = await client.run(SleepReactor, { ms: 3_000 });
    if (outcome.status !== 'dispatched' || !outcome.sleeping) throw new Error('not sleeping');
    const { runId } = outcome;
    const { wakeAt } = outcome.sleeping;
    // A stray resume job (a duplicate, a sweeper's) delivered now, long before the wake-up time.
    const id = await app.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.dispatch({
      kind: 'resume',
      runId,
      reactorName: 'e2e-sleep',
    });
    expect(typeof id).toBe('string');
    // Handled (then removed, or kept as completed): it did not wake the run.
    await pollUntil(async () => {
      const job = await queue().getJob(id as string);
      return job === undefined || ['completed', 'failed', 'unknown'].includes(await job.getState());
    }, WAIT.timeoutMs);
    expect(clock.now()).toBeLessThan(wakeAt);
    expect(await client.get(runId)).toMatchObject({ status: 'running', sleeping: { step: 'wait', wakeAt } });
    expect(ledgerOf(runId)).toEqual(['run:reserve']);

    const done = await client.wait(runId, WAIT);
    expect(done).toMatchObject({
      status: 'completed',
      results: { wait: { sleptUntil: wakeAt } },
      attempts: { wait: 1 },
    });
    const woke =
      done.status === 'completed'
        ? done.trace.find((t) => t.type === 'run' && t.detail === 'waking from sleep')
        : undefined;
    expect(woke?.at).toBeGreaterThanOrEqual(wakeAt);
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:ship']);
  });

  it('a run reopened by retry (its job retries exhausted while it slept) keeps its wake-up time', async () => {
    const outcome = await client.run(SleepReactor, { ms: 3_000 });
    if (outcome.status !== 'dispatched' || !outcome.sleeping) throw new Error('not sleeping');
    const { runId } = outcome;
    const { wakeAt } = outcome.sleeping;
    // The queue gave up on its resume job: failed without a rollback.
    await app.get(ReactorEngine).failRun(runId, { code: 'JOB_RETRIES_EXHAUSTED', message: 'Redis timed out' });
    expect(await client.get(runId)).toMatchObject({ status: 'failed' });

    const reopened = await client.retry(runId);
    expect(reopened.runId).toBe(runId);
    // Its resume re-enters the sleep: parked again until the same time (not 3 s from now).
    await pollUntil(async () => (await client.get(runId))?.sleeping !== undefined, WAIT.timeoutMs);
    expect(await client.get(runId)).toMatchObject({ status: 'running', sleeping: { step: 'wait', wakeAt } });

    const done = await client.wait(runId, WAIT);
    expect(done).toMatchObject({ status: 'completed', results: { wait: { sleptUntil: wakeAt } } });
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:ship']);
  });

  describe.each([
    ['lock', LockedSleepReactor, 'LOCK_CONTENDED'],
    ['semaphore slot', SlotSleepReactor, 'SEMAPHORE_FULL'],
  ] as const)('a reactor %s the run holds', (_what, reactor, code) => {
    it('is kept across the sleep, past its TTL, and given back when the run ends', async () => {
      const outcome = await client.run(reactor, { ms: 3_000 });
      if (outcome.status !== 'dispatched' || !outcome.sleeping) throw new Error('not sleeping');
      await expect(client.run(reactor, { ms: 0 })).rejects.toMatchObject({ code });
      // Past the TTL (1 s) with no process extending it: still held (its TTL was pushed past the sleep).
      await untilTime(Date.now() + 2_000);
      expect(clock.now()).toBeLessThan(outcome.sleeping.wakeAt);
      await expect(client.run(reactor, { ms: 0 })).rejects.toMatchObject({ code });

      expect(await client.wait(outcome.runId, WAIT)).toMatchObject({ status: 'completed', value: 'shipped' });
      expect(await client.run(reactor, { ms: 0 })).toMatchObject({ status: 'completed' });
    });
  });

  it('a sleep in a fan-out map element fails CONFIGURATION_INVALID, naming the step', async () => {
    const started = await client.start(SleepInElementReactor, { items: [1, 2] });
    expect(await client.wait(started.runId, WAIT)).toMatchObject({
      status: 'failed',
      failure: {
        code: 'CONFIGURATION_INVALID',
        errorMessage: expect.stringContaining("sleep 'wait': a sleep cannot run in a map element"),
      },
    });
  });
});

describe('r.sleep longer than the record retention on Redis (hops)', () => {
  const RETENTION_MS = 4_000;
  let app: TestingModule;
  let client: ReactorClient;
  let keys: RedisKeys;

  beforeAll(async () => {
    const prefix = redisPrefix('e2e-sleep-hops');
    ({ app, client } = await createRedisApp(
      prefix,
      { sweeper: { enabled: false }, contextTtlMs: RETENTION_MS },
      { providers: [SleepReactor] },
    ));
    keys = new RedisKeys({ prefix });
  });

  afterAll(async () => {
    await app?.close();
  });

  it('a sleep of 3x the retention parks in hops of half of it: the record TTL is refreshed at each hop, the run completes', async () => {
    const SLEEP_MS = 3 * RETENTION_MS;
    const outcome = await client.run(SleepReactor, { ms: SLEEP_MS });
    if (outcome.status !== 'dispatched' || !outcome.sleeping) throw new Error('not sleeping');
    const { runId } = outcome;
    const { wakeAt } = outcome.sleeping;
    const key = keys.runKey(runId);

    // Watch the record's PTTL until the run completes: it never expires, and each hop (every
    // RETENTION_MS / 2) writes it again, its PTTL back near RETENTION_MS.
    const pttls: number[] = [];
    const wakeTimes = new Set<string>();
    let view = await client.get(runId);
    while (view?.status === 'running') {
      pttls.push(await redis().pttl(key));
      const parked = await app.get(ReactorEngine).get(runId);
      if (parked?.sleeping) wakeTimes.add(String(parked.sleeping.wakeAt));
      await new Promise((resolve) => setTimeout(resolve, 50));
      view = await client.get(runId);
      if (Date.now() > wakeAt + WAIT.timeoutMs) throw new Error(`run ${runId} still ${view?.status}`);
    }
    expect(view).toMatchObject({ status: 'completed', results: { wait: { sleptUntil: wakeAt } } });
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:ship']);
    expect(Math.min(...pttls)).toBeGreaterThan(0); // the record was there throughout (-2: gone)
    // Refreshes: the PTTL jumped back up. 12 s in hops of 2 s: parked again at 2, 4, 6, 8 and 10 s.
    const refreshes = pttls.filter((p, i) => i > 0 && p > pttls[i - 1] + 500).length;
    expect(refreshes).toBeGreaterThanOrEqual(SLEEP_MS / (RETENTION_MS / 2) - 1);
    expect(wakeTimes).toEqual(new Set([String(wakeAt)])); // the wake-up time stays
  }, 40_000);
});

describe('r.sleep through ReactorClient on the embedded runtime (the parity side)', () => {
  it('a sleep of milliseconds parks the run and the in-process delayed job completes it', async () => {
    const app = await createEmbeddedApp([SleepReactor]);
    try {
      const client = app.get(ReactorClient);
      const outcome = await client.run(SleepReactor, { ms: 50 });
      expect(outcome).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait' } });
      expect(await client.get(outcome.runId)).toMatchObject({ status: 'running', sleeping: { step: 'wait' } });
      const done = await client.wait(outcome.runId, WAIT);
      expect(done).toMatchObject({
        status: 'completed',
        value: 'shipped',
        results: { wait: { sleptUntil: expect.any(Number) } },
      });
      expect(ledgerOf(outcome.runId)).toEqual(['run:reserve', 'run:ship']);
    } finally {
      await app.close();
    }
  });
});
