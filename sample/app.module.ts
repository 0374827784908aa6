import { Module } from '@nestjs/common';
import { ReactorModule } from '../lib';
import { ChargePayment } from './charge-payment.step';
import { CheckoutReactor } from './checkout.reactor';
import { CreateShipment } from './create-shipment.step';
import { InventoryService } from './inventory.service';
import { OrdersService } from './orders.service';
import { PaymentsService } from './payments.service';
import { ReserveInventory } from './reserve-inventory.step';
import { ScreenFraud } from './screen-fraud.step';
import { ShippingService } from './shipping.service';
import { AddStock, RestockImportReactor, RestockLineReactor } from './restock.reactor';

/** The sample application: the embedded runtime (no Redis), and the checkout saga. */
@Module({
  imports: [ReactorModule.forRoot()],
  providers: [
    InventoryService,
    PaymentsService,
    ShippingService,
    ReserveInventory,
    ScreenFraud,
    ChargePayment,
    CreateShipment,
    CheckoutReactor,
    OrdersService,
    AddStock,
    RestockLineReactor,
    RestockImportReactor,
  ],
})
export class AppModule {}
