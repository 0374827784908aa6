import { Injectable, Module, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ReactorClient } from '../lib';
import { ReactorDashboardModule } from '../lib/dashboard';
import { AppModule } from './app.module';
import { CreditApprovalReactor } from './approval.reactor';
import type { OrderDto } from './order.dto';
import { OrdersService } from './orders.service';
import { RestockImportReactor } from './restock.reactor';

/**
 * The sample's dashboard guard: requests from this machine only. A real app passes its own auth
 * guard (an admin session, a bearer token); the dashboard refuses to mount without one outside
 * `NODE_ENV=development`.
 */
@Injectable()
export class LocalhostOnlyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const ip = context.switchToHttp().getRequest<{ ip?: string }>().ip ?? '';
    return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
  }
}

/** The sample app with the dashboard at /reactor. */
@Module({
  imports: [AppModule, ReactorDashboardModule.forRoot({ path: 'reactor', guard: LocalhostOnlyGuard })],
})
export class DashboardAppModule {}

const order = (orderId: string, country: string): OrderDto => ({
  orderId,
  customerId: 'cus_ada',
  items: [{ sku: 'book', quantity: 1 }],
  totalCents: 2_990,
  shippingAddress: { name: 'Ada Lovelace', city: country === 'FR' ? 'Lyon' : 'McMurdo Station', country },
});

/**
 * `npm run sample -- --dashboard`: start the sample app with the dashboard on `PORT` (default
 * 3000), leave runs in different states (completed, failed with rollback, paused at an interrupt,
 * a fan-out map that completed and one that failed, an undone one), and stay up until Ctrl-C.
 */
export async function serveDashboard(): Promise<void> {
  const app = await NestFactory.create(DashboardAppModule);
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  const client = app.get(ReactorClient);
  const orders = app.get(OrdersService);

  await orders.placeOrder(order('order-1', 'FR'));
  await orders.placeOrder(order('order-2', 'AQ')); // shipping fails: compensated and undone
  const undone = await orders.placeOrder(order('order-3', 'FR'));
  await client.undo(undone.runId);
  await client.run(CreditApprovalReactor, { requestId: 'credit-42', customerId: 'cus_ada', amountCents: 2_500 });
  const imported = await client.run(RestockImportReactor, {
    lines: [
      { sku: 'book', quantity: 5 },
      { sku: 'lamp', quantity: 4 },
    ],
  });
  await client.wait(imported.runId, { timeoutMs: 10_000 });
  const bad = await client.run(RestockImportReactor, {
    lines: [
      { sku: 'book', quantity: 2 },
      { sku: 'lamp', quantity: 2 },
      { sku: 'desk', quantity: 1 },
      { sku: 'book', quantity: 3 },
    ],
  });
  await client.wait(bad.runId, { timeoutMs: 10_000 });

  console.log(`\nReactor dashboard: http://127.0.0.1:${port}/reactor/`);
  console.log('Runs: completed, failed (with rollback), undone, paused at an interrupt (answer it on its page),');
  console.log('a fan-out map that completed and one that failed (open it for its failed element). Ctrl-C to stop.');
}
