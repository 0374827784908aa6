/**
 * A paused run kept until its interrupt's deadline (retention per status keeps a run due later
 * until then plus the retention) is still answered by its correlation id after the retention has
 * passed: the binding is kept as long as the run.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { TestClock } from '../../lib/testing/test-clock';
import { createTestEngine } from '../../lib/testing/test-engine';

const MINUTE = 60_000;

function reactor() {
  return defineReactor('corr-kept', (r: ReactorBuilder<{ orderId: string }>) => {
    const orderId = r.input('orderId', { type: 'string' });
    const decision = r.interrupt<{ approved: boolean }, { orderId: string }>('approve', {
      args: { orderId },
      correlationId: ({ args }) => `order-${args.orderId}`,
      payload: { approved: { type: 'boolean' } },
      timeoutMs: 60 * MINUTE,
    });
    return r.step('done', ({ d }: { d: { approved: boolean } }) => success(d.approved), { d: decision });
  });
}

describe('correlation ids of a run kept until its deadline', () => {
  it('answers by correlation id after the retention has passed, before the deadline', async () => {
    const clock = new TestClock();
    const { engine } = createTestEngine({ clock, interruptRetentionMs: 5 * MINUTE });
    const def = reactor();
    engine.register(def);
    const paused = await engine.run(def, { orderId: 'o-9' });
    expect(paused.status).toBe('paused');
    clock.advance(30 * MINUTE); // past the retention (5 min), before the deadline (60 min)
    const answered = await engine.continueByCorrelationId('corr-kept', 'approve', 'order-o-9', { approved: true });
    expect(answered).toMatchObject({ runId: paused.runId });
    expect(await engine.wait(paused.runId)).toMatchObject({ status: 'completed', value: true });
  });

  it('an interrupt without a deadline keeps the binding for the retention, as before', async () => {
    const clock = new TestClock();
    const { engine } = createTestEngine({ clock, interruptRetentionMs: 5 * MINUTE });
    const def = defineReactor('corr-no-deadline', (r: ReactorBuilder<{ orderId: string }>) => {
      const orderId = r.input('orderId', { type: 'string' });
      return r.interrupt<unknown, { orderId: string }>('approve', {
        args: { orderId },
        correlationId: ({ args }) => `order-${args.orderId}`,
      });
    });
    engine.register(def);
    expect((await engine.run(def, { orderId: 'o-1' })).status).toBe('paused');
    clock.advance(6 * MINUTE);
    await expect(
      engine.continueByCorrelationId('corr-no-deadline', 'approve', 'order-o-1', {}, { ifNotReached: 'refuse' }),
    ).rejects.toMatchObject({ code: 'CORRELATION_ID_NOT_FOUND' });
  });
});
