import { Injectable, Logger } from '@nestjs/common';
import { Reactor, Step, success, type ReactorBlueprint, type ReactorBuilder, type StepHandler } from '../lib';

/** The `order.paid` event a payment provider's webhook turns into `client.emit('order.paid', ...)`. */
export interface OrderPaid {
  orderId: string;
  amountCents: number;
  /** The provider's payment id. */
  paymentId: string;
}

/** Receipts sent and invoices settled, in memory. */
@Injectable()
export class BillingService {
  private readonly logger = new Logger('Billing');
  readonly receipts: string[] = [];
  readonly settled: string[] = [];

  sendReceipt(orderId: string, amountCents: number): string {
    this.receipts.push(orderId);
    this.logger.log(`receipt for ${orderId}: ${amountCents} cents`);
    return `rcpt_${this.receipts.length}`;
  }

  settle(invoiceId: string, paymentId: string): string {
    this.settled.push(invoiceId);
    this.logger.log(`invoice ${invoiceId} settled by ${paymentId}`);
    return `${invoiceId}:paid`;
  }
}

/** Send the receipt of a paid order. */
@Step('send-receipt')
export class SendReceipt implements StepHandler<{ orderId: string; amountCents: number }, string> {
  constructor(private readonly billing: BillingService) {}

  run({ orderId, amountCents }: { orderId: string; amountCents: number }) {
    return success(this.billing.sendReceipt(orderId, amountCents));
  }
}

/** Settle an invoice with the payment that paid it. */
@Step('settle-invoice')
export class SettleInvoice implements StepHandler<{ invoiceId: string; payment: OrderPaid }, string> {
  constructor(private readonly billing: BillingService) {}

  run({ invoiceId, payment }: { invoiceId: string; payment: OrderPaid }) {
    return success(this.billing.settle(invoiceId, payment.paymentId));
  }
}

/**
 * Started by each `order.paid` event (one run per event id, however often the webhook is
 * delivered): its inputs are taken from the event's payload.
 */
@Reactor('receipt', {
  on: {
    event: 'order.paid',
    input: (e: OrderPaid) => ({ orderId: e.orderId, amountCents: e.amountCents }),
    match: (e: OrderPaid) => e.amountCents > 0,
  },
})
export class ReceiptReactor implements ReactorBlueprint<{ orderId: string; amountCents: number }> {
  build(r: ReactorBuilder<{ orderId: string; amountCents: number }>) {
    return r.step('send-receipt', SendReceipt, {
      orderId: r.input('orderId', { type: 'string' }),
      amountCents: r.input('amountCents', { type: 'integer', min: 1 }),
    });
  }
}

/**
 * An invoice waits for its order's payment: the interrupt `paid` is answered by the `order.paid`
 * event whose `orderId` is the invoice's (its correlation id), even one that came before the
 * invoice was opened (kept in the id's mailbox).
 */
@Reactor('invoice')
export class InvoiceReactor implements ReactorBlueprint<{ invoiceId: string; orderId: string }> {
  build(r: ReactorBuilder<{ invoiceId: string; orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    const payment = r.interrupt<OrderPaid, { orderId: string }>('paid', {
      args: { orderId },
      correlationId: ({ args }) => args.orderId,
      event: 'order.paid',
      match: (e) => e.orderId,
      payload: { orderId: { type: 'string' }, amountCents: { type: 'integer', min: 1 }, paymentId: { type: 'string' } },
    });
    return r.step('settle', SettleInvoice, { invoiceId: r.input('invoiceId', { type: 'string' }), payment });
  }
}
