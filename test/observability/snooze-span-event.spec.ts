import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness } from '../core/harness';
import { eventsOf, useInMemoryTracing } from './otel.harness';

describe('OpenTelemetry: a step snoozing on its own lock', () => {
  const otel = useInMemoryTracing();

  it('records reactor.step.snooze on the step span, with the delay and the contention (naming the key)', async () => {
    const { engine, coordination, dispatcher } = createHarness();
    const def = defineReactor('otel-snooze', (r: ReactorBuilder<{ account: string }>) =>
      r.step(
        'charge',
        ({ account }: { account: string }) => success(account),
        {
          account: r.input('account', { type: 'string' }),
        },
        { lock: { key: () => 'processor', ttlMs: 2_000 } },
      ),
    );
    engine.register(def);
    const held = await coordination.acquireLock('processor', 'someone-else', 60_000);
    if (!held.acquired) throw new Error('the test could not take the lock');

    const started = await engine.run(def, { account: 'a-1' });
    expect(started.status).toBe('dispatched');
    const snoozed = otel.spans().filter((s) => s.name === 'reactor.step charge');
    expect(snoozed.length).toBeGreaterThan(0);
    const events = eventsOf(snoozed[0]!);
    expect(events).toEqual([
      {
        name: 'reactor.step.snooze',
        attributes: {
          'reactor.retry.delay_ms': expect.any(Number),
          'reactor.error.message': expect.stringContaining("key 'processor'"),
        },
      },
    ]);
    await coordination.releaseLock('processor', 'someone-else', held.fence);
    await dispatcher.idle();
  });
});
