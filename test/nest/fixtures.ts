import { Injectable, type LoggerService } from '@nestjs/common';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';

/** Records every call the fake services and steps make, in order. */
@Injectable()
export class CallLog {
  readonly calls: string[] = [];
  add(call: string): void {
    this.calls.push(call);
  }
}

@Injectable()
export class Warehouse {
  constructor(private readonly log: CallLog) {}
  reserve(sku: string): string {
    this.log.add(`warehouse.reserve:${sku}`);
    return `res-${sku}`;
  }
  release(reservation: string): void {
    this.log.add(`warehouse.release:${reservation}`);
  }
}

@Injectable()
export class Bank {
  constructor(private readonly log: CallLog) {}
  charge(amount: number): string {
    this.log.add(`bank.charge:${amount}`);
    return `ch-${amount}`;
  }
  refund(charge: string): void {
    this.log.add(`bank.refund:${charge}`);
  }
}

@Injectable()
export class Carrier {
  constructor(private readonly log: CallLog) {}
  ship(country: string): string {
    this.log.add(`carrier.ship:${country}`);
    if (country === 'XX') throw new Error(`carrier does not ship to ${country}`);
    return `sh-${country}`;
  }
  cancel(shipment: string): void {
    this.log.add(`carrier.cancel:${shipment}`);
  }
}

@Step('reserve-stock')
export class ReserveStep {
  constructor(private readonly warehouse: Warehouse) {}
  run({ sku }: { sku: string }) {
    return success(this.warehouse.reserve(sku));
  }
  undo(reservation: string) {
    this.warehouse.release(reservation);
  }
}

@Step('charge-card')
export class ChargeStep {
  constructor(private readonly bank: Bank) {}
  run({ amount }: { amount: number; card: string }) {
    return success(this.bank.charge(amount));
  }
  undo(charge: string) {
    this.bank.refund(charge);
  }
}

@Step('ship-parcel')
export class ShipStep {
  constructor(
    private readonly carrier: Carrier,
    private readonly log: CallLog,
  ) {}
  run({ country }: { country: string }, _ctx: StepContext) {
    return success(this.carrier.ship(country));
  }
  compensate(error: unknown, { country }: { country: string }) {
    this.log.add(`ship.compensate:${country}:${(error as Error).message}`);
  }
  undo(shipment: string) {
    this.carrier.cancel(shipment);
  }
}

/** Inputs of {@link OrderReactor}. */
export interface OrderInput {
  sku: string;
  amount: number;
  country: string;
  card: string;
}

/** reserve -> charge -> ship, each waiting for the previous one. */
@Reactor('order')
export class OrderReactor implements ReactorBlueprint<OrderInput> {
  build(r: ReactorBuilder<OrderInput>) {
    const sku = r.input('sku', { type: 'string' });
    const amount = r.input('amount', { type: 'number' });
    const country = r.input('country', { type: 'string' });
    const card = r.input('card', { type: 'string', redact: true });
    const reservation = r.step('reserve', ReserveStep, { sku });
    const charge = r.step('charge', ChargeStep, { amount, card }, { waitFor: [reservation] });
    return r.step('ship', ShipStep, { country }, { waitFor: [charge] });
  }
}

/** The same work, handed to a background worker as a whole. */
@Reactor('background-order', { background: { all: true } })
export class BackgroundOrderReactor implements ReactorBlueprint<{ sku: string }> {
  build(r: ReactorBuilder<{ sku: string }>) {
    return r.step('reserve', ReserveStep, { sku: r.input('sku', { type: 'string' }) });
  }
}

/** Every provider the order reactors need. */
export const ORDER_PROVIDERS = [CallLog, Warehouse, Bank, Carrier, ReserveStep, ChargeStep, ShipStep, OrderReactor];

/** A Nest logger that keeps messages instead of printing them. */
export class CapturingLogger implements LoggerService {
  readonly entries: Array<{ level: string; message: string }> = [];
  log(message: unknown): void {
    this.entries.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown): void {
    this.entries.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown): void {
    this.entries.push({ level: 'error', message: String(message) });
  }
  debug(): void {}
  verbose(): void {}
  messages(level: string): string[] {
    return this.entries.filter((e) => e.level === level).map((e) => e.message);
  }
}
