import { Step, failure, success, type StepHandler } from '../lib';
import { PaymentsService } from './payments.service';

/** Arguments of {@link ScreenFraud}. */
export interface ScreenArgs {
  customerId: string;
  amountCents: number;
}

/** Score the order for fraud; a high risk fails the checkout. Reads only, so nothing to undo. */
@Step('screen-fraud')
export class ScreenFraud implements StepHandler<ScreenArgs, { risk: 'low' | 'high' }> {
  constructor(private readonly payments: PaymentsService) {}

  async run({ customerId, amountCents }: ScreenArgs) {
    const score = await this.payments.screen(customerId, amountCents);
    return score.risk === 'high' ? failure('fraud risk too high', { retryable: false }) : success(score);
  }
}
