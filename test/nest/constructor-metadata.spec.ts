import { Inject, Injectable, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorEvent } from '../../lib/core/middleware/events';
import { success } from '../../lib/core/results/step-outcome';
import { OnReactorEvent } from '../../lib/nest/on-reactor-event.decorator';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Step } from '../../lib/nest/step.decorator';
import { CapturingLogger } from './fixtures';

/**
 * Classes compiled without `emitDecoratorMetadata` (or by esbuild / Vitest without SWC) have no
 * `design:paramtypes`. ts-jest emits it, so each test removes it from its class, as such a build would.
 */
function withoutTypeMetadata<T extends abstract new (...args: never[]) => unknown>(cls: T): T {
  Reflect.deleteMetadata('design:paramtypes', cls);
  expect(Reflect.getMetadata('design:paramtypes', cls)).toBeUndefined();
  return cls;
}

@Injectable()
class Payments {
  charge(amount: number): string {
    return `charged ${amount}`;
  }
}

const PAYMENTS = Symbol('payments');

async function boot(providers: ModuleMetadata['providers']) {
  const module = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers })
    .setLogger(new CapturingLogger())
    .compile();
  return module;
}

async function bootFails(providers: ModuleMetadata['providers']): Promise<Error> {
  const module = await boot(providers);
  try {
    await module.init();
  } catch (error) {
    return error as Error;
  } finally {
    await module.close().catch(() => undefined);
  }
  throw new Error('the boot did not fail');
}

describe('boot check: constructor parameters without type metadata', () => {
  it('refuses a @Step class whose constructor parameters have no type metadata, naming the step and the fix', async () => {
    @Step('charge-card')
    class ChargeCard {
      constructor(private readonly payments: Payments) {}
      run({ amount }: { amount: number }) {
        return success(this.payments.charge(amount));
      }
    }
    withoutTypeMetadata(ChargeCard);

    @Reactor('checkout')
    class Checkout implements ReactorBlueprint<{ amount: number }> {
      build(r: ReactorBuilder<{ amount: number }>) {
        return r.step('charge', ChargeCard, { amount: r.input('amount', { type: 'number' }) });
      }
    }

    const error = await bootFails([Payments, ChargeCard, Checkout]);
    expect(error.name).toBe('DefinitionError');
    expect(error.message).toMatch(
      /^Step 'charge-card' \(class ChargeCard\) has 1 constructor parameter but no type metadata \('design:paramtypes'\)/,
    );
    expect(error.message).toContain('"emitDecoratorMetadata": true');
    expect(error.message).toContain('unplugin-swc');
    expect(error.message).toContain('@Inject(Token) (parameter 0 has none)');
  });

  it('refuses a @Reactor class the same way', async () => {
    @Reactor('audited')
    class Audited implements ReactorBlueprint {
      constructor(
        readonly payments: Payments,
        readonly log: Payments,
      ) {}
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.value(1);
      }
    }
    withoutTypeMetadata(Audited);

    const error = await bootFails([Payments, Audited]);
    expect(error.message).toMatch(
      /^Reactor 'audited' \(class Audited\) has 2 constructor parameters .*\(parameters 0, 1 have none\)\.$/,
    );
  });

  it('refuses an @OnReactorEvent listener class the same way', async () => {
    @Injectable()
    class Alerts {
      constructor(private readonly payments: Payments) {}
      @OnReactorEvent('reactor.fail')
      onFail(event: ReactorEvent) {
        return this.payments.charge(event.at);
      }
    }
    withoutTypeMetadata(Alerts);

    const error = await bootFails([Payments, Alerts]);
    expect(error.message).toMatch(/^@OnReactorEvent listener \(class Alerts\) has 1 constructor parameter but no type/);
  });

  it('refuses a step class that declares no constructor but inherits one with parameters', async () => {
    abstract class PaymentStep {
      constructor(protected readonly payments: Payments) {}
    }
    @Step('refund')
    class Refund extends PaymentStep {
      run() {
        return success(this.payments.charge(-1));
      }
    }
    withoutTypeMetadata(Refund);
    withoutTypeMetadata(PaymentStep);
    expect(Refund.length).toBe(0);

    const error = await bootFails([Payments, Refund]);
    expect(error.message).toMatch(/^Step 'refund' \(class Refund\) has 1 constructor parameter/);
  });

  it('names only the parameters that no @Inject covers', async () => {
    @Step('half-injected')
    class HalfInjected {
      constructor(
        @Inject(PAYMENTS) readonly first: Payments,
        readonly second: Payments,
      ) {}
      run() {
        return success(1);
      }
    }
    withoutTypeMetadata(HalfInjected);

    const error = await bootFails([{ provide: PAYMENTS, useClass: Payments }, HalfInjected]);
    expect(error.message).toMatch(/has 2 constructor parameters .*\(parameter 1 has none\)\.$/);
  });

  it('accepts a class whose every parameter names its token with @Inject, and runs it', async () => {
    @Step('charge-injected')
    class ChargeInjected {
      constructor(@Inject(PAYMENTS) private readonly payments: Payments) {}
      run({ amount }: { amount: number }) {
        return success(this.payments.charge(amount));
      }
    }
    withoutTypeMetadata(ChargeInjected);
    @Reactor('checkout-injected')
    class CheckoutInjected implements ReactorBlueprint<{ amount: number }> {
      build(r: ReactorBuilder<{ amount: number }>) {
        return r.step('charge', ChargeInjected, { amount: r.input('amount', { type: 'number' }) });
      }
    }

    const module = await boot([{ provide: PAYMENTS, useClass: Payments }, ChargeInjected, CheckoutInjected]);
    await module.init();
    try {
      const outcome = await module.get(ReactorClient).run(CheckoutInjected, { amount: 5 });
      expect(outcome).toMatchObject({ status: 'completed', value: 'charged 5' });
    } finally {
      await module.close();
    }
  });

  it('does not check classes Nest does not construct: a step given by useFactory or useValue', async () => {
    @Step('charge-by-factory')
    class ChargeByFactory {
      constructor(private readonly payments: Payments) {}
      run() {
        return success(this.payments.charge(7));
      }
    }
    withoutTypeMetadata(ChargeByFactory);
    @Reactor('factory-checkout')
    class FactoryCheckout implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('charge', ChargeByFactory, {});
      }
    }
    withoutTypeMetadata(FactoryCheckout);

    const module = await boot([
      Payments,
      {
        provide: ChargeByFactory,
        useFactory: (payments: Payments) => new ChargeByFactory(payments),
        inject: [Payments],
      },
      { provide: FactoryCheckout, useValue: new FactoryCheckout() },
    ]);
    await module.init();
    try {
      const outcome = await module.get(ReactorClient).run(FactoryCheckout, {});
      expect(outcome).toMatchObject({ status: 'completed', value: 'charged 7' });
    } finally {
      await module.close();
    }
  });

  it('accepts a class without parameters and without metadata', async () => {
    @Step('plain')
    class Plain {
      run() {
        return success('ok');
      }
    }
    withoutTypeMetadata(Plain);
    const module = await boot([Plain]);
    await expect(module.init()).resolves.toBeDefined();
    await module.close();
  });
});
