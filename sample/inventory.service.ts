import { Injectable, Logger } from '@nestjs/common';
import { latency } from './latency';
import type { OrderLineDto } from './order.dto';

/** A reservation of stock for one order. */
export interface Reservation {
  reservationId: string;
  lines: Array<{ sku: string; quantity: number }>;
}

/** An in-memory warehouse. */
@Injectable()
export class InventoryService {
  private readonly logger = new Logger('Inventory');
  private readonly stock = new Map<string, number>([
    ['book', 10],
    ['lamp', 3],
  ]);
  private readonly reservations = new Map<string, Reservation>();
  private nextId = 1;

  async reserve(orderId: string, lines: OrderLineDto[]): Promise<Reservation> {
    this.logger.log(`reserving ${describe(lines)} for ${orderId} ...`);
    await latency();
    for (const line of lines) {
      const available = this.stock.get(line.sku) ?? 0;
      if (available < line.quantity) throw new Error(`only ${available} × ${line.sku} in stock`);
    }
    for (const line of lines) this.stock.set(line.sku, (this.stock.get(line.sku) ?? 0) - line.quantity);
    const reservation = { reservationId: `res_${this.nextId++}`, lines: lines.map((l) => ({ ...l })) };
    this.reservations.set(reservation.reservationId, reservation);
    this.logger.log(`reserved ${reservation.reservationId}`);
    return reservation;
  }

  /** Put the stock back. Idempotent: releasing twice does nothing the second time. */
  async release(reservationId: string): Promise<void> {
    const reservation = this.reservations.get(reservationId);
    if (!reservation) return;
    for (const line of reservation.lines) this.stock.set(line.sku, (this.stock.get(line.sku) ?? 0) + line.quantity);
    this.reservations.delete(reservationId);
    this.logger.warn(`released ${reservationId} (${describe(reservation.lines)} back in stock)`);
  }

  /** Whether the warehouse stocks this SKU. */
  knows(sku: string): boolean {
    return this.stock.has(sku);
  }

  /** Add (or, negative, remove) units of a SKU: a restock line and its undo. */
  add(sku: string, quantity: number): void {
    this.stock.set(sku, (this.stock.get(sku) ?? 0) + quantity);
    if (quantity > 0) this.logger.log(`restocked ${quantity} × ${sku}`);
    else this.logger.warn(`took back ${-quantity} × ${sku} (restock undone)`);
  }

  /** Units in stock per SKU. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.stock);
  }
}

function describe(lines: Array<{ sku: string; quantity: number }>): string {
  return lines.map((l) => `${l.quantity} × ${l.sku}`).join(', ');
}
