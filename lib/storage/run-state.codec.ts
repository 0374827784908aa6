import {
  ContextTooLargeError,
  CorruptRecordError,
  RUN_STATE_SCHEMA_VERSION,
  newRunState,
  sentence,
  runFailure,
  type RunState,
  type BrokenReason,
  type RunStatus,
} from '../core';

/** Default limit on a serialized run: 16 MiB. */
export const DEFAULT_MAX_CONTEXT_BYTES = 16 * 1024 * 1024;

/**
 * Serialize `state` and enforce the size limit.
 * @throws ContextTooLargeError when the UTF-8 JSON is over `maxBytes`.
 */
export function encodeRunState(state: RunState, maxBytes: number): string {
  const json = JSON.stringify(state);
  // A UTF-16 code unit encodes to at most 3 UTF-8 bytes: only measure when the limit can be hit.
  if (json.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > maxBytes) throw new ContextTooLargeError(state.runId, bytes, maxBytes);
  }
  return json;
}

// A Record over the union, so that adding a status to RunStatus fails to compile here until the
// codec learns it (instead of loads refusing the new status as corrupt).
const KNOWN_STATUSES: Record<RunStatus, true> = {
  pending: true,
  running: true,
  rolling_back: true,
  paused: true,
  completed: true,
  failed: true,
  halted: true,
  cancelled: true,
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Parse a stored record of run `runId`.
 * @throws CorruptRecordError code `CORRUPT_RECORD` for bad JSON or a record of the wrong shape,
 *   code `SCHEMA_VERSION` for a record written in another format version.
 */
export function decodeRunState(runId: string, raw: string): RunState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new CorruptRecordError(`Stored record of run '${runId}' is not valid JSON: ${(err as Error).message}`, runId);
  }
  return checkRunState(runId, parsed);
}

/**
 * Check that a parsed record of run `runId` is a run state of this schema version.
 * @throws CorruptRecordError code `CORRUPT_RECORD` for a record of the wrong shape, code
 *   `SCHEMA_VERSION` for a record written in another format version.
 */
export function checkRunState(runId: string, parsed: unknown): RunState {
  if (!isPlainObject(parsed)) {
    throw new CorruptRecordError(`Stored record of run '${runId}' is not a JSON object.`, runId);
  }
  if (parsed.schemaVersion !== RUN_STATE_SCHEMA_VERSION) {
    throw new CorruptRecordError(
      `Stored record of run '${runId}' has schema version ${JSON.stringify(parsed.schemaVersion)}; this version of nest-reactor reads version ${RUN_STATE_SCHEMA_VERSION} only.`,
      runId,
      'SCHEMA_VERSION',
    );
  }
  const problem = shapeProblem(runId, parsed);
  if (problem) throw new CorruptRecordError(sentence(`Stored record of run '${runId}' is corrupt: ${problem}`), runId);
  return parsed as unknown as RunState;
}

function shapeProblem(runId: string, r: Record<string, unknown>): string | undefined {
  if (r.runId !== runId) return `field 'runId' is ${JSON.stringify(r.runId)}, expected '${runId}'`;
  if (typeof r.reactorName !== 'string') return `field 'reactorName' is not a string`;
  if (typeof r.status !== 'string' || !Object.prototype.hasOwnProperty.call(KNOWN_STATUSES, r.status)) {
    return `field 'status' is ${JSON.stringify(r.status)}, not a known run status`;
  }
  for (const field of ['inputs', 'results', 'attempts', 'children'] as const) {
    if (!isPlainObject(r[field])) return `field '${field}' is not an object`;
  }
  for (const field of ['completed', 'undoStack', 'trace'] as const) {
    if (!Array.isArray(r[field])) return `field '${field}' is not an array`;
  }
  for (const field of ['createdAt', 'updatedAt'] as const) {
    if (typeof r[field] !== 'number') return `field '${field}' is not a number`;
  }
  return undefined;
}

/**
 * The minimal failed record that {@link ReactorStorage.markBroken} writes: a valid {@link RunState}
 * (so `load` works) with empty collections. Of the previous record it keeps what can still be
 * read (`reactorName`, `definitionHash`, `createdAt`), even from corrupt or foreign-version JSON.
 */
export function brokenRunState(
  runId: string,
  reactorName: string | undefined,
  reason: BrokenReason,
  previousRaw: string | undefined,
  now: number,
): RunState {
  const previous = salvage(previousRaw);
  const name = previous.reactorName ?? reactorName ?? 'unknown';
  return {
    ...newRunState({ name, hash: previous.definitionHash ?? '' }, runId, {}, previous.createdAt ?? now),
    status: 'failed',
    failure: runFailure({
      message: reason.message,
      code: reason.code,
      reactorName: name,
      exceptionClass: reason.exceptionClass ?? 'CorruptRecordError',
    }),
    updatedAt: now,
    finishedAt: now,
  };
}

function salvage(raw: string | undefined): { reactorName?: string; definitionHash?: string; createdAt?: number } {
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return {};
  }
  if (!isPlainObject(parsed)) return {};
  return {
    reactorName: typeof parsed.reactorName === 'string' ? parsed.reactorName : undefined,
    definitionHash: typeof parsed.definitionHash === 'string' ? parsed.definitionHash : undefined,
    createdAt: typeof parsed.createdAt === 'number' ? parsed.createdAt : undefined,
  };
}

/** The index score of a paused run with no deadline: the end of time (the largest `Date`). */
export const PAUSED_INDEX_SCORE = 8_640_000_000_000_000;

/**
 * Where a live run sits in its shard's index of live runs: when it was last written, or, while it
 * waits for a scheduled retry, when that retry is due. A sweep reads only runs idle past the grace
 * period, so a run waiting for a retry is not looked at before it is due and never hides a stalled one.
 * A paused run sits at its earliest interrupt deadline, or at the end of time: thousands of runs
 * waiting for answers never fill a sweep's page (a resume claimed for it moves it to the claim's time).
 * A run waiting for a concurrency slot sits at the end of time too; a delayed or gathering run at
 * when it is due.
 */
export function indexScore(state: RunState): number {
  // A run waiting for a slot is the flow sweep's (it reads the key's queue), never a stalled run; a
  // delayed or gathering one is looked at once it is due.
  const wait = state.status === 'pending' ? state.flow?.wait : undefined;
  if (wait !== undefined)
    return wait === 'queued' ? PAUSED_INDEX_SCORE : Math.max(state.updatedAt, state.flow!.at ?? 0);
  if (state.status === 'paused') {
    let deadline = PAUSED_INDEX_SCORE;
    const visit = (run: RunState): void => {
      for (const [step, record] of Object.entries(run.interrupts ?? {})) {
        if (record.timeoutAt !== undefined && !run.completed.includes(step))
          deadline = Math.min(deadline, record.timeoutAt);
      }
      for (const child of Object.values(run.children)) if (child.status === 'paused') visit(child);
    };
    visit(state);
    return deadline;
  }
  if (!state.retryAt) return state.updatedAt;
  let due = state.updatedAt;
  for (const step in state.retryAt) due = Math.max(due, state.retryAt[step]);
  return due;
}

/** The statuses a run ends in, each kept for a retention of its own (`retention` of the storages). */
export type FinishedStatus = 'completed' | 'failed' | 'halted' | 'cancelled';

/** How long a finished run's record is kept, per status (ms); each defaults to `contextTtlMs`. */
export type RetentionOptions = Partial<Record<FinishedStatus, number>>;

/**
 * How long records are kept (ms): `contextTtlMs` for a live run (past its next deadline, see
 * {@link recordTtlMs}), and one retention per status a run ends in.
 */
export interface RecordRetention extends Readonly<Record<FinishedStatus, number>> {
  readonly contextTtlMs: number;
}

/** The finished statuses, in the order options and docs list them. */
export const FINISHED_STATUSES: readonly FinishedStatus[] = ['completed', 'failed', 'halted', 'cancelled'];

/**
 * The retention of records: `contextTtlMs` and each status's retention (`contextTtlMs` when not
 * given), each checked by `check` (the storages' `normalizeTtlMs`, which names the option).
 */
export function recordRetention(
  contextTtlMs: number,
  retention: RetentionOptions | undefined,
  check: (ms: number, what: string) => number,
): RecordRetention {
  const out: Record<string, number> = { contextTtlMs };
  for (const status of FINISHED_STATUSES) {
    const ms = retention?.[status];
    out[status] = ms === undefined ? contextTtlMs : check(ms, `retention.${status}`);
  }
  return out as unknown as RecordRetention;
}

/**
 * The longest a record can be kept after its creation's window starts: the longest of
 * `contextTtlMs` and the per-status retentions. What the reactor's runs index (`list`) keeps, and
 * what a run's satellites that must outlive it (a fan-out map's records) are kept for.
 */
export function longestRetentionMs(retention: RecordRetention): number {
  let longest = retention.contextTtlMs;
  for (const status of FINISHED_STATUSES) longest = Math.max(longest, retention[status]);
  return longest;
}

/**
 * How long the record of a run written now is kept (its TTL, re-stamped by every write):
 * - a finished run: its status's retention;
 * - a live run due at a time to come (`score`, its {@link indexScore}: a paused run's earliest
 *   interrupt deadline, a sleeping run's wake-up, a retry's due time, a delayed start's): until
 *   then plus `contextTtlMs`, so it is still stored when woken (timed out, resumed) and then lives
 *   its usual TTL;
 * - any other live run (a paused run without a deadline, a queued one included): `contextTtlMs`.
 */
export function recordTtlMs(status: RunStatus, score: number, now: number, retention: RecordRetention): number {
  switch (status) {
    case 'completed':
    case 'failed':
    case 'halted':
    case 'cancelled':
      return retention[status];
    default:
      if (score >= PAUSED_INDEX_SCORE || !(score > now)) return retention.contextTtlMs;
      return retention.contextTtlMs + Math.ceil(score - now);
  }
}
