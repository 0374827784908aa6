/**
 * A run sleeping at `r.sleep` keeps its reactor's lock across the sleep (its TTL pushed past the
 * wake-up time); undoing it gives the lock back at once, as `cancel` does, not when the TTL runs
 * out (review finding: `undo` of a sleeping run left the lock held for the whole sleep).
 * Embedded runtime with a TestClock.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { createTestEngine } from '../../lib/testing/test-engine';
import { TestClock } from '../../lib/testing/test-clock';

const HOUR = 60 * 60 * 1000;

describe('undo of a sleeping run gives its lock back at once (embedded runtime)', () => {
  it('the lock is held while the run sleeps, and free right after undo', async () => {
    const clock = new TestClock();
    const { engine, coordination } = createTestEngine({ clock });
    const log: string[] = [];
    const def = defineReactor(
      'sleep-locked',
      (r: ReactorBuilder<object>) => {
        r.step('reserve', { run: () => success('R1'), undo: () => void log.push('undo:reserve') }, {});
        r.sleep('wait', { ms: HOUR, waitFor: ['reserve'] });
        return r.step('ship', () => success('shipped'), {}, { waitFor: ['wait'] });
      },
      { lock: { key: () => 'cust:1', ttlMs: 10_000 } },
    );
    engine.register(def);

    const outcome = await engine.run(def, {});
    expect(outcome).toMatchObject({ status: 'dispatched', sleeping: { step: 'wait' } });
    // Kept across the sleep: another holder is refused.
    expect(await coordination.acquireLock('cust:1', 'someone-else', 10_000)).toMatchObject({ acquired: false });

    await expect(engine.undo(outcome.runId)).resolves.toMatchObject({ status: 'cancelled' });
    expect(log).toEqual(['undo:reserve']);
    // Given back by the undo, the clock not moved.
    expect(await coordination.acquireLock('cust:1', 'someone-else', 10_000)).toMatchObject({ acquired: true });
  });
});
