/**
 * `rollbackWaitMs` on a step's own lock and semaphore: how long its undo or compensate waits to take
 * them again (default: the lock's TTL, the semaphore's lease), before it is reported as a rollback
 * failure (`coordinationUnavailable`). Embedded runtime, on a fake clock; Redis and BullMQ:
 * test/e2e/step-rollback-wait.e2e.spec.ts.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepCoordinationOptions } from '../../lib/core/definition/coordination-spec';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

function reactor(name: string, log: string[], coordination: StepCoordinationOptions, shipFails = false) {
  return defineReactor(name, (r: ReactorBuilder<{ card: string }>) => {
    const charge = r.step(
      'charge',
      {
        run: ({ card }: { card: string }) => (log.push(`charge:${card}`), success(`ch-${card}`)),
        undo: (charge: string) => void log.push(`refund:${charge}`),
      },
      { card: r.input('card', { type: 'string' }) },
      coordination,
    );
    return r.step(
      'ship',
      () => (shipFails ? failure('no carrier', { retryable: false }) : success('sh-1')),
      {},
      { waitFor: [charge] },
    );
  });
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

describe("rollbackWaitMs: a step's undo waits that long for its lock (embedded runtime)", () => {
  it('bounds the wait: with the lock held past it, the undo is reported after rollbackWaitMs, not the TTL', async () => {
    const log: string[] = [];
    const { engine, coordination, clock } = createHarness();
    const def = reactor('rbw-bounded', log, { lock: { key: () => 'processor', ttlMs: 60_000, rollbackWaitMs: 2_000 } });
    engine.register(def);
    const done = await engine.run(def, { card: 'c1' });
    expect(done.status).toBe('completed');
    expect((await coordination.acquireLock('processor', 'someone-else', 60_000)).acquired).toBe(true);

    const before = clock.sleeps.length;
    const undone = await engine.undo(done.runId);
    expect(undone).toMatchObject({
      status: 'cancelled',
      rollbackFailures: [{ step: 'charge', kind: 'undo', reason: 'coordinationUnavailable' }],
    });
    expect(sum(clock.sleeps.slice(before))).toBe(2_000);
    expect(log).toEqual(['charge:c1']);
  });

  it('0: one try, no wait', async () => {
    const log: string[] = [];
    const { engine, coordination, clock } = createHarness();
    const def = reactor('rbw-zero', log, { lock: { key: () => 'processor', rollbackWaitMs: 0 } }, true);
    engine.register(def);
    // The run takes the lock for charge, then ship fails: the undo must take it again while another holds it.
    const original = coordination.acquireLock.bind(coordination);
    let takes = 0;
    coordination.acquireLock = async (key, owner, ttl) => {
      if (key === 'processor' && ++takes === 2) await original('processor', 'someone-else', 60_000);
      return original(key, owner, ttl);
    };
    const before = clock.sleeps.length;
    const outcome = await engine.run(def, { card: 'c2' });
    expect(outcome).toMatchObject({
      status: 'failed',
      failure: {
        stepName: 'ship',
        rollbackFailures: [{ step: 'charge', kind: 'undo', reason: 'coordinationUnavailable' }],
      },
    });
    expect(clock.sleeps.slice(before)).toEqual([]);
    expect(log).toEqual(['charge:c2']);
  });

  it('a holder whose lock expires within the wait: the undo runs (the default waits up to the TTL)', async () => {
    for (const [name, option, undoneOk] of [
      ['rbw-default', {}, true],
      ['rbw-short', { rollbackWaitMs: 1_000 }, false],
    ] as const) {
      const log: string[] = [];
      const { engine, coordination } = createHarness();
      const def = reactor(name, log, { lock: { key: () => 'processor', ttlMs: 5_000, ...option } });
      engine.register(def);
      const done = await engine.run(def, { card: 'c3' });
      // Another holder whose lock lapses in 3 s (a crashed worker's, say).
      expect((await coordination.acquireLock('processor', 'crashed-worker', 3_000)).acquired).toBe(true);
      const undone = await engine.undo(done.runId);
      if (undoneOk) {
        expect(undone).toMatchObject({ status: 'cancelled', rollbackFailures: [] });
        expect(log).toEqual(['charge:c3', 'refund:ch-c3']);
      } else {
        expect(undone).toMatchObject({ rollbackFailures: [{ step: 'charge', reason: 'coordinationUnavailable' }] });
        expect(log).toEqual(['charge:c3']);
      }
    }
  });

  it('applies to a semaphore slot too, and a bad value is refused at definition', async () => {
    const log: string[] = [];
    const { engine, coordination, clock } = createHarness();
    const def = reactor('rbw-semaphore', log, {
      semaphore: { key: () => 'gateway', limit: 1, leaseMs: 60_000, rollbackWaitMs: 500 },
    });
    engine.register(def);
    const done = await engine.run(def, { card: 'c4' });
    expect((await coordination.acquireSemaphore('gateway', 'someone-else', 1, 60_000)).acquired).toBe(true);
    const before = clock.sleeps.length;
    const undone = await engine.undo(done.runId);
    expect(undone).toMatchObject({ rollbackFailures: [{ step: 'charge', reason: 'coordinationUnavailable' }] });
    expect(sum(clock.sleeps.slice(before))).toBe(500);

    expect(() => reactor('rbw-bad', [], { lock: { key: () => 'k', rollbackWaitMs: -1 } })).toThrow(
      /step 'charge'.*lock\.rollbackWaitMs must be an integer >= 0 \(got -1\)/,
    );
  });
});
