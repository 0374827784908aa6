import { Injectable } from '@nestjs/common';
import { ReactorClient, type RunOutcome } from '../lib';
import { CheckoutReactor } from './checkout.reactor';
import type { OrderDto } from './order.dto';
import type { Shipment } from './shipping.service';

/** Application service: places orders through the checkout saga. */
@Injectable()
export class OrdersService {
  constructor(private readonly reactors: ReactorClient) {}

  placeOrder(order: OrderDto): Promise<RunOutcome<Shipment>> {
    return this.reactors.run(CheckoutReactor, { order });
  }
}
