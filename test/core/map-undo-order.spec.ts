/**
 * Completed map elements are undone highest index first (ruby_reactor's rollback order), on the
 * embedded runtime, inline and fan-out alike, whatever order the elements completed in, for each
 * way a rollback starts: an element failing, a later step failing, a manual undo.
 * (On Redis and BullMQ: test/e2e/maps.e2e.spec.ts, "rollback: highest index first".)
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

const COUNT = 8;

/** Element `n` completes after `COUNT - n` turns of the event loop: the highest index completes first. */
function element(log: string[], failOn?: number) {
  return defineReactor('undo-order-element', (r: ReactorBuilder<{ n: number }>) =>
    r.step(
      'work',
      {
        run: async ({ n }: { n: number }) => {
          for (let turn = 0; turn < COUNT - n; turn++) await new Promise((resolve) => setImmediate(resolve));
          log.push(`run:${n}`);
          return n === failOn ? failure(new Error(`element ${n} broke`), { retryable: false }) : success(n);
        },
        undo: (_value: number, { n }: { n: number }) => void log.push(`undo:${n}`),
      },
      { n: r.input('n', { type: 'integer' }) },
    ),
  );
}

type Mode = { name: string; concurrency?: number; fanOut?: number };
const MODES: Mode[] = [
  { name: 'inline, one at a time' },
  { name: 'inline, 4 at a time', concurrency: 4 },
  { name: 'fan-out, batchSize 1', fanOut: 1 },
  { name: 'fan-out, batchSize 4', fanOut: 4 },
];

function owner(mode: Mode, failLater: boolean) {
  return defineReactor(
    `undo-order-${mode.fanOut ? `fan${mode.fanOut}` : `inline${mode.concurrency ?? 1}`}-${failLater}`,
    (r) => {
      const mapped = r.map('each', {
        source: r.value([...Array(COUNT).keys()]),
        element: 'undo-order-element',
        inputs: (n) => ({ n }),
        concurrency: mode.concurrency,
        fanOut: mode.fanOut ? { batchSize: mode.fanOut } : undefined,
      });
      if (failLater)
        r.step('after', () => failure('later step broke', { retryable: false }), {}, { waitFor: [mapped] });
      return mapped;
    },
  );
}

function undone(log: string[]): number[] {
  return log.filter((l) => l.startsWith('undo:')).map((l) => Number(l.slice(5)));
}

/**
 * Highest index first. With more than one element rollback in flight (a fan-out batch wider than
 * one), the element of rank r (0 = highest) is started only after r - batch + 1 others reported,
 * so it is never undone earlier than that.
 */
function expectHighestFirst(order: number[], expected: number[], batch: number): void {
  expect([...order].sort((a, b) => b - a)).toEqual(expected);
  if (batch === 1) {
    expect(order).toEqual(expected);
    return;
  }
  for (const [position, index] of order.entries())
    expect(expected.indexOf(index)).toBeLessThanOrEqual(position + batch - 1);
}

describe.each(MODES)('map undo order ($name)', (mode) => {
  const batch = mode.fanOut ?? 1;

  async function runToEnd(failLater: boolean, failOn?: number) {
    const log: string[] = [];
    const h = createHarness();
    h.engine.register(element(log, failOn));
    const def = owner(mode, failLater);
    h.engine.register(def);
    const started = await h.engine.run(def, {});
    const outcome =
      started.status === 'dispatched' ? await h.engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
    await h.dispatcher.idle();
    return { log, outcome, h };
  }

  it('a later step failing: every element undone, highest index first', async () => {
    const { log, outcome } = await runToEnd(true);
    expect(outcome).toMatchObject({ status: 'failed', failure: { stepName: 'after' } });
    expectHighestFirst(undone(log), [7, 6, 5, 4, 3, 2, 1, 0], batch);
  });

  it('undo(runId) of a completed run: every element undone, highest index first', async () => {
    const { log, outcome, h } = await runToEnd(false);
    expect(outcome.status).toBe('completed');
    const final = await h.engine.undo(outcome.runId, { timeoutMs: 10_000 });
    await h.dispatcher.idle();
    expect(final.status).toBe('cancelled');
    expectHighestFirst(undone(log), [7, 6, 5, 4, 3, 2, 1, 0], batch);
  });

  it('an element failing (atomic): the completed ones undone, highest index first', async () => {
    const { log, outcome } = await runToEnd(false, 2);
    expect(outcome).toMatchObject({ status: 'failed', failure: { cause: { elementIndex: 2 } } });
    const completed = log
      .filter((l) => l.startsWith('run:'))
      .map((l) => Number(l.slice(4)))
      .filter((n) => n !== 2)
      .sort((a, b) => b - a);
    expect(completed.length).toBeGreaterThan(0);
    expectHighestFirst(undone(log), completed, batch);
  });
});
