import { Logger } from '@nestjs/common';
import { Reactor, Step, success, type ReactorBlueprint, type ReactorBuilder, type StepHandler } from '../lib';
import { InventoryService } from './inventory.service';

/** What the nightly report found. */
export interface StockReport {
  warehouse: string;
  stock: Record<string, number>;
  low: string[];
}

/** Read the warehouse's stock and flag the SKUs running low. */
@Step('snapshot-stock')
export class SnapshotStock implements StepHandler<{ warehouse: string; lowAt: number }, StockReport> {
  private readonly logger = new Logger('NightlyReport');

  constructor(private readonly inventory: InventoryService) {}

  run({ warehouse, lowAt }: { warehouse: string; lowAt: number }) {
    const stock = this.inventory.snapshot();
    const low = Object.keys(stock).filter((sku) => stock[sku] <= lowAt);
    this.logger.log(`stock report of ${warehouse}: ${JSON.stringify(stock)}, low: ${low.join(', ') || 'none'}`);
    return success({ warehouse, stock, low });
  }
}

/**
 * A nightly stock report, declared with its schedule: every day at 02:00 in Paris, one run with
 * this input (on the Redis runtime, one run per night across every replica). Listed, paused,
 * resumed and triggered with `client.schedules` under its name, `nightly-stock-report`.
 */
@Reactor('nightly-stock-report', {
  schedule: { cron: '0 2 * * *', tz: 'Europe/Paris', input: { warehouse: 'lyon', lowAt: 3 } },
})
export class NightlyStockReportReactor implements ReactorBlueprint<{ warehouse: string; lowAt: number }> {
  build(r: ReactorBuilder<{ warehouse: string; lowAt: number }>) {
    const warehouse = r.input('warehouse', { type: 'string' });
    const lowAt = r.input('lowAt', { type: 'integer', min: 0 });
    return r.step('snapshot', SnapshotStock, { warehouse, lowAt });
  }
}
