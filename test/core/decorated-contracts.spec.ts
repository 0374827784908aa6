import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { success } from '../../lib/core/results/step-outcome';
import { Step } from '../../lib/nest/step.decorator';
import { createHarness } from './harness';

@Step('charge', {
  input: {
    amount: { type: 'integer', min: 1 },
    currency: { type: 'string', enum: ['EUR', 'USD'], optional: true, default: 'EUR' },
  },
  output: { type: 'string', pattern: /^ch_/ },
})
class Charge {
  static seen: unknown[] = [];
  run({ amount, currency }: { amount: number; currency?: string }) {
    Charge.seen.push({ amount, currency });
    return success(amount > 100 ? 'refused' : `ch_${amount}_${currency}`);
  }
}

describe('short-form contracts on a @Step class', () => {
  const reactor = () =>
    defineReactor('decorated-pay', (r: ReactorBuilder<{ amount: number }>) =>
      r.step('charge', Charge, { amount: r.input('amount', { type: 'any' }) } as never),
    );

  beforeEach(() => (Charge.seen = []));

  it('fills the default, validates the input before the body and the scalar output after it', async () => {
    const { engine } = createHarness();
    const ok = await engine.run(reactor(), { amount: 5 });
    expect(ok.status === 'completed' && ok.value).toBe('ch_5_EUR');
    expect(Charge.seen).toEqual([{ amount: 5, currency: 'EUR' }]);

    const badInput = await engine.run(reactor(), { amount: 0 });
    expect(badInput.status === 'failed' && badInput.failure.fieldErrors).toEqual({ amount: ['must be >= 1'] });
    expect(Charge.seen).toHaveLength(1); // the body did not run

    const badOutput = await engine.run(reactor(), { amount: 500 });
    expect(badOutput.status === 'failed' && badOutput.failure.fieldErrors).toEqual({
      '(value)': ['must match /^ch_/'],
    });
  });
});
