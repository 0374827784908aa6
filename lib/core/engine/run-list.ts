/** Listing a reactor's runs for `ReactorEngine.list`: the query checked, the cursor encoded. */
import { ConfigurationError } from '../errors/configuration.error';
import type { RunStatus } from '../model/run-state';
import { parseTagFilter, type TagFilter } from '../validation/run-tags';
import type { InterruptStore } from '../ports/interrupt-store.port';
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
  /**
   * Only runs carrying this tag (`tags` on start, `ctx.tag` from a step): `{ key, value }` or
   * `'key=value'`. Reads the tag's index instead of the reactor's runs.
   */
  tag?: TagFilter;
  /** Only this run, if it is one of the reactor's (and matches the other filters). */
  runId?: string;
  /** Only the run this correlation id of the reactor is bound to (an interrupt's), if any. */
  correlationId?: string;
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
export async function listRuns(
  storage: ReactorStorage,
  query: ListQuery,
  interrupts?: InterruptStore,
): Promise<RunList> {
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
  const tag = query.tag === undefined ? undefined : parseTagFilter('list', query.tag);
  const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  if (query.runId !== undefined || query.correlationId !== undefined) {
    return { runs: await oneRun(storage, query, tag, before, interrupts) };
  }
  const page = await storage.listRuns({
    reactorName: query.reactor,
    status: query.status,
    since: query.since,
    before,
    limit,
    ...(tag ? { tag } : {}),
  });
  return { runs: page.runs, ...(page.next ? { cursor: `${page.next.createdAt}:${page.next.runId}` } : {}) };
}

/**
 * `list({ runId })` or `list({ correlationId })`: the one run named (the correlation id's through
 * the interrupt store's binding), when it is the reactor's and matches the other filters (a cursor
 * included, as a position); a single page (no cursor returned). One read of the run (and one of the binding).
 */
async function oneRun(
  storage: ReactorStorage,
  query: ListQuery,
  tag: { key: string; value: string } | undefined,
  before: RunPosition | undefined,
  interrupts: InterruptStore | undefined,
): Promise<RunSummary[]> {
  for (const field of ['runId', 'correlationId'] as const) {
    const value = query[field];
    if (value !== undefined && (typeof value !== 'string' || value.length === 0 || value.length > 512)) {
      throw new ConfigurationError(`list: '${field}' must be a non-empty string of at most 512 characters.`, field);
    }
  }
  let runId = query.runId;
  if (query.correlationId !== undefined) {
    if (!interrupts) {
      throw new ConfigurationError("list: 'correlationId' needs the engine's interrupt store.", 'correlationId');
    }
    const bound = await interrupts.findCorrelationId(query.reactor, query.correlationId);
    if (bound === undefined || (runId !== undefined && bound !== runId)) return [];
    runId = bound;
  }
  const state = await storage.load(runId!);
  if (!state || state.reactorName !== query.reactor) return [];
  // A cursor is a position: the run is shown only after it (a page after the run's own is empty).
  const { createdAt } = state;
  if (before && !(createdAt < before.createdAt || (createdAt === before.createdAt && state.runId < before.runId)))
    return [];
  if (query.status !== undefined && state.status !== query.status) return [];
  if (query.since !== undefined && state.createdAt < query.since) return [];
  if (tag && state.tags?.[tag.key] !== tag.value) return [];
  return [{ runId: state.runId, reactorName: state.reactorName, status: state.status, createdAt: state.createdAt }];
}
