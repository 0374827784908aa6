import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { ReactorClient, type TraceEntry, type RunOutcome } from '../lib';
import { AppModule } from './app.module';
import { CreditApprovalReactor } from './approval.reactor';
import { serveDashboard } from './dashboard';
import { InventoryService } from './inventory.service';
import type { OrderDto } from './order.dto';
import { OrdersService } from './orders.service';
import { PaymentsService } from './payments.service';
import { RestockImportReactor } from './restock.reactor';
import { InvoiceReactor, type OrderPaid } from './order-paid.reactor';
import type { StockReport } from './nightly-report.reactor';
import { ReindexUserReactor, TenantExportReactor } from './tenant-export.reactor';

const order = (orderId: string, country: string): OrderDto => ({
  orderId,
  customerId: 'cus_ada',
  items: [
    { sku: 'book', quantity: 2 },
    { sku: 'lamp', quantity: 1 },
  ],
  totalCents: 8_990,
  shippingAddress: { name: 'Ada Lovelace', city: country === 'FR' ? 'Lyon' : 'McMurdo Station', country },
});

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  const baseUrl = await app.getUrl();
  try {
    const orders = app.get(OrdersService);
    const inventory = app.get(InventoryService);
    const payments = app.get(PaymentsService);
    const client = app.get(ReactorClient);

    banner('1. Checkout shipping to France (succeeds)');
    const ok = await orders.placeOrder(order('order-1', 'FR'));
    report(ok);

    banner('2. Checkout shipping to Antarctica (shipping fails: compensate, then undo)');
    const failed = await orders.placeOrder(order('order-2', 'AQ'));
    report(failed);

    banner('State after both checkouts');
    console.log('stock     ', inventory.snapshot(), '(order-1 holds 2 books and 1 lamp; order-2 gave its back)');
    for (const c of payments.ledger())
      console.log('charge    ', `${c.chargeId} ${c.amountCents} cents${c.refunded ? ' REFUNDED' : ''}`);
    const stored = await client.get(failed.runId);
    console.log(
      'stored run',
      failed.runId,
      '->',
      stored?.status,
      '| completed steps (kept in history):',
      stored?.completed.join(', '),
    );

    banner('3. Restock import: a fan-out map over the lines of a supplier file (2 in flight)');
    const restock = await client.run(RestockImportReactor, {
      lines: [
        { sku: 'book', quantity: 5 },
        { sku: 'lamp', quantity: 4 },
        { sku: 'book', quantity: 1 },
      ],
    });
    console.log(`run ${restock.runId}: ${restock.status.toUpperCase()} (the map hands off to workers)`);
    const imported = await client.wait(restock.runId, { timeoutMs: 10_000 });
    report(imported);
    console.log('map progress', (await client.get(restock.runId))?.maps.lines);
    console.log('stock     ', inventory.snapshot());

    banner('4. Restock import with an unknown SKU (atomic: every added line is undone, highest index first)');
    const bad = await client.run(RestockImportReactor, {
      lines: [
        { sku: 'book', quantity: 2 },
        { sku: 'lamp', quantity: 2 },
        { sku: 'desk', quantity: 1 },
        { sku: 'book', quantity: 3 },
      ],
    });
    const badOutcome = await client.wait(bad.runId, { timeoutMs: 10_000 });
    report(badOutcome);
    console.log('stock     ', inventory.snapshot(), '(unchanged by the failed import)');

    banner('5. A credit over the limit waits for a manager: paused, then resumed over HTTP by its request id');
    const request = { requestId: 'credit-42', customerId: 'cus_ada', amountCents: 2_500 };
    const paused = await client.run(CreditApprovalReactor, request);
    console.log(
      `run ${paused.runId}: ${paused.status.toUpperCase()}` +
        (paused.status === 'paused' ? ` at '${paused.stepName}' (correlation id ${paused.correlationId})` : ''),
    );
    const post = async (body: unknown) => {
      const response = await fetch(`${baseUrl}/approvals/${request.requestId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      console.log(`POST /approvals/${request.requestId} ${JSON.stringify(body)} -> ${response.status} ${text}`);
      return response.status;
    };
    const invalid = await post({ approved: 'yes' });
    const accepted = await post({ approved: true, approver: 'grace' });
    const again = await post({ approved: false, approver: 'mallory' });
    const approvedRun = await client.wait(paused.runId);
    report(approvedRun);

    banner(
      '6. An order.paid event (a payment webhook, delivered twice): one receipt, and the invoice waiting for it settles',
    );
    const invoice = await client.run(InvoiceReactor, { invoiceId: 'inv-7', orderId: 'order-7' });
    console.log(`run ${invoice.runId}: ${invoice.status.toUpperCase()} (waits for the payment of order-7)`);
    const paid: OrderPaid = { orderId: 'order-7', amountCents: 4_200, paymentId: 'pay_77' };
    const emitted = await client.emit('order.paid', paid, { id: 'evt_pay_77' });
    console.log(`emit order.paid (id evt_pay_77) ->`, JSON.stringify(emitted));
    const redelivered = await client.emit('order.paid', paid, { id: 'evt_pay_77' });
    console.log(`emit order.paid again (same id) ->`, JSON.stringify(redelivered));
    const receipt = await client.wait(emitted.started[0]?.runId ?? '');
    const settled = await client.wait(invoice.runId);
    report(settled);

    banner('7. A nightly stock report (@Reactor schedule: 02:00 Paris time) and a schedule per tenant from code');
    const [nightly] = (await client.schedules.list()).filter((s) => s.id === 'nightly-stock-report');
    console.log(
      `schedule ${nightly.id}: '${nightly.cron}' in ${nightly.tz}, next tick ${new Date(nightly.nextTickAt ?? 0).toISOString()}`,
    );
    const now = await client.schedules.trigger('nightly-stock-report');
    const reportRun = now.status === 'started' ? await client.wait<StockReport>(now.runId) : undefined;
    console.log(`trigger now -> run ${now.status === 'started' ? now.runId : now.reason}:`, reportRun?.status);
    const tenant = await client.schedules.upsert({
      id: 'stock-report:acme',
      reactor: 'nightly-stock-report',
      cron: '30 6 * * 1',
      tz: 'America/New_York',
      input: { warehouse: 'acme-nyc', lowAt: 5 },
    });
    console.log(`schedule ${tenant.id}: next tick ${new Date(tenant.nextTickAt ?? 0).toISOString()}`);
    const pausedSchedule = await client.schedules.pause('stock-report:acme');
    console.log(
      `paused ${pausedSchedule.id}: paused=${pausedSchedule.paused}, next tick ${pausedSchedule.nextTickAt ?? 'none'}`,
    );

    banner('8. Flow control: exports at most 2 at a time per tenant (fairly), a reindex debounced per user');
    const exports = [];
    for (const report of ['orders', 'stock', 'customers', 'invoices']) {
      exports.push(await client.start(TenantExportReactor, { tenantId: 'acme', report }));
    }
    exports.push(await client.start(TenantExportReactor, { tenantId: 'globex', report: 'orders' }));
    for (const started of exports) {
      const flow = started.status === 'dispatched' ? started.flow : undefined;
      console.log(
        `run ${started.runId}: ${flow ? `${flow.state} (key ${flow.key}, position ${flow.position})` : 'started'}`,
      );
    }
    const exported = await Promise.all(exports.map((started) => client.wait(started.runId)));
    console.log(`exports completed: ${exported.filter((o) => o.status === 'completed').length} of ${exported.length}`);
    const edits = [];
    for (const name of ['Ada', 'Ada L.', 'Ada Lovelace'])
      edits.push(await client.start(ReindexUserReactor, { userId: 'u-1', name }));
    console.log(
      `3 edits of u-1 -> ${new Set(edits.map((e) => e.runId)).size} run (${edits[0].status === 'dispatched' ? edits[0].flow?.state : ''})`,
    );
    const reindexed = await client.wait<string>(edits[0].runId);
    console.log(`reindex run: ${reindexed.status}, value ${reindexed.status === 'completed' ? reindexed.value : ''}`);

    if (
      exported.some((o) => o.status !== 'completed') ||
      new Set(edits.map((e) => e.runId)).size !== 1 ||
      reindexed.status !== 'completed' ||
      reindexed.value !== 'u-1=Ada Lovelace' ||
      paused.status !== 'paused' ||
      invalid !== 400 ||
      accepted !== 200 ||
      again !== 409 ||
      approvedRun.status !== 'completed' ||
      invoice.status !== 'paused' ||
      emitted.started.length !== 1 ||
      emitted.answered.length !== 1 ||
      redelivered.started.length + redelivered.answered.length !== 0 ||
      receipt.status !== 'completed' ||
      settled.status !== 'completed' ||
      reportRun?.status !== 'completed' ||
      !pausedSchedule.paused ||
      ok.status !== 'completed' ||
      failed.status !== 'failed' ||
      failed.failure.rollbackFailures.length > 0 ||
      imported.status !== 'completed' ||
      badOutcome.status !== 'failed'
    ) {
      console.error('\nUnexpected outcomes: the sample did not behave as documented.');
      process.exitCode = 1;
    }
  } finally {
    await app.close();
  }
}

function banner(title: string): void {
  console.log(`\n=== ${title} ${'='.repeat(Math.max(0, 90 - title.length))}`);
}

function report(outcome: RunOutcome<unknown>): void {
  console.log(`\nrun ${outcome.runId}: ${outcome.status.toUpperCase()}`);
  if (outcome.status === 'completed') console.log('value:', outcome.value);
  if (outcome.status === 'failed') {
    console.log(`failure: ${outcome.failure.message}`);
    console.log(`rollback failures: ${outcome.failure.rollbackFailures.length}`);
  }
  console.log('trace:');
  const start = outcome.trace[0]?.at ?? 0;
  for (const entry of outcome.trace) console.log('  ' + traceLine(entry, start));
}

const TRACE_LABELS: Record<TraceEntry['type'], string> = {
  run: 'run',
  retry: 'retry',
  complete: 'completed',
  fail: 'FAILED',
  compensate: 'COMPENSATE',
  undo: 'UNDO',
  undoAll: 'UNDO ALL',
  skip: 'skipped',
  halt: 'halted',
  handoff: 'handoff',
  pause: 'PAUSED',
  resume: 'resumed',
};

function traceLine(entry: TraceEntry, start: number): string {
  const time = `+${String(entry.at - start).padStart(3)}ms`;
  const label = TRACE_LABELS[entry.type].padEnd(10);
  const detail =
    entry.type === 'run'
      ? (entry.detail ?? `attempt ${entry.attempt ?? 1}`)
      : entry.type === 'compensate' || entry.type === 'undo'
        ? `${entry.ok ? 'ok' : 'failed'}${entry.detail ? ` (${entry.detail})` : ''}`
        : (entry.detail ?? '');
  return `${time}  ${label} ${entry.step.padEnd(8)} ${detail}`.trimEnd();
}

// `npm run sample -- --dashboard` keeps the app up with the dashboard instead of exiting.
(process.argv.includes('--dashboard') ? serveDashboard() : main()).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
