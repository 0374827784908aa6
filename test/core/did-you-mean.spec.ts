import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { closestNames, didYouMean, editDistance } from '../../lib/core/errors/closest-names';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

describe('closestNames / didYouMean', () => {
  it('measures edits, counting an adjacent swap as one', () => {
    expect(editDistance('checkout', 'checkout')).toBe(0);
    expect(editDistance('chekout', 'checkout')).toBe(1);
    expect(editDistance('nmae', 'name')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('finds close names, nearest first, case-insensitively, at most three', () => {
    expect(closestNames('chekout', ['refund', 'checkout', 'checkouts'])).toEqual(['checkout', 'checkouts']);
    expect(closestNames('Checkout', ['checkout'])).toEqual(['checkout']);
    expect(closestNames('step', ['stepa', 'stepb', 'stepc', 'stepd'])).toEqual(['stepa', 'stepb', 'stepc']);
  });

  it('suggests nothing far away, nothing for one letter, nothing for the name itself', () => {
    expect(closestNames('x', ['checkout', 'y'])).toEqual([]);
    expect(closestNames('approve', ['reserve', 'charge'])).toEqual([]);
    expect(closestNames('charge', ['charge'])).toEqual([]);
    expect(closestNames('', ['a'])).toEqual([]);
  });

  it('phrases the suggestion', () => {
    expect(didYouMean('aprove', ['approve', 'reject'])).toBe(" Did you mean 'approve'?");
    expect(didYouMean('stp', ['step', 'stop'])).toBe(" Did you mean 'step' or 'stop'?");
    expect(didYouMean('zzz', ['approve'])).toBe('');
  });
});

describe('"did you mean" in the engine', () => {
  const reserve = () => success('R1');

  function approval() {
    return defineReactor('approval', (r: ReactorBuilder<{ orderId: string }>) => {
      const orderId = r.input('orderId', { type: 'string' });
      const reserved = r.step('reserve', reserve, {});
      return r.interrupt<string, { orderId: string }>('approve', {
        args: { orderId },
        waitFor: [reserved],
        correlationId: ({ args }) => `order-${args.orderId}`,
      });
    });
  }

  it('an unknown reactor name in run and start', async () => {
    const { engine } = createHarness();
    engine.register(approval());
    await expect(engine.run('aproval', {})).rejects.toThrow(
      "Reactor 'aproval' is not registered in this process. Did you mean 'approval'? Known reactors: approval.",
    );
    await expect(engine.start('aproval', {})).rejects.toMatchObject({ code: 'UNKNOWN_REACTOR' });
    await expect(engine.run('zzz', {})).rejects.toThrow(
      "Reactor 'zzz' is not registered in this process. Known reactors: approval.",
    );
  });

  it('an unknown interrupt in continue and continueByCorrelationId, and an unknown reactor in the latter', async () => {
    const { engine } = createHarness();
    engine.register(approval());
    const outcome = await engine.run('approval', { orderId: 'o-1' });
    expect(outcome.status).toBe('paused');
    await expect(engine.continue(outcome.runId, 'aprove', 'yes')).rejects.toThrow(
      "Reactor 'approval' has no interrupt 'aprove'. Did you mean 'approve'? Its interrupts: approve.",
    );
    await expect(engine.continueByCorrelationId('approval', 'aprove', 'order-o-1', 'yes')).rejects.toMatchObject({
      code: 'INTERRUPT_NOT_FOUND',
      message: expect.stringContaining("Did you mean 'approve'?"),
    });
    await expect(engine.continueByCorrelationId('aproval', 'approve', 'order-o-1', 'yes')).rejects.toMatchObject({
      code: 'UNKNOWN_REACTOR',
      message: expect.stringContaining("Did you mean 'approval'?"),
    });
  });

  it('an unknown step in waitFor and in background hand-offs', () => {
    expect(() =>
      defineReactor('wiring', (r) => {
        r.step('reserve', reserve, {});
        return r.step('charge', reserve, {}, { waitFor: ['reserv'] });
      }),
    ).toThrow(
      "Reactor 'wiring': step 'charge' depends on unknown step 'reserv'. Did you mean 'reserve'? Declared steps: reserve, charge.",
    );
    expect(() =>
      defineReactor(
        'handoff',
        (r) => {
          const reserved = r.step('reserve', reserve, {});
          return r.step('charge', reserve, {}, { waitFor: [reserved] });
        },
        { background: { before: 'chrage' } },
      ),
    ).toThrow(/background hand-off names unknown step 'chrage'\. Did you mean 'charge'\? Declared steps/);
  });

  it('a composed reactor named with a typo', () => {
    const { engine } = createHarness();
    engine.register(approval());
    engine.register(defineReactor('parent', (r) => r.compose('child', 'aproval', {})));
    expect(() => engine.validate()).toThrow(
      /Reactor 'parent': compose step 'child' names reactor 'aproval', which is not registered\. Did you mean 'approval'\? Registered:/,
    );
  });

  it('a rate limit named with a typo', () => {
    const { engine } = createHarness({ rateLimits: { 'payments-api': { second: 10 } } });
    expect(() =>
      engine.register(defineReactor('billing', (r) => r.step('charge', reserve, {}), { rateLimit: 'payment-api' })),
    ).toThrow(/uses rate limit 'payment-api', which is not registered\. Did you mean 'payments-api'\? Register it/);
  });
});
