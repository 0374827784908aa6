import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import {
  BillingService,
  InvoiceReactor,
  ReceiptReactor,
  SendReceipt,
  SettleInvoice,
  type OrderPaid,
} from '../../sample/order-paid.reactor';

const silent: LoggerService = { log() {}, warn() {}, error() {} };
const paid: OrderPaid = { orderId: 'order-9', amountCents: 1_500, paymentId: 'pay_9' };

describe('sample: the order.paid event', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;
  let billing: BillingService;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [BillingService, SendReceipt, SettleInvoice, ReceiptReactor, InvoiceReactor],
    })
      .setLogger(silent)
      .compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
    billing = moduleRef.get(BillingService);
  });

  afterEach(async () => {
    await moduleRef.close();
  });

  it('a payment that comes before its invoice: one receipt, and the invoice settles as it opens', async () => {
    const first = await kit.client.emit('order.paid', paid, { id: 'evt_9' });
    expect(first).toMatchObject({
      started: [{ reactor: 'receipt' }],
      answered: [],
      mailed: [{ reactor: 'invoice', step: 'paid', correlationId: 'order-9' }],
    });
    // The webhook delivered again: nothing more.
    expect(await kit.client.emit('order.paid', paid, { id: 'evt_9' })).toEqual({
      started: [],
      answered: [],
      mailed: [],
      rejected: [],
    });
    expect(await kit.client.wait(first.started[0].runId)).toMatchObject({ status: 'completed', value: 'rcpt_1' });

    const invoice = await kit.client.run(InvoiceReactor, { invoiceId: 'inv-9', orderId: 'order-9' });
    expect(invoice).toMatchObject({ status: 'completed', value: 'inv-9:paid' });
    expect(billing.receipts).toEqual(['order-9']);
    expect(billing.settled).toEqual(['inv-9']);
  });

  it('a payment of nothing sends no receipt', async () => {
    expect(await kit.client.emit('order.paid', { ...paid, amountCents: 0 })).toMatchObject({ started: [] });
  });
});
