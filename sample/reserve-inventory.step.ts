import { Step, success, type StepHandler } from '../lib';
import { InventoryService, type Reservation } from './inventory.service';
import type { OrderDto } from './order.dto';

/** Arguments of {@link ReserveInventory}. */
export interface ReserveArgs {
  order: OrderDto;
}

/** Reserve the order's stock; undone by releasing it. */
@Step('reserve-inventory')
export class ReserveInventory implements StepHandler<ReserveArgs, Reservation> {
  constructor(private readonly inventory: InventoryService) {}

  async run({ order }: ReserveArgs) {
    return success(await this.inventory.reserve(order.orderId, order.items));
  }

  async undo(reservation: Reservation) {
    await this.inventory.release(reservation.reservationId);
  }
}
