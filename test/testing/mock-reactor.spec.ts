import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { failure, halt, success, type ReactorBlueprint, type ReactorBuilder } from '../../lib';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { CapturingLogger } from '../nest/fixtures';

expect.extend(reactorMatchers);

/** What the real steps did. */
@Injectable()
class Calls {
  readonly list: string[] = [];
}

@Step('mr-reserve')
class Reserve {
  constructor(private readonly calls: Calls) {}
  run({ sku }: { sku: string }) {
    this.calls.list.push(`reserve:${sku}`);
    return success(`res-${sku}`);
  }
  undo(reservation: string) {
    this.calls.list.push(`release:${reservation}`);
  }
}

@Step('mr-charge')
class Charge {
  constructor(private readonly calls: Calls) {}
  run({ amount }: { amount: number }) {
    this.calls.list.push(`charge:${amount}`);
    return success({ chargeId: `ch-${amount}`, amount });
  }
  undo(charge: { chargeId: string }) {
    this.calls.list.push(`refund:${charge.chargeId}`);
  }
}

@Step('mr-ship')
class Ship {
  constructor(private readonly calls: Calls) {}
  run({ country }: { country: string }) {
    this.calls.list.push(`ship:${country}`);
    return country === 'XX' ? failure('no carrier', { retryable: false }) : success(`sh-${country}`);
  }
}

/** The child: a payment of `amount` (at least 1). */
@Reactor('mr-payment')
class PaymentReactor implements ReactorBlueprint<{ amount: number }> {
  build(r: ReactorBuilder<{ amount: number }>) {
    return r.step('charge', Charge, { amount: r.input('amount', { type: 'integer', min: 1 }) });
  }
}

/** reserve -> payment (composed) -> ship. */
@Reactor('mr-checkout')
class CheckoutReactor implements ReactorBlueprint<{ sku: string; amount: number; country: string }> {
  build(r: ReactorBuilder<{ sku: string; amount: number; country: string }>) {
    const reserve = r.step('reserve', Reserve, { sku: r.input('sku', { type: 'string' }) });
    const payment = r.compose(
      'payment',
      PaymentReactor,
      { amount: r.input('amount', { type: 'integer' }) },
      { waitFor: [reserve] },
    );
    r.step('ship', Ship, { country: r.input('country', { type: 'string' }) }, { waitFor: [payment] });
    return payment;
  }
}

const order = { sku: 'sku-1', amount: 42, country: 'FR' };

describe('ReactorTestingKit.mockReactor: a composed child replaced for one test', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;
  let calls: Calls;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [Calls, Reserve, Charge, Ship, PaymentReactor, CheckoutReactor],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
    calls = moduleRef.get(Calls);
  });

  afterEach(async () => {
    kit.restoreSteps();
    await moduleRef.close();
  });

  it('the parent gets the fake’s value; the child’s steps never run', async () => {
    const run = jest.fn(async ({ amount }: { amount: number }) => success({ chargeId: 'ch_fake', amount }));
    kit.mockReactor(PaymentReactor, { run });
    const outcome = await kit.client.run(CheckoutReactor, order);
    expect(outcome).toHaveCompleted({ chargeId: 'ch_fake', amount: 42 });
    expect(run).toHaveBeenCalledWith(
      { amount: 42 },
      expect.objectContaining({ stepName: 'mocked', reactorName: 'mr-payment' }),
    );
    expect(calls.list).toEqual(['reserve:sku-1', 'ship:FR']);
  });

  it('a failing fake fails the compose step; the parent rolls back its own steps', async () => {
    kit.mockReactor('mr-payment', { run: () => failure('card declined', { retryable: false }) });
    const outcome = await kit.client.run(CheckoutReactor, order);
    expect(outcome).toHaveFailedAt('payment');
    expect(outcome.status === 'failed' && outcome.failure.errorMessage).toBe('card declined');
    expect(calls.list).toEqual(['reserve:sku-1', 'release:res-sku-1']);
  });

  it('a halting fake halts the parent, as a halted child does', async () => {
    kit.mockReactor(PaymentReactor, { run: () => halt('fraud review') });
    const outcome = await kit.client.run(CheckoutReactor, order);
    expect(outcome.status).toBe('halted');
  });

  it("undoing the compose step calls the fake's undo", async () => {
    const undo = jest.fn();
    kit.mockReactor(PaymentReactor, { run: ({ amount }) => success({ chargeId: 'ch_fake', amount }), undo });
    const outcome = await kit.client.run(CheckoutReactor, { ...order, country: 'XX' });
    expect(outcome).toHaveFailedAt('ship');
    expect(undo).toHaveBeenCalledWith({ chargeId: 'ch_fake', amount: 42 }, { amount: 42 }, expect.anything());
    expect(calls.list).toEqual(['reserve:sku-1', 'ship:XX', 'release:res-sku-1']);
  });

  it("the child's inputs are still validated before the fake runs", async () => {
    const run = jest.fn(() => success({ chargeId: 'never', amount: 0 }));
    kit.mockReactor(PaymentReactor, { run });
    const outcome = await kit.client.run(CheckoutReactor, { ...order, amount: 0 });
    expect(outcome).toHaveFailedAt('payment');
    expect(outcome).toHaveValidationErrorOn('amount');
    expect(run).not.toHaveBeenCalled();
  });

  it('restore() (or restoreSteps()) brings the real child back', async () => {
    const mock = kit.mockReactor(PaymentReactor, { run: () => success({ chargeId: 'fake', amount: 1 }) });
    expect(await kit.client.run(CheckoutReactor, order)).toHaveCompleted({ chargeId: 'fake', amount: 1 });
    mock.restore();
    expect(await kit.client.run(CheckoutReactor, order)).toHaveCompleted({ chargeId: 'ch-42', amount: 42 });

    kit.mockReactor(PaymentReactor, { run: () => success({ chargeId: 'fake again', amount: 2 }) });
    expect(await kit.client.run(CheckoutReactor, order)).toHaveCompleted({ chargeId: 'fake again', amount: 2 });
    kit.restoreSteps();
    expect(await kit.client.run(CheckoutReactor, order)).toHaveCompleted({ chargeId: 'ch-42', amount: 42 });
  });

  it('is scoped to its test: this test sees the real child (the previous ones mocked it)', async () => {
    const outcome = await kit.client.run(CheckoutReactor, order);
    expect(outcome).toHaveCompleted({ chargeId: 'ch-42', amount: 42 });
    expect(calls.list).toEqual(['reserve:sku-1', 'charge:42', 'ship:FR']);
  });

  it('refuses an unknown name (naming the closest) and a class that is no reactor', () => {
    expect(() => kit.mockReactor('mr-paymnet', { run: () => success(1) })).toThrow(
      /no reactor named 'mr-paymnet'.*Did you mean 'mr-payment'\?/,
    );
    expect(() => kit.mockReactor(Calls, { run: () => success(1) } as never)).toThrow(/Calls is not a @Reactor class/);
    expect(() => kit.mockReactor(PaymentReactor, {} as never)).toThrow(/needs a run\(inputs, ctx\) method/);
  });
});
