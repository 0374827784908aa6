import type { RunFailure, RollbackFailure } from './failure';

/** What recovery needs to know about a fan-out map; written once when the map is dispatched. */
export interface MapMeta {
  /** `<runId>:<step>`, where runId is the run (or composed child) whose state holds the map. */
  mapId: string;
  /** The top-level run that resumes when the map completes (the owner). */
  ownerRunId: string;
  ownerReactor: string;
  /** The run (or composed child) holding the map step, and the step's name. */
  parentRunId: string;
  step: string;
  elementReactor: string;
  /** Number of elements. */
  total: number;
  /** Most elements in flight at once. */
  batchSize: number;
  /** Elements one `map-element` job claims, runs and settles together. @default 1 */
  elementsPerJob?: number;
  atomic: boolean;
  /** Element inputs given from a redacted value of the run that maps (see `RunState.redactedInputs`). */
  redactedInputs?: string[];
  /** Set when the element inputs and states are stored encrypted (see `RunState.encryptInputs`). */
  encryptInputs?: true;
  /** Set when the map runs inside a map element (nested maps run inline, but say where). */
  outer?: { mapId: string; index: number };
  createdAt: number;
}

/** The stored outcome of one element. */
export type ElementRecord =
  | { status: 'completed'; value: unknown }
  | { status: 'failed'; failure: RunFailure }
  | { status: 'halted'; reason: string; details?: unknown }
  | { status: 'skipped' };

/** Counts of a map, as `client.get` reports them. */
export interface MapProgress {
  total: number;
  /** Elements dispatched so far (reserved). */
  dispatched: number;
  /** Elements with a stored record. */
  settled: number;
  succeeded: number;
  failed: number;
  halted: number;
  skipped: number;
  /** Index of the first failed element of an atomic map, if any. */
  failedIndex?: number;
  /** Whether every element that will ever run has settled. */
  done: boolean;
}

/** Rollback bookkeeping of a fan-out map. */
export interface MapRollbackProgress {
  /** Elements to undo (completed elements with something to undo). */
  total: number;
  /** Outcomes reported so far. */
  reported: number;
  /** Every rollback failure reported so far, tagged with `mapStep` and `elementIndex`. */
  failures: RollbackFailure[];
}

/** Progress of an inline map, from its element records (every element has settled). */
export function inlineProgress(records: ElementRecord[]): MapProgress {
  const count = (status: ElementRecord['status']) => records.filter((r) => r?.status === status).length;
  return {
    total: records.length,
    dispatched: records.length,
    settled: records.length,
    succeeded: count('completed'),
    failed: count('failed'),
    halted: count('halted'),
    skipped: count('skipped'),
    done: true,
  };
}
