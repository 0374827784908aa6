/**
 * `ctx.signal` on Redis, between processes: two engines on their own connections stand for two
 * processes. Worker A executes the run; its step blocks until its signal is aborted. The lease is
 * taken from A behind its back (as when A's event loop stalled and another worker took the run
 * over), or B cancels the run; A's next lease extension (every third of the lease TTL, one round
 * trip that also reads the cancel request) aborts the signal.
 */
import type Redis from 'ioredis';
import { ReactorEngine, type ReactorDefinition } from '../../lib/core';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { StepContext } from '../../lib/core/definition/step';
import { StepAbortedError } from '../../lib/core/errors/step-aborted.error';
import { success } from '../../lib/core/results/step-outcome';
import { RedisKeys, RedisLockManager, RedisReactorStorage } from '../../lib/storage/redis';
import { decodeRecord } from '../../lib/storage/run-record.codec';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { deferred } from './harness';

const LEASE_TTL_MS = 300;

/** a -> b -> c; `b` waits for its signal and throws its reason. */
function blocking(log: string[], contexts: StepContext[], entered: () => void): ReactorDefinition {
  return defineReactor('abortable', (r: ReactorBuilder<object>) => {
    const a = r.step('a', { run: () => (log.push('run:a'), success('A')), undo: () => void log.push('undo:a') }, {});
    const b = r.step(
      'b',
      {
        run: async (_args, ctx) => {
          log.push('run:b');
          contexts.push(ctx);
          entered();
          const signal = ctx.signal;
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          throw signal.reason;
        },
        compensate: (error) => void log.push(`compensate:b:${(error as StepAbortedError).abortCause}`),
      },
      {},
      { waitFor: [a], retries: { maxAttempts: 3, baseDelayMs: 1 } },
    );
    r.step('c', () => (log.push('run:c'), success('C')), {}, { waitFor: [b] });
  });
}

describe('ctx.signal on Redis (two processes)', () => {
  const prefix = uniquePrefix('abort-signal');
  const keys = new RedisKeys({ prefix });
  const connections: Redis[] = [];

  function engineOn(): { engine: ReactorEngine; storage: RedisReactorStorage; locks: RedisLockManager } {
    const redis = createTestRedis();
    connections.push(redis);
    const storage = new RedisReactorStorage(redis, { keys });
    const locks = new RedisLockManager(redis, { keys });
    const engine = new ReactorEngine({
      storage,
      locks,
      leaseTtlMs: LEASE_TTL_MS,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    return { engine, storage, locks };
  }

  afterAll(async () => {
    await cleanupPrefix(connections[0], prefix);
    for (const redis of connections) await quitAndWait(redis);
  });

  it('a worker whose lease is taken over aborts the step (lease-lost) and writes nothing more', async () => {
    const a = engineOn();
    const check = connections[0];
    const log: string[] = [];
    const contexts: StepContext[] = [];
    const inside = deferred();
    const running = a.engine.run(blocking(log, contexts, inside.resolve), {});
    await inside.promise;
    const { runId } = contexts[0];
    const runKey = keys.runKey(runId);
    const snapshot = await check.hgetall(runKey);
    expect(decodeRecord(runId, snapshot).state.completed).toEqual(['a']);

    // Another worker owns the run now: the lease key holds its token.
    await check.set(keys.leaseKey(runId), 'another-worker', 'PX', 10_000);
    const lost = contexts[0].signal;
    const reason = lost.aborted
      ? lost.reason
      : await new Promise<unknown>((resolve) =>
          lost.addEventListener('abort', () => resolve(lost.reason), { once: true }),
        );

    expect(reason).toBeInstanceOf(StepAbortedError);
    expect(reason).toMatchObject({ abortCause: 'lease-lost', runId, reactorName: 'abortable', stepName: 'b' });
    await expect(running).rejects.toMatchObject({ code: 'LEASE_LOST' });
    // Not retried, not compensated, c never started; the record and the new holder's lease are untouched.
    expect(log).toEqual(['run:a', 'run:b']);
    expect(await check.hgetall(runKey)).toEqual(snapshot);
    expect(await check.get(keys.leaseKey(runId))).toBe('another-worker');
    await check.del(keys.leaseKey(runId));
  });

  it('a cancel from another client reaches the step in flight at the next lease extension', async () => {
    const a = engineOn();
    const b = engineOn();
    const log: string[] = [];
    const contexts: StepContext[] = [];
    const inside = deferred();
    const def = blocking(log, contexts, inside.resolve);
    b.engine.register(def);
    const running = a.engine.run(def, {});
    await inside.promise;
    const { runId } = contexts[0];

    // B cannot take the run (A holds it): it stores the request and returns the run as it is.
    expect((await b.engine.cancel(runId, 'refund requested')).status).toBe('dispatched');
    // A's lease extension may have delivered it already, while the cancel call was returning.
    const signal = contexts[0].signal;
    const reason = signal.aborted
      ? signal.reason
      : await new Promise<unknown>((resolve) =>
          signal.addEventListener('abort', () => resolve(signal.reason), { once: true }),
        );

    expect(reason).toMatchObject({ abortCause: 'cancel', cancelReason: 'refund requested', stepName: 'b' });
    const outcome = await running;
    expect(outcome).toMatchObject({ status: 'cancelled', reason: 'refund requested', rollbackFailures: [] });
    expect(log).toEqual(['run:a', 'run:b', 'compensate:b:cancel', 'undo:a']);
    expect((await b.engine.get(runId))?.status).toBe('cancelled');
  });

  it('the extension script extends only for the holder and reports the cancel request (one round trip)', async () => {
    const { storage, locks } = engineOn();
    const check = connections[0];
    const runId = 'extend-probe';
    await check.hset(keys.runKey(runId), 'status', 'running');
    const lease = (await locks.acquire(`run:${runId}`, 1_000))!;

    expect(await storage.extendRunLease(runId, lease, 5_000)).toEqual({ held: true });
    expect(await check.pttl(keys.leaseKey(runId))).toBeGreaterThan(1_000);
    await check.hset(keys.runKey(runId), 'cancel', 'why not');
    expect(await storage.extendRunLease(runId, lease, 5_000)).toEqual({ held: true, cancel: 'why not' });
    expect(await storage.extendRunLease(runId, { ...lease, token: 'someone-else' }, 5_000)).toEqual({ held: false });
    await locks.release(lease);
    expect(await storage.extendRunLease(runId, lease, 5_000)).toEqual({ held: false });
  });
});
