import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { ConfigurationError } from '../../lib/core/errors';
import { mapIdOf } from '../../lib/core/model/keys';
import { success } from '../../lib/core/results/step-outcome';
import { fieldsHolding, SECRET, testCipher } from '../conformance/test-cipher';
import { createHarness } from './harness';

/** A payment child: remembers the card it charged so that its undo can refund it. */
const payment = (log: string[]) =>
  defineReactor('enc-payment', (r: ReactorBuilder<{ card: string }>) =>
    r.step(
      'charge',
      {
        run: ({ card }: { card: string }) => success(`charged-${card.length}`),
        undo: (_charged: unknown, { card }: { card: string }) => void log.push(`refund:${card}`),
      },
      { card: r.input('card', { type: 'string' }) },
    ),
  );

const lineItem = defineReactor('enc-line', (r: ReactorBuilder<{ card: string; sku: string }>) =>
  r.step('reserve', ({ sku }: { sku: string }) => success(`r-${sku}`), {
    card: r.input('card', { type: 'string' }),
    sku: r.input('sku', { type: 'string' }),
  } as never),
);

/** Checkout: charges through a child, reserves lines inline and fanned out, then fails at `ship`. */
function checkout(log: string[], shipFails: boolean) {
  const child = payment(log);
  const def = defineReactor(
    'enc-checkout',
    (r: ReactorBuilder<{ card: string; skus: string[] }>) => {
      const card = r.input('card', { type: 'string', redact: true });
      const skus = r.input('skus', { type: 'array' });
      const hold = r.step(
        'hold',
        {
          run: ({ card }: { card: string }) => success(`hold-${card.length}`),
          undo: (_held: unknown, { card }: { card: string }) => void log.push(`release:${card}`),
        },
        { card },
      );
      const pay = r.compose('pay', child, { card }, { waitFor: [hold] } as never);
      const inline = r.map('lines', {
        source: skus,
        element: 'enc-line',
        inputs: (sku) => ({ card, sku }),
        waitFor: [pay],
      });
      const fanned = r.map('fanned', {
        source: skus,
        element: 'enc-line',
        inputs: (sku) => ({ card, sku }),
        fanOut: { batchSize: 2 },
        waitFor: [inline],
      });
      return r.step(
        'ship',
        () => {
          if (shipFails) throw new Error('no courier');
          return success('shipped');
        },
        {},
        { waitFor: [fanned] } as never,
      );
    },
    { encryptInputs: true },
  );
  return { def, child };
}

describe('encryptInputs', () => {
  it('refuses to register a reactor declaring it when storage has no input cipher, naming the reactor and the fix', () => {
    const { engine } = createHarness();
    const { def } = checkout([], false);
    expect(() => engine.register(def)).toThrow(ConfigurationError);
    expect(() => engine.register(def)).toThrow(
      /Reactor 'enc-checkout' declares encryptInputs, but its storage has no input cipher.*inputCipher/,
    );
  });

  it('refuses a non-boolean value at definition', () => {
    expect(() => defineReactor('enc-bad', (r) => r.value(1), { encryptInputs: 'yes' as never })).toThrow(
      /encryptInputs must be true or false/,
    );
  });

  it.each([
    ['completes', false],
    ['fails and rolls back', true],
  ] as const)(
    'a run that %s stores no input in clear (run, child, inline and fan-out elements), and its steps and undos get them',
    async (_c, shipFails) => {
      const log: string[] = [];
      const { engine, storage, maps, dispatcher } = createHarness({}, { inputCipher: testCipher });
      const { def, child } = checkout(log, shipFails);
      for (const d of [lineItem, child, def]) engine.register(d);
      const started = await engine.run(def, { card: SECRET, skus: ['a', 'b', 'c'] });
      const outcome = await engine.wait(started.runId, { timeoutMs: 10_000 });
      await dispatcher.idle();
      expect(outcome.status).toBe(shipFails ? 'failed' : 'completed');
      if (shipFails) expect(log).toEqual([`refund:${SECRET}`, `release:${SECRET}`]);

      const raw = storage.readRaw(outcome.runId);
      expect(fieldsHolding(raw)).toEqual([]);
      expect(raw.inputs).toMatch(/^~/);
      expect(raw['c:pay']).toMatch(/^~/);
      const fanned = maps.readRaw(mapIdOf(outcome.runId, 'fanned'));
      expect(fanned.inputs).toHaveLength(3);
      expect([...fanned.inputs, ...fanned.states].filter((v) => v.includes(SECRET))).toEqual([]);
      expect((await maps.meta(mapIdOf(outcome.runId, 'fanned')))?.encryptInputs).toBe(true);

      // Read back through the engine: the run is whole, the card shown redacted.
      const view = await engine.get(outcome.runId);
      expect(view?.inputs).toEqual({ card: '[REDACTED]', skus: ['a', 'b', 'c'] });
      expect(JSON.stringify({ outcome, view })).not.toContain(SECRET);
      expect((await storage.load(outcome.runId))?.inputs.card).toBe(SECRET);
    },
  );

  it('a child reactor declaring it is stored sealed inside a parent that does not', async () => {
    const { engine, storage } = createHarness({}, { inputCipher: testCipher });
    const child = defineReactor(
      'enc-sealed-child',
      (r: ReactorBuilder<{ card: string }>) =>
        r.step('charge', ({ card }: { card: string }) => success(card.length), {
          card: r.input('card', { type: 'string', redact: true }),
        }),
      { encryptInputs: true },
    );
    engine.register(child);
    const parent = defineReactor('enc-open-parent', (r: ReactorBuilder<{ card: string }>) =>
      r.compose('pay', child, { card: r.input('card', { type: 'string' }) }),
    );
    const outcome = await engine.run(parent, { card: SECRET });
    expect(outcome.status).toBe('completed');
    const raw = storage.readRaw(outcome.runId);
    expect(raw['c:pay']).toMatch(/^~/);
    // The parent's own fields are its own business: it did not declare encryptInputs.
    expect(fieldsHolding(raw).sort()).toEqual(['inputs', 't:0', 'u:0']);
  });
});
