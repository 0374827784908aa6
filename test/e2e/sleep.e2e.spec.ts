/**
 * Durable sleep on Redis and BullMQ: a run that reaches `r.sleep` is parked (status `running`, a
 * hand-off, its lease released, no worker held) and a BullMQ job delayed to its wake-up time resumes
 * it. A sleep of milliseconds completes; a sleep of days leaves that delayed job and nothing else,
 * and when the job is lost the sweeper wakes the run once the (moved) clock passes its time, not
 * before. Cancel and undo while sleeping work as while paused. The embedded side: test/core/sleep.spec.ts.
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

const { prefix: redisPrefix } = useRedisPrefixes();

describe('r.sleep on Redis and BullMQ (e2e)', () => {
  let app: TestingModule;
  let client: ReactorClient;
  let locks: LockManager;

  beforeAll(async () => {
    ({ app, client } = await createRedisApp(
      redisPrefix('e2e-sleep'),
      // Records kept a week: a 3-day sleep is one hop (a longer one parks in hops of half that).
      { sweeper: { enabled: false }, clock, contextTtlMs: 7 * DAY },
      { providers: [SleepReactor] },
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
