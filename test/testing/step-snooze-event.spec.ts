/**
 * `step.snooze`: a step whose own lock is held elsewhere does not start; the event says which key
 * and how long until it is tried again (embedded runtime; test/e2e/step-snooze-event.e2e.spec.ts
 * runs the same on Redis and BullMQ).
 */
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { success, type ReactorBlueprint, type ReactorBuilder, type ReactorEvent } from '../../lib';
import { REACTOR_RUNTIME, type ReactorRuntime } from '../../lib/config';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { CapturingLogger } from '../nest/fixtures';

expect.extend(reactorMatchers);

@Injectable()
@Step('snooze-charge')
class SnoozeCharge {
  readonly ran: string[] = [];
  run({ account }: { account: string }) {
    this.ran.push(account);
    return success(`charged ${account}`);
  }
}

/** One step, serialized per card processor by its own lock. */
@Reactor('snooze-checkout')
class SnoozeCheckout implements ReactorBlueprint<{ account: string }> {
  build(r: ReactorBuilder<{ account: string }>) {
    return r.step(
      'charge',
      SnoozeCharge,
      { account: r.input('account', { type: 'string' }) },
      { lock: { key: ({ account }) => `processor:${String(account)}`, ttlMs: 3_000 } },
    );
  }
}

describe('step.snooze (embedded runtime)', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [SnoozeCharge, SnoozeCheckout],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
  });

  afterEach(() => moduleRef.close());

  it('is emitted with the key, the code and the delay when the step lock is held; the step runs once it is free', async () => {
    const { coordination } = moduleRef.get<ReactorRuntime>(REACTOR_RUNTIME);
    const held = await coordination.acquireLock('processor:acc-1', 'someone-else', 60_000);
    expect(held.acquired).toBe(true);

    const started = await kit.client.run(SnoozeCheckout, { account: 'acc-1' });
    expect(started.status).toBe('dispatched'); // a held step lock hands the run to a worker
    const snoozes = kit.eventsOf(started.runId, ['step.snooze']);
    expect(snoozes).toEqual([
      expect.objectContaining({
        type: 'step.snooze',
        step: 'charge',
        reactorName: 'snooze-checkout',
        key: 'processor:acc-1',
        code: 'LOCK_CONTENDED',
        snoozes: 1,
      }),
    ]);
    const first = snoozes[0] as Extract<ReactorEvent, { type: 'step.snooze' }>;
    expect(first.delayMs).toBeGreaterThan(0);
    expect(first.delayMs).toBeLessThanOrEqual(5_000);
    // As ruby_reactor's snooze_step: after the step's start event, and never a retry or a failure.
    expect(kit.sequenceOf(started.runId, ['step.start', 'step.snooze', 'step.retry', 'step.fail'])).toEqual([
      'step.start:charge',
      'step.snooze:charge',
    ]);

    // Still held when the snooze is over: it snoozes again, counted.
    await kit.advance(first.delayMs);
    expect(kit.eventsOf(started.runId, ['step.snooze']).map((e) => (e as typeof first).snoozes)).toEqual([1, 2]);

    if (!held.acquired) return;
    await coordination.releaseLock('processor:acc-1', 'someone-else', held.fence);
    await kit.runAllTimers();
    const done = await kit.client.wait(started.runId);
    expect(done).toHaveCompleted('charged acc-1');
    expect(done.attempts).toEqual({ charge: 1 }); // snoozes spend no attempt
    expect(moduleRef.get(SnoozeCharge).ran).toEqual(['acc-1']);
    expect(kit.sequenceOf(started.runId, ['step.snooze', 'step.start', 'step.complete', 'step.retry'])).toEqual([
      'step.start:charge',
      'step.snooze:charge',
      'step.start:charge',
      'step.snooze:charge',
      'step.start:charge',
      'step.complete:charge',
    ]);
  });

  it('is not emitted when the lock is free', async () => {
    const outcome = await kit.client.run(SnoozeCheckout, { account: 'acc-2' });
    expect(outcome).toHaveCompleted();
    expect(kit.eventsOf(outcome.runId, ['step.snooze'])).toEqual([]);
  });
});
