import { Step, success, type StepHandler } from '../lib';
import type { Charge } from './payments.service';
import type { AddressDto } from './order.dto';
import { ShippingService, type Shipment } from './shipping.service';

/** Arguments of {@link CreateShipment}. */
export interface ShipArgs {
  orderId: string;
  address: AddressDto;
  /** The charge this shipment is paid by (wiring it also orders shipping after payment). */
  charge: Charge;
}

/**
 * Book the shipment. If booking fails, `compensate` voids the label it printed; if a later step
 * fails or the run is undone, `undo` cancels the booked shipment.
 */
@Step('create-shipment')
export class CreateShipment implements StepHandler<ShipArgs, Shipment> {
  constructor(private readonly shipping: ShippingService) {}

  async run({ orderId, address }: ShipArgs) {
    return success(await this.shipping.createShipment(orderId, address));
  }

  async compensate(_error: unknown, { orderId }: ShipArgs) {
    await this.shipping.voidLabel(orderId);
  }

  async undo(shipment: Shipment, { orderId }: ShipArgs) {
    await this.shipping.cancelShipment(shipment.shipmentId);
    await this.shipping.voidLabel(orderId);
  }
}
