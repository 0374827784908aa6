/** Listing a reactor's runs for `ReactorEngine.list`: the query checked, the cursor encoded. */
import { ConfigurationError } from '../errors/configuration.error';
import type { RunStatus } from '../model/run-state';
import type { ReactorStorage, RunPosition, RunSummary } from '../ports/reactor-storage.port';

/** What `ReactorEngine.list` looks for. */
export interface ListQuery {
  /** The reactor's name. */
  reactor: string;
  status?: RunStatus;
  /** Only runs created at or after this time (ms since the epoch). */
  since?: number;
  /** The `cursor` of the previous page. */
  cursor?: string;
  /** Runs per page. @default 50 */
  limit?: number;
}

/** A page of `ReactorEngine.list`. */
export interface RunList {
  runs: RunSummary[];
  /** Pass as `cursor` for the next page; absent when there is nothing more. */
  cursor?: string;
}

function decodeCursor(cursor: string): RunPosition {
  const at = cursor.indexOf(':');
  const createdAt = Number(cursor.slice(0, at));
  if (at <= 0 || !Number.isFinite(createdAt)) {
    throw new ConfigurationError(`list: 'cursor' is not one list returned (got '${cursor}').`, 'cursor');
  }
  return { createdAt, runId: cursor.slice(at + 1) };
}

/**
 * A page of the runs of `query.reactor`, newest first (see `ReactorStorage.listRuns`). Refuses a
 * query without a reactor, a limit out of 1..1000 or a cursor it did not make, naming the field.
 */
export async function listRuns(storage: ReactorStorage, query: ListQuery): Promise<RunList> {
  if (!storage.listRuns) throw new ConfigurationError('This storage adapter cannot list runs.');
  if (typeof query?.reactor !== 'string' || query.reactor.length === 0) {
    throw new ConfigurationError("list: 'reactor' (a reactor name) is required.", 'reactor');
  }
  const limit = query.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new ConfigurationError(
      `list: 'limit' must be an integer from 1 to 1000 (got ${String(query.limit)}).`,
      'limit',
    );
  }
  const page = await storage.listRuns({
    reactorName: query.reactor,
    status: query.status,
    since: query.since,
    before: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    limit,
  });
  return { runs: page.runs, ...(page.next ? { cursor: `${page.next.createdAt}:${page.next.runId}` } : {}) };
}
