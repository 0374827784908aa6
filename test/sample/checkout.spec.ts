import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { failure, success } from '../../lib';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { reactorMatchers } from '../../lib/testing/jest';
import { ChargePayment } from '../../sample/charge-payment.step';
import { InventoryService } from '../../sample/inventory.service';
import type { OrderDto } from '../../sample/order.dto';
import { OrdersService } from '../../sample/orders.service';
import { PaymentsService } from '../../sample/payments.service';
import { CHECKOUT_PROVIDERS } from '../../sample/app.module';

expect.extend(reactorMatchers);

/** The sample's services log what they do; a test keeps quiet. */
const silent: LoggerService = { log() {}, warn() {}, error() {} };

/** The checkout saga of the sample app, on the testing module. */
function checkoutModule() {
  return Test.createTestingModule({
    imports: [ReactorTestingModule.forRoot()],
    providers: CHECKOUT_PROVIDERS,
  }).setLogger(silent);
}

const order = (overrides: Partial<OrderDto> = {}): OrderDto => ({
  orderId: 'order-1',
  customerId: 'cus_ada',
  items: [
    { sku: 'book', quantity: 2 },
    { sku: 'lamp', quantity: 1 },
  ],
  totalCents: 8_990,
  shippingAddress: { name: 'Ada Lovelace', city: 'Lyon', country: 'FR' },
  ...overrides,
});

const FULL_STOCK = { book: 10, lamp: 3 };

describe('sample: checkout', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;
  let orders: OrdersService;
  let inventory: InventoryService;
  let payments: PaymentsService;

  beforeEach(async () => {
    moduleRef = await checkoutModule().compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
    orders = moduleRef.get(OrdersService);
    inventory = moduleRef.get(InventoryService);
    payments = moduleRef.get(PaymentsService);
  });

  afterEach(async () => {
    kit.restoreSteps();
    jest.restoreAllMocks();
    await moduleRef.close();
  });

  it('happy path: reserves, screens, charges and ships', async () => {
    const outcome = await orders.placeOrder(order());

    expect(outcome).toHaveCompleted(expect.objectContaining({ country: 'FR' }));
    expect(outcome).toHaveRolledBack([]);
    expect(inventory.snapshot()).toEqual({ book: 8, lamp: 2 });
    expect(payments.ledger()).toEqual([expect.objectContaining({ amountCents: 8_990, refunded: false })]);
  });

  it('a declined payment fails at charge and gives the stock back (screen has nothing to undo)', async () => {
    kit.mockStep(ChargePayment, { run: async () => failure(new Error('card declined'), { retryable: false }) });

    const outcome = await orders.placeOrder(order());

    expect(outcome).toHaveFailedAt('charge');
    expect(outcome).toHaveRolledBack(['reserve']);
    expect(outcome).toHaveRetried('charge', 0);
    expect(inventory.snapshot()).toEqual(FULL_STOCK);
    expect(kit.sequenceOf(outcome.runId, ['undo.complete'])).toEqual(
      expect.arrayContaining(['undo.complete:reserve', 'undo.complete:screen']),
    );
  });

  it('a shipping failure voids the label, then refunds the charge and releases the stock, newest first', async () => {
    const outcome = await orders.placeOrder(
      order({ shippingAddress: { name: 'Ada', city: 'McMurdo', country: 'AQ' } }),
    );

    expect(outcome).toHaveFailedAt('ship');
    expect(outcome).toHaveRolledBack(['ship', 'charge', 'reserve']);
    expect(outcome.status === 'failed' && outcome.failure.exceptionClass).toBe('UnsupportedCountryError');
    expect(payments.ledger()).toEqual([expect.objectContaining({ refunded: true })]);
    expect(inventory.snapshot()).toEqual(FULL_STOCK);
  });

  it('a flaky payment gateway is retried with exponential backoff, without waiting for real time', async () => {
    const charge = payments.charge.bind(payments);
    jest
      .spyOn(payments, 'charge')
      .mockRejectedValueOnce(new Error('gateway timeout'))
      .mockRejectedValueOnce(new Error('gateway timeout'))
      .mockImplementation(charge);

    const outcome = await orders.placeOrder(order());

    expect(outcome).toHaveCompleted();
    expect(outcome).toHaveRetried('charge', 2);
    expect(kit.clock.sleeps).toEqual([100, 200]);
    expect(kit.sequenceOf(outcome.runId, ['step.retry'])).toEqual(['step.retry:charge', 'step.retry:charge']);
  });

  it('a bad order fails validation on its fields before any step runs', async () => {
    const outcome = await orders.placeOrder(order({ totalCents: -5, items: [] }));

    expect(outcome).toHaveValidationErrorOn('order.totalCents');
    expect(outcome).toHaveValidationErrorOn('order.items');
    expect(outcome).not.toHaveValidationErrorOn('order.customerId');
    expect(outcome).toHaveRolledBack([]);
    expect(kit.sequenceOf(outcome.runId, ['step.start'])).toEqual([]);
    expect(inventory.snapshot()).toEqual(FULL_STOCK);
  });
});

describe('sample: checkout with a fake payment step for the whole module', () => {
  it('overrideProvider(ChargePayment).useValue(...) is the step the reactor runs', async () => {
    const moduleRef = await checkoutModule()
      .overrideProvider(ChargePayment)
      .useValue({
        run: async ({ customerId, amountCents }: { customerId: string; amountCents: number }) =>
          success({ chargeId: 'ch_fake', customerId, amountCents }),
      })
      .compile();
    await moduleRef.init();
    try {
      const outcome = await moduleRef.get(OrdersService).placeOrder(order());
      expect(outcome).toHaveCompleted();
      expect(outcome.results.charge).toEqual({ chargeId: 'ch_fake', customerId: 'cus_ada', amountCents: 8_990 });
      expect(moduleRef.get(PaymentsService).ledger()).toEqual([]);
    } finally {
      await moduleRef.close();
    }
  });
});
