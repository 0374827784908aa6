/**
 * `rollbackWaitMs` on Redis and BullMQ: a step's undo waits that long (not the lock's TTL) to take
 * its lock again, and runs when the other holder's lock lapses within the wait (the embedded
 * runtime: test/core/step-rollback-wait.spec.ts).
 */
import type { Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { REACTOR_RUNTIME, type ReactorRuntime } from '../../lib/config';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { reactorMatchers } from '../../lib/testing/jest';
import { createRedisApp, useRedisPrefixes } from './e2e.fixtures';

expect.extend(reactorMatchers);

const refunds: string[] = [];

/** One step under its own lock (TTL 60 s), whose undo waits at most `rollbackWaitMs` for it. */
function rollbackWaitReactor(name: string, rollbackWaitMs: number): Type {
  @Reactor(name)
  class RollbackWaitReactor implements ReactorBlueprint<{ card: string }> {
    build(r: ReactorBuilder<{ card: string }>) {
      return r.step(
        'charge',
        {
          run: ({ card }: { card: string }) => success(`ch-${card}`),
          undo: (charge: string) => void refunds.push(charge),
        },
        { card: r.input('card', { type: 'string' }) },
        { lock: { key: ({ card }) => `processor:${String(card)}`, ttlMs: 60_000, rollbackWaitMs } },
      );
    }
  }
  return RollbackWaitReactor;
}

const RollbackWaitReactor = rollbackWaitReactor('e2e-rollback-wait', 300);
/** The same with a longer wait: 5 s. */
const LongRollbackWaitReactor = rollbackWaitReactor('e2e-rollback-wait-long', 5_000);

// The file's Redis connection and prefix cleanup, after the describe's app is closed.
const { prefix: redisPrefix } = useRedisPrefixes();

describe('rollbackWaitMs on Redis and BullMQ (e2e)', () => {
  const prefix = redisPrefix('e2e-rollback-wait');
  let app: TestingModule;
  let client: ReactorClient;
  let runtime: ReactorRuntime;

  beforeAll(async () => {
    ({ app, client } = await createRedisApp(
      prefix,
      { sweeper: { enabled: false } },
      { providers: [RollbackWaitReactor, LongRollbackWaitReactor] },
    ));
    runtime = app.get<ReactorRuntime>(REACTOR_RUNTIME);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('the lock held past the wait: the undo is reported coordinationUnavailable after about rollbackWaitMs', async () => {
    const done = await client.run(RollbackWaitReactor, { card: 'c1' });
    expect(done).toHaveCompleted('ch-c1');
    const held = await runtime.coordination.acquireLock('processor:c1', 'someone-else', 60_000);
    expect(held.acquired).toBe(true);

    const started = Date.now();
    const undone = await client.undo(done.runId, { timeoutMs: 15_000 });
    const took = Date.now() - started;
    expect(undone).toHaveRollbackFailure('charge', { kind: 'undo', reason: 'coordinationUnavailable' });
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(10_000); // bounded by rollbackWaitMs, never the lock's 60 s TTL
    expect(refunds).toEqual([]);
  });

  it('a holder whose lock lapses within the wait: the undo runs', async () => {
    const done = await client.run(LongRollbackWaitReactor, { card: 'c2' });
    expect(done).toHaveCompleted('ch-c2');
    // A crashed worker's lock, lapsing in 500 ms.
    expect((await runtime.coordination.acquireLock('processor:c2', 'crashed-worker', 500)).acquired).toBe(true);

    const undone = await client.undo(done.runId, { timeoutMs: 15_000 });
    expect(undone).toMatchObject({ status: 'cancelled', rollbackFailures: [] });
    expect(refunds).toEqual(['ch-c2']);
  });
});
