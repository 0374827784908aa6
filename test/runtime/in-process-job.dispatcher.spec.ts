import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { InProcessJobDispatcher } from '../../lib/runtime/in-process-job.dispatcher';

const DAY = 24 * 60 * 60 * 1000;

describe('InProcessJobDispatcher', () => {
  afterEach(() => jest.useRealTimers());

  it('waits a delay longer than one timer can (30 days) instead of firing at once', async () => {
    jest.useFakeTimers();
    const delivered: ReactorJob[] = [];
    const dispatcher = new InProcessJobDispatcher();
    dispatcher.setHandler(async (job) => void delivered.push(job));
    await dispatcher.dispatch({ kind: 'resume', runId: 'r1', reactorName: 'x' }, { delayMs: 30 * DAY });
    await jest.advanceTimersByTimeAsync(1);
    expect(delivered).toEqual([]);
    await jest.advanceTimersByTimeAsync(29 * DAY);
    expect(delivered).toEqual([]);
    await jest.advanceTimersByTimeAsync(DAY);
    expect(delivered).toEqual([{ kind: 'resume', runId: 'r1', reactorName: 'x' }]);
    dispatcher.close();
  });
});
