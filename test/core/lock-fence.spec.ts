/**
 * A step's result is recorded only while the run still holds every lock and semaphore slot it
 * took (the reactor's, a composed child's, the step's own): a TTL that ran out during the step
 * (a stalled process) fails the step with `LOCK_LOST` / `SEMAPHORE_LOST`, compensated and rolled
 * back, its result never stored. `ctx.fence(key)` is the lock's fencing token, growing per holder.
 * Embedded runtime with a fake clock: the stall is the clock moved past the TTL inside the step.
 * Also: a run waiting for a retry keeps its lock for the delay plus the TTL, and no longer.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepContext } from '../../lib/core/definition/step';
import { failure, success } from '../../lib/core/results/step-outcome';
import type { CoordinationStore } from '../../lib/core/ports/coordination-store.port';
import { createTestEngine } from '../../lib/testing/test-engine';
import { TestClock } from '../../lib/testing/test-clock';
import { createHarness } from './harness';

const TTL_MS = 1_000;
/** Longer than {@link TTL_MS}, shorter than the run lease (60 s): the lock expires, the lease does not. */
const STALL_MS = 1_800;

/** Count the store's extend calls (the confirmation before a result is recorded is one per hold). */
function countExtends(store: CoordinationStore): { locks: number; semaphores: number } {
  const counts = { locks: 0, semaphores: 0 };
  const extendLock = store.extendLock.bind(store);
  const extendSemaphore = store.extendSemaphore.bind(store);
  store.extendLock = (...args) => (counts.locks++, extendLock(...args));
  store.extendSemaphore = (...args) => (counts.semaphores++, extendSemaphore(...args));
  return counts;
}

describe('a step is fenced by the locks and slots its run holds (embedded runtime)', () => {
  it('reactor lock lost while the step ran (stall past ttlMs): LOCK_LOST naming reactor, step and key; result not recorded; compensated and rolled back', async () => {
    const { engine, clock, storage } = createHarness();
    const log: string[] = [];
    const fences: Record<string, number> = {};
    // Another run of the same lock, writing down its fence.
    const other = defineReactor(
      'fence-other',
      (r: ReactorBuilder<object>) =>
        r.step('write', (_a: object, ctx: StepContext) => ((fences.other = ctx.fence()), success('other')), {}),
      { lock: { key: () => 'acct:1', ttlMs: TTL_MS } },
    );
    const stalling = defineReactor(
      'fence-stall',
      (r: ReactorBuilder<object>) => {
        const reserve = r.step(
          'reserve',
          { run: () => success('reserved'), undo: () => void log.push('undo reserve') },
          {},
        );
        return r.step(
          'charge',
          {
            run: async (_a: object, ctx: StepContext) => {
              fences.stalled = ctx.fence();
              clock.advance(STALL_MS); // the process stalls: the lock's TTL runs out
              // Another run takes the lock and goes in meanwhile (its holder is not extending).
              log.push(`other ${(await engine.run(other, {})).status}`);
              log.push('charged');
              return success('charged');
            },
            compensate: (error: unknown) => void log.push(`compensate charge: ${(error as { code?: string }).code}`),
          },
          {},
          { waitFor: [reserve] },
        );
      },
      { lock: { key: () => 'acct:1', ttlMs: TTL_MS } },
    );
    engine.register(stalling);
    engine.register(other);

    const outcome = await engine.run(stalling, {});

    expect(outcome).toMatchObject({
      status: 'failed',
      failure: {
        code: 'LOCK_LOST',
        reactorName: 'fence-stall',
        stepName: 'charge',
        retryable: false,
      },
    });
    if (outcome.status !== 'failed') throw new Error('not failed');
    expect(outcome.failure.errorMessage).toContain("the lock 'acct:1'");
    // The other run went in while the stalled one was inside, under a higher fence.
    expect(log).toEqual(['other completed', 'charged', 'compensate charge: LOCK_LOST', 'undo reserve']);
    expect(fences.other).toBeGreaterThan(fences.stalled);
    // The stalled step's result was never stored.
    const stored = await storage.load(outcome.runId);
    expect(stored?.results).not.toHaveProperty('charge');
    expect(stored?.completed).not.toContain('charge');
  });

  it("a step's own lock, and a semaphore slot, lost the same way: LOCK_LOST / SEMAPHORE_LOST with their keys", async () => {
    const { engine, clock } = createHarness();
    const stepLocked = defineReactor('fence-step-lock', (r: ReactorBuilder<{ id: string }>) =>
      r.step(
        'debit',
        async () => (clock.advance(STALL_MS), success('debited')),
        { id: r.input('id', { type: 'string' }) },
        { lock: { key: (a) => `wallet:${String(a.id)}`, ttlMs: TTL_MS } },
      ),
    );
    const semaphored = defineReactor(
      'fence-semaphore',
      (r: ReactorBuilder<object>) => r.step('call', async () => (clock.advance(STALL_MS), success('called')), {}),
      { semaphore: { key: () => 'api', limit: 2, leaseMs: TTL_MS } },
    );
    engine.register(stepLocked);
    engine.register(semaphored);

    expect(await engine.run(stepLocked, { id: 'w1' })).toMatchObject({
      status: 'failed',
      failure: { code: 'LOCK_LOST', reactorName: 'fence-step-lock', stepName: 'debit' },
    });
    const lostSlot = await engine.run(semaphored, {});
    expect(lostSlot).toMatchObject({
      status: 'failed',
      failure: { code: 'SEMAPHORE_LOST', reactorName: 'fence-semaphore', stepName: 'call' },
    });
    if (lostSlot.status === 'failed') expect(lostSlot.failure.errorMessage).toContain("semaphore 'api'");
  });

  it('a step that finishes within the TTL is recorded; a run that holds nothing is never checked', async () => {
    const { engine, coordination } = createHarness();
    const counts = countExtends(coordination);
    const locked = defineReactor(
      'fence-ok',
      (r: ReactorBuilder<object>) => {
        const a = r.step('a', () => success(1), {});
        return r.step('b', ({ v }: { v: number }) => success(v + 1), { v: a });
      },
      { lock: { key: () => 'k', ttlMs: TTL_MS }, semaphore: { key: () => 's', limit: 1, leaseMs: TTL_MS } },
    );
    const free = defineReactor('fence-free', (r: ReactorBuilder<object>) => {
      const a = r.step('a', () => success(1), {});
      return r.step('b', ({ v }: { v: number }) => success(v + 1), { v: a });
    });
    engine.register(locked);
    engine.register(free);

    expect(await engine.run(free, {})).toMatchObject({ status: 'completed', value: 2 });
    expect(counts).toEqual({ locks: 0, semaphores: 0 });
    expect(await engine.run(locked, {})).toMatchObject({ status: 'completed', value: 2 });
    // One confirmation per step, lock and slot together (the extension timer never fires here).
    expect(counts).toEqual({ locks: 2, semaphores: 2 });
  });

  it('ctx.fence: the step lock, the reactor lock, by key; growing per holder; a TypeError naming what is held when none matches', async () => {
    const { engine } = createHarness();
    const seen: Array<Record<string, unknown>> = [];
    const def = defineReactor(
      'fence-read',
      (r: ReactorBuilder<{ id: string }>) => {
        const own = r.step(
          'own',
          (_a: object, ctx: StepContext) => {
            seen.push({ own: ctx.fence(), byKey: ctx.fence('order:1'), reactor: ctx.fence('customer:c') });
            return success(1);
          },
          { id: r.input('id', { type: 'string' }) },
          { lock: { key: () => 'order:1' } },
        );
        return r.step(
          'plain',
          (_a: object, ctx: StepContext) => {
            seen.push({ reactor: ctx.fence() });
            try {
              ctx.fence('order:1'); // the step lock of `own` is not this step's
            } catch (error) {
              seen.push({ error: (error as Error).message, type: (error as Error).name });
            }
            return success(2);
          },
          {},
          { waitFor: [own] },
        );
      },
      { lock: { key: () => 'customer:c' } },
    );
    const unlocked = defineReactor('fence-none', (r: ReactorBuilder<object>) =>
      r.step('s', (_a: object, ctx: StepContext) => success(ctx.fence()), {}),
    );
    engine.register(def);
    engine.register(unlocked);

    expect(await engine.run(def, { id: 'x' })).toMatchObject({ status: 'completed' });
    expect(await engine.run(def, { id: 'x' })).toMatchObject({ status: 'completed' });
    const [first, firstPlain, firstError, second, secondPlain] = seen;
    expect(first.own).toBe(first.byKey);
    expect(firstPlain.reactor).toBe(first.reactor);
    expect(firstError).toEqual({
      type: 'TypeError',
      error: `Reactor 'fence-read' step 'plain': ctx.fence("order:1"): the run holds no lock 'order:1' here (it holds 'customer:c').`,
    });
    // A new holder of each key gets a higher token.
    expect(second.own as number).toBeGreaterThan(first.own as number);
    expect(second.reactor as number).toBeGreaterThan(first.reactor as number);
    expect(secondPlain.reactor).toBe(second.reactor);
    expect(await engine.run(unlocked, {})).toMatchObject({
      status: 'failed',
      failure: { exceptionClass: 'TypeError', errorMessage: expect.stringContaining('ctx.fence(): ') },
    });
  });

  it('a run waiting for its retry keeps its lock ttlMs past the due time; with no resume (its worker gone) the TTL frees it then', async () => {
    const clock = new TestClock();
    const { engine, coordination, dispatcher, idle } = createTestEngine({ clock });
    const def = defineReactor(
      'fence-retry-ttl',
      (r: ReactorBuilder<object>) =>
        r.step(
          'charge',
          (_a: object, ctx: StepContext) => (ctx.attempt === 1 ? failure(new Error('timeout')) : success('ok')),
          {},
          { retries: { maxAttempts: 2, backoff: 'fixed', baseDelayMs: 10_000 } },
        ),
      { lock: { key: () => 'customer:1', ttlMs: TTL_MS }, background: { all: true } },
    );
    engine.register(def);
    const started = await engine.start(def, {});
    await idle();
    expect(await engine.get(started.runId)).toMatchObject({ status: 'running', attempts: { charge: 1 } });
    // Held for the delay plus the TTL.
    expect(await coordination.acquireLock('customer:1', 'other', TTL_MS)).toEqual({
      acquired: false,
      holder: started.runId,
      retryAfterMs: 10_000 + TTL_MS,
    });
    // The worker dies: its resume never runs.
    dispatcher.close();
    clock.advance(10_000);
    expect(await coordination.acquireLock('customer:1', 'other', TTL_MS)).toMatchObject({ acquired: false });
    clock.advance(TTL_MS + 1);
    expect(await coordination.acquireLock('customer:1', 'other', TTL_MS)).toMatchObject({ acquired: true, count: 1 });
  });

  it('a composed child on the same key as its parent: the parent keeps its lock after the child leaves (its next step is recorded)', async () => {
    const { engine, coordination } = createHarness();
    const child = defineReactor('fence-child', (r: ReactorBuilder<object>) => r.step('c', () => success('c'), {}), {
      lock: { key: () => 'shared' },
    });
    engine.register(child);
    let after: boolean | undefined;
    const parent = defineReactor(
      'fence-parent',
      (r: ReactorBuilder<object>) => {
        const composed = r.compose('pay', child, {});
        return r.step(
          'after',
          async () => {
            // Another run is refused: the parent still holds the key.
            after = !(await coordination.acquireLock('shared', 'someone-else', 1_000)).acquired;
            return success('after');
          },
          {},
          { waitFor: [composed] },
        );
      },
      { lock: { key: () => 'shared' } },
    );
    engine.register(parent);
    expect(await engine.run(parent, {})).toMatchObject({ status: 'completed', value: 'after' });
    expect(after).toBe(true);
    // Given back whole when the run ended.
    expect(await coordination.acquireLock('shared', 'someone-else', 1_000)).toMatchObject({
      acquired: true,
      count: 1,
    });
  });
});
