import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { mapIdOf } from '../../lib/core/model/keys';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

const secret = 'tok_live_SECRET';

/** A child that does not declare its input redacted, and fails or succeeds on demand. */
function charge(name: string, fail: boolean) {
  return defineReactor(name, (r: ReactorBuilder<{ card: string; n?: number }>) =>
    r.step(
      'charge',
      ({ card }: { card: string }) => {
        if (fail) throw new Error('declined');
        return success(card.length);
      },
      { card: r.input('card', { type: 'string' }), n: r.input('n', { type: 'any', optional: true }) } as never,
    ),
  );
}

describe('redaction follows a value into children and elements', () => {
  it.each([
    ['fails', true],
    ['completes', false],
  ] as const)(
    'a composed child given a redacted input never shows it: view, trace, failure, events (child %s)',
    async (_c, fail) => {
      const { engine, recorder } = createHarness();
      const child = charge('card-child', fail);
      engine.register(child);
      const parent = defineReactor('card-parent', (r: ReactorBuilder<{ card: string }>) =>
        r.compose('pay', child, { card: r.input('card', { type: 'string', redact: true }) }),
      );
      const outcome = await engine.run(parent, { card: secret });
      expect(outcome.status).toBe(fail ? 'failed' : 'completed');
      const view = await engine.get(outcome.runId);
      expect(view?.children.pay.inputs).toEqual({ card: '[REDACTED]' });
      const childRun = view!.children.pay.trace.find((t) => t.type === 'run' && t.step === 'charge');
      expect(childRun?.arguments).toEqual({ card: '[REDACTED]' });
      const starts = recorder.events.filter((e) => e.type === 'reactor.start');
      expect(starts.map((e) => e.type === 'reactor.start' && e.inputs)).toEqual([
        { card: '[REDACTED]' },
        { card: '[REDACTED]' },
      ]);
      expect(JSON.stringify({ outcome, view, events: recorder.events })).not.toContain(secret);
    },
  );

  it.each([
    ['inline', undefined],
    ['fan-out', 2],
  ] as const)(
    'a map element given a redacted input, or an element of a redacted collection, never shows it (%s)',
    async (_m, fanOut) => {
      const { engine, recorder, maps, dispatcher } = createHarness();
      const element = charge('card-element', true);
      engine.register(element);
      const parent = defineReactor(
        `cards-${fanOut ?? 'inline'}`,
        (r: ReactorBuilder<{ cards: string[]; token: string }>) => {
          const token = r.input('token', { type: 'string', redact: true });
          const byToken = r.map('by-token', {
            source: r.value([1, 2]),
            element: 'card-element',
            inputs: (n) => ({ card: token, n }),
            atomic: false,
            fanOut: fanOut ? { batchSize: fanOut } : undefined,
          });
          return r.map('by-card', {
            source: r.input('cards', { type: 'array', redact: true }),
            element: 'card-element',
            inputs: (card) => ({ card }),
            atomic: false,
            fanOut: fanOut ? { batchSize: fanOut } : undefined,
            collect: async () => 'done',
            waitFor: [byToken],
          });
        },
      );
      const started = await engine.run(parent, { cards: [secret, secret], token: secret });
      const outcome = fanOut ? await engine.wait(started.runId, { timeoutMs: 10_000 }) : started;
      await dispatcher.idle();
      expect(outcome.status).toBe('completed');
      const view = await engine.get(outcome.runId);
      const records = fanOut
        ? [
            ...(await maps.records(mapIdOf(outcome.runId, 'by-token'), 0, 2)),
            ...(await maps.records(mapIdOf(outcome.runId, 'by-card'), 0, 2)),
          ]
        : [];
      const failures = JSON.stringify(records);
      if (fanOut) expect(failures).toContain('[REDACTED]');
      expect(JSON.stringify({ outcome, view, events: recorder.events, records })).not.toContain(secret);
    },
  );
});
