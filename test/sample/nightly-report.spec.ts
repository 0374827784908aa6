import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { scheduledRunId } from '../../lib';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import { InventoryService } from '../../sample/inventory.service';
import { NightlyStockReportReactor, SnapshotStock } from '../../sample/nightly-report.reactor';

const silent: LoggerService = { log() {}, warn() {}, error() {} };
const HOUR = 60 * 60 * 1000;

describe('sample: the nightly stock report', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [InventoryService, SnapshotStock, NightlyStockReportReactor],
    })
      .setLogger(silent)
      .compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
  });

  afterEach(async () => {
    await moduleRef.close();
  });

  it('runs at 02:00 Paris time each night with its declared input', async () => {
    const start = kit.clock.now(); // 2026-01-01T00:00:00Z, 01:00 in Paris
    await kit.advance(2 * HOUR); // past 02:00 Paris (01:00 UTC)
    const runId = scheduledRunId('nightly-stock-report', start + HOUR);
    expect(await kit.client.get(runId)).toMatchObject({
      status: 'completed',
      inputs: { warehouse: 'lyon', lowAt: 3 },
      value: { warehouse: 'lyon', stock: { book: 10, lamp: 3 }, low: ['lamp'] },
    });
    await kit.advance(24 * HOUR);
    expect(await kit.client.get(scheduledRunId('nightly-stock-report', start + 25 * HOUR))).toMatchObject({
      status: 'completed',
    });
  });
});
