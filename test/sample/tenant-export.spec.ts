import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { ReactorTestingKit, ReactorTestingModule } from '../../lib/testing';
import {
  ExportsService,
  ReindexUserReactor,
  TenantExportReactor,
  WriteExport,
} from '../../sample/tenant-export.reactor';

const silent: LoggerService = { log() {}, warn() {}, error() {} };

describe('sample: exports per tenant and a debounced reindex (flow control)', () => {
  let moduleRef: TestingModule;
  let kit: ReactorTestingKit;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReactorTestingModule.forRoot()],
      providers: [ExportsService, WriteExport, TenantExportReactor, ReindexUserReactor],
    })
      .setLogger(silent)
      .compile();
    await moduleRef.init();
    kit = moduleRef.get(ReactorTestingKit);
  });

  afterEach(async () => {
    await moduleRef.close();
  });

  it("a tenant's third export waits in its queue; another tenant's first does not; all complete", async () => {
    const started = [];
    for (const report of ['a', 'b', 'c'])
      started.push(await kit.client.start(TenantExportReactor, { tenantId: 'acme', report }));
    const globex = await kit.client.start(TenantExportReactor, { tenantId: 'globex', report: 'a' });
    expect(started.map((s) => (s.status === 'dispatched' ? s.flow : undefined))).toEqual([
      undefined,
      undefined,
      { state: 'queued', key: 'acme', position: 1 },
    ]);
    expect(globex).toMatchObject({ status: 'dispatched' });
    expect(globex).not.toHaveProperty('flow');
    await kit.idle();
    for (const s of [...started, globex]) expect(await kit.client.get(s.runId)).toMatchObject({ status: 'completed' });
    expect(moduleRef.get(ExportsService).written.sort()).toEqual(['acme:a', 'acme:b', 'acme:c', 'globex:a']);
  });

  it("a burst of edits of one user makes one reindex run, with the last edit's inputs, a second after the last", async () => {
    const edits = [];
    for (const name of ['Ada', 'Ada L.', 'Ada Lovelace'])
      edits.push(await kit.client.start(ReindexUserReactor, { userId: 'u-1', name }));
    expect(new Set(edits.map((e) => e.runId)).size).toBe(1);
    expect(edits[2]).toMatchObject({ status: 'dispatched', flow: { state: 'debounced', key: 'u-1' } });
    await kit.advance(999);
    expect(await kit.client.get(edits[0].runId)).toMatchObject({ status: 'pending' });
    await kit.advance(1);
    expect(await kit.client.get(edits[0].runId)).toMatchObject({ status: 'completed', value: 'u-1=Ada Lovelace' });
  });
});
