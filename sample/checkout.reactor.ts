import { Reactor, type ReactorBuilder, type ReactorBlueprint } from '../lib';
import { ChargePayment } from './charge-payment.step';
import { CreateShipment } from './create-shipment.step';
import { OrderDto } from './order.dto';
import { ReserveInventory } from './reserve-inventory.step';
import { ScreenFraud } from './screen-fraud.step';

/** Input of the checkout reactor. */
export interface CheckoutInput {
  order: OrderDto;
}

/**
 * The checkout saga:
 *
 * ```
 * order ─┬─> reserve ─┐
 *        └─> screen  ─┴─> charge ──> ship
 * ```
 *
 * `reserve` and `screen` depend only on the order, so they run concurrently. `charge` waits for
 * both; `ship` reads the charge, so it runs after it. If shipping fails, its label is voided
 * (compensate), then the charge is refunded and the stock released (undo, newest first).
 */
@Reactor('checkout', { description: 'Reserve stock, screen, charge and ship an order' })
export class CheckoutReactor implements ReactorBlueprint<CheckoutInput> {
  build(r: ReactorBuilder<CheckoutInput>) {
    const order = r.input('order', OrderDto);
    const customerId = order.path('customerId');
    const amountCents = order.path('totalCents');

    const reservation = r.step('reserve', ReserveInventory, { order });
    const screening = r.step('screen', ScreenFraud, { customerId, amountCents });
    const charge = r.step('charge', ChargePayment, { customerId, amountCents }, { waitFor: [reservation, screening] });
    return r.step('ship', CreateShipment, {
      orderId: order.path('orderId'),
      address: order.path('shippingAddress'),
      charge,
    });
  }
}
