/**
 * `step.snooze` on Redis and BullMQ: a step whose own lock another holder has does not start; the
 * event names the key and the delay, the run is handed to a worker that tries again, and the step
 * runs once the lock is free (the embedded runtime: test/testing/step-snooze-event.spec.ts).
 */
import type { TestingModule } from '@nestjs/testing';
import { REACTOR_RUNTIME, type ReactorRuntime } from '../../lib/config';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorEvent } from '../../lib/core/middleware/events';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { RecordingMiddleware } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { createRedisApp, useRedisPrefixes } from './e2e.fixtures';

expect.extend(reactorMatchers);

const ran: string[] = [];

@Reactor('e2e-snooze-checkout')
class SnoozeCheckout implements ReactorBlueprint<{ account: string }> {
  build(r: ReactorBuilder<{ account: string }>) {
    return r.step(
      'charge',
      ({ account }: { account: string }) => (ran.push(account), success(`charged ${account}`)),
      { account: r.input('account', { type: 'string' }) },
      { lock: { key: ({ account }) => `processor:${String(account)}`, ttlMs: 3_000 } },
    );
  }
}

type SnoozeEvent = Extract<ReactorEvent, { type: 'step.snooze' }>;

// The file's Redis connection and prefix cleanup, after the describe's app is closed.
const { prefix: redisPrefix } = useRedisPrefixes();

describe('step.snooze on Redis and BullMQ (e2e)', () => {
  const prefix = redisPrefix('e2e-snooze');
  const recorder = new RecordingMiddleware();
  let app: TestingModule;
  let client: ReactorClient;

  beforeAll(async () => {
    ({ app, client } = await createRedisApp(
      prefix,
      { sweeper: { enabled: false }, middleware: [recorder] },
      { providers: [SnoozeCheckout] },
    ));
  });

  afterAll(async () => {
    await app?.close();
  });

  it('names the key and the delay; a worker runs the step after the delay, once the lock is free, with no attempt spent', async () => {
    const { coordination } = app.get<ReactorRuntime>(REACTOR_RUNTIME);
    const held = await coordination.acquireLock('processor:acc-1', 'someone-else', 60_000);
    if (!held.acquired) throw new Error('the test could not take the lock');

    const started = await client.run(SnoozeCheckout, { account: 'acc-1' });
    expect(started.status).toBe('dispatched');
    const snoozes = () =>
      recorder.events.filter((e): e is SnoozeEvent => e.type === 'step.snooze' && e.runId === started.runId);
    expect(snoozes()[0]).toMatchObject({
      step: 'charge',
      reactorName: 'e2e-snooze-checkout',
      key: 'processor:acc-1',
      code: 'LOCK_CONTENDED',
      snoozes: 1,
    });
    expect(snoozes()[0]!.delayMs).toBeGreaterThan(0);
    expect(snoozes()[0]!.delayMs).toBeLessThanOrEqual(5_000);

    expect(ran).toEqual([]);

    await coordination.releaseLock('processor:acc-1', 'someone-else', held.fence);
    const done = await client.wait(started.runId, { timeoutMs: 15_000 });
    expect(done).toHaveCompleted('charged acc-1');
    expect(done.attempts).toEqual({ charge: 1 });
    expect(ran).toEqual(['acc-1']);
    const failures = recorder.events.filter((e) => e.runId === started.runId && e.type === 'step.fail');
    expect(failures).toEqual([]);
  }, 30_000);
});
