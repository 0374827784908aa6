import { Step, success, type StepHandler } from '../lib';
import { PaymentsService, type Charge } from './payments.service';

/** Arguments of {@link ChargePayment}. */
export interface ChargeArgs {
  customerId: string;
  amountCents: number;
}

/** Charge the customer (retried on transient errors); undone by a refund. */
@Step('charge-payment', { retries: { maxAttempts: 3, backoff: 'exponential', baseDelayMs: 100 } })
export class ChargePayment implements StepHandler<ChargeArgs, Charge> {
  constructor(private readonly payments: PaymentsService) {}

  async run({ customerId, amountCents }: ChargeArgs) {
    return success(await this.payments.charge(customerId, amountCents));
  }

  async undo(charge: Charge) {
    await this.payments.refund(charge.chargeId);
  }
}
