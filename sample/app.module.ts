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
import { CreditApprovalReactor, CreditsService, IssueCredit } from './approval.reactor';
import { ApprovalsController } from './approvals.controller';
import { BillingService, InvoiceReactor, ReceiptReactor, SendReceipt, SettleInvoice } from './order-paid.reactor';
import { NightlyStockReportReactor, SnapshotStock } from './nightly-report.reactor';
import { ExportsService, ReindexUserReactor, TenantExportReactor, WriteExport } from './tenant-export.reactor';

/** The checkout saga: its services, steps, reactor and the service that runs it (the sample's tests use them too). */
export const CHECKOUT_PROVIDERS = [
  InventoryService,
  PaymentsService,
  ShippingService,
  ReserveInventory,
  ScreenFraud,
  ChargePayment,
  CreateShipment,
  CheckoutReactor,
  OrdersService,
];

/** The sample application: the embedded runtime (no Redis), the checkout saga, a restock import and a credit approval. */
@Module({
  imports: [ReactorModule.forRoot()],
  controllers: [ApprovalsController],
  providers: [
    ...CHECKOUT_PROVIDERS,
    AddStock,
    RestockLineReactor,
    RestockImportReactor,
    CreditsService,
    IssueCredit,
    CreditApprovalReactor,
    BillingService,
    SendReceipt,
    SettleInvoice,
    ReceiptReactor,
    InvoiceReactor,
    SnapshotStock,
    NightlyStockReportReactor,
    ExportsService,
    WriteExport,
    TenantExportReactor,
    ReindexUserReactor,
  ],
})
export class AppModule {}
