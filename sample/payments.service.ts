import { Injectable, Logger } from '@nestjs/common';
import { latency } from './latency';

/** A captured payment. */
export interface Charge {
  chargeId: string;
  customerId: string;
  amountCents: number;
}

/** An in-memory payment provider. */
@Injectable()
export class PaymentsService {
  private readonly logger = new Logger('Payments');
  private readonly charges = new Map<string, Charge & { refunded: boolean }>();
  private nextId = 1;

  async screen(customerId: string, amountCents: number): Promise<{ risk: 'low' | 'high' }> {
    this.logger.log(`screening ${customerId} for fraud ...`);
    await latency();
    const risk = amountCents > 1_000_000 ? 'high' : 'low';
    this.logger.log(`screened ${customerId}: ${risk} risk`);
    return { risk };
  }

  async charge(customerId: string, amountCents: number): Promise<Charge> {
    await latency(5);
    const charge = { chargeId: `ch_${this.nextId++}`, customerId, amountCents };
    this.charges.set(charge.chargeId, { ...charge, refunded: false });
    this.logger.log(`charged ${customerId} ${money(amountCents)} (${charge.chargeId})`);
    return charge;
  }

  /** Refund a charge. Idempotent. */
  async refund(chargeId: string): Promise<void> {
    const charge = this.charges.get(chargeId);
    if (!charge || charge.refunded) return;
    charge.refunded = true;
    this.logger.warn(`refunded ${money(charge.amountCents)} to ${charge.customerId} (${chargeId})`);
  }

  /** Every charge, with whether it was refunded. */
  ledger(): Array<Charge & { refunded: boolean }> {
    return [...this.charges.values()].map((c) => ({ ...c }));
  }
}

function money(cents: number): string {
  return `€${(cents / 100).toFixed(2)}`;
}
