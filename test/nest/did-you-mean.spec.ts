import { Test, type TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Step } from '../../lib/nest/step.decorator';
import { CapturingLogger } from './fixtures';

@Step('reserve-stock')
class ReserveStock {
  run() {
    return success('R1');
  }
}

@Reactor('checkout')
class CheckoutReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    const reserved = r.step('reserve', ReserveStock, {});
    return r.interrupt<string, { orderId: string }>('approve', {
      args: { orderId },
      waitFor: [reserved],
      correlationId: ({ args }) => `order-${args.orderId}`,
    });
  }
}

async function boot(providers: unknown[]): Promise<TestingModule> {
  return Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers: providers as never[] })
    .setLogger(new CapturingLogger())
    .compile();
}

describe('"did you mean" on names that are not registered', () => {
  let module: TestingModule;
  let client: ReactorClient;

  beforeAll(async () => {
    module = await boot([ReserveStock, CheckoutReactor]);
    await module.init();
    client = module.get(ReactorClient);
  });
  afterAll(() => module.close());

  it('client.run and client.start with a misspelt reactor name', async () => {
    await expect(client.run('chekout', { orderId: 'o-1' })).rejects.toMatchObject({
      code: 'UNKNOWN_REACTOR',
      message:
        "Reactor 'chekout' is not registered in this process. Did you mean 'checkout'? Known reactors: checkout. " +
        'Register it with @Reactor (or engine.register) in every process that runs it.',
    });
    await expect(client.start('Checkout', { orderId: 'o-1' })).rejects.toThrow("Did you mean 'checkout'?");
  });

  it('client.continue with a misspelt interrupt', async () => {
    const outcome = await client.run(CheckoutReactor, { orderId: 'o-2' });
    expect(outcome.status).toBe('paused');
    await expect(client.continue(outcome.runId, 'aprove', 'yes')).rejects.toMatchObject({
      code: 'INTERRUPT_NOT_FOUND',
      message: "Reactor 'checkout' has no interrupt 'aprove'. Did you mean 'approve'? Its interrupts: approve.",
    });
  });

  it('client.continueByCorrelationId with a misspelt reactor name or interrupt', async () => {
    await expect(client.continueByCorrelationId('chekout', 'approve', 'order-o-3', 'yes')).rejects.toThrow(
      "Reactor 'chekout' is not registered in this process. Did you mean 'checkout'?",
    );
    await expect(client.continueByCorrelationId(CheckoutReactor, 'aprove', 'order-o-3', 'yes')).rejects.toThrow(
      "Reactor 'checkout' has no interrupt 'aprove'. Did you mean 'approve'?",
    );
  });

  it('the boot fails on a misspelt step name in waitFor or a background hand-off', async () => {
    @Reactor('wired-by-name')
    class WiredByName implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        r.step('reserve', ReserveStock, {});
        return r.step('again', ReserveStock, {}, { waitFor: ['reserv'] });
      }
    }
    const wired = await boot([ReserveStock, WiredByName]);
    await expect(wired.init()).rejects.toThrow(
      "Reactor 'wired-by-name': step 'again' depends on unknown step 'reserv'. Did you mean 'reserve'? Declared steps: reserve, again.",
    );
    await wired.close().catch(() => undefined);

    @Reactor('handed-off', { background: { after: 'reserv' } })
    class HandedOff implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('reserve', ReserveStock, {});
      }
    }
    const handed = await boot([ReserveStock, HandedOff]);
    await expect(handed.init()).rejects.toThrow(
      "Reactor 'handed-off': background hand-off names unknown step 'reserv'. Did you mean 'reserve'?",
    );
    await handed.close().catch(() => undefined);
  });
});
