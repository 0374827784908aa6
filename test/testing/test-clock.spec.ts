import { InProcessJobDispatcher } from '../../lib/runtime/in-process-job.dispatcher';
import { TestClock } from '../../lib/testing';

const job = (runId: string) => ({ kind: 'resume' as const, runId, reactorName: 'r' });

describe('TestClock', () => {
  it('sleep moves time at once; a timer fires only when time reaches it, by advance or by a sleep passing it', async () => {
    const clock = new TestClock(1_000);
    const fired: string[] = [];
    void clock.timer(100).then(() => fired.push('t100'));
    void clock.timer(50).then(() => fired.push('t50'));
    expect(clock.pendingTimers).toBe(2);
    expect(clock.nextTimerAt()).toBe(1_050);

    await clock.sleep(49);
    await Promise.resolve();
    expect(clock.now()).toBe(1_049);
    expect(fired).toEqual([]);

    await clock.sleep(1);
    await Promise.resolve();
    expect(fired).toEqual(['t50']);

    clock.advance(1_000);
    await Promise.resolve();
    expect(fired).toEqual(['t50', 't100']);
    expect(clock.pendingTimers).toBe(0);
    expect(clock.sleeps).toEqual([49, 1]);
  });

  it("the in-process dispatcher holds a delayed job on the clock's timer, and idle() does not wait for it", async () => {
    const clock = new TestClock();
    const dispatcher = new InProcessJobDispatcher(clock);
    const handled: string[] = [];
    dispatcher.setHandler(async (j) => {
      handled.push(j.runId);
    });

    await dispatcher.dispatch(job('now'));
    await dispatcher.dispatch(job('later'), { delayMs: 5_000 });
    await dispatcher.idle();
    expect(handled).toEqual(['now']);

    clock.advance(5_000);
    await new Promise((resolve) => setImmediate(resolve));
    await dispatcher.idle();
    expect(handled).toEqual(['now', 'later']);
    dispatcher.close();
  });
});
