import { Injectable, Logger } from '@nestjs/common';
import { Reactor, Step, success, type ReactorBlueprint, type ReactorBuilder, type StepHandler } from '../lib';

/** Exports written, per tenant, in memory. */
@Injectable()
export class ExportsService {
  private readonly logger = new Logger('Exports');
  readonly written: string[] = [];

  write(tenantId: string, report: string): string {
    this.written.push(`${tenantId}:${report}`);
    this.logger.log(`export ${report} of ${tenantId} written`);
    return `${tenantId}/${report}.csv`;
  }
}

/** Write one report of a tenant. */
@Step('write-export')
export class WriteExport implements StepHandler<{ tenantId: string; report: string }, string> {
  constructor(private readonly exports: ExportsService) {}

  run({ tenantId, report }: { tenantId: string; report: string }) {
    return success(this.exports.write(tenantId, report));
  }
}

/**
 * A tenant's exports, at most 2 at a time per tenant: the others wait in the tenant's queue
 * (stored, not refused) and start in order as slots free, and a tenant that asks for hundreds
 * never delays another tenant's first export (see docs/flow-control.md).
 */
@Reactor('tenant-export', { concurrency: { key: (i) => String(i.tenantId), limit: 2 } })
export class TenantExportReactor implements ReactorBlueprint<{ tenantId: string; report: string }> {
  build(r: ReactorBuilder<{ tenantId: string; report: string }>) {
    const tenantId = r.input('tenantId', { type: 'string' });
    const report = r.input('report', { type: 'string' });
    return r.step('write', WriteExport, { tenantId, report });
  }
}

/**
 * A search reindex per user, debounced: a burst of profile edits within a second makes one run,
 * with the last edit's inputs (at most 10 s after the first).
 */
@Reactor('reindex-user', { debounce: { key: (i) => String(i.userId), periodMs: 1_000, maxWaitMs: 10_000 } })
export class ReindexUserReactor implements ReactorBlueprint<{ userId: string; name: string }> {
  build(r: ReactorBuilder<{ userId: string; name: string }>) {
    const userId = r.input('userId', { type: 'string' });
    const name = r.input('name', { type: 'string' });
    return r.step('reindex', ({ userId, name }: { userId: string; name: string }) => success(`${userId}=${name}`), {
      userId,
      name,
    });
  }
}
