import type { RunState } from '../executor/run-state';
import type { Lease } from './lock-manager.port';

/** Options of {@link ReactorStorage.save}. */
export interface SaveOptions {
  /**
   * Fence the write: it succeeds only while this lease is held, and refreshes it. A lost lease
   * makes the save throw `LeaseLostError` and write nothing.
   */
  lease?: Lease;
  /** TTL to refresh the lease to, with `lease`. */
  leaseTtlMs?: number;
  /**
   * Only create: fail with `false` if a record with this id exists. Used for the first save of a
   * run, so a duplicate id never overwrites another run.
   */
  createOnly?: boolean;
}

/**
 * Where runs live. The adapter serializes the {@link RunState} snapshot; the engine saves it after
 * every step. A durable adapter does each save in one round trip, keeps non-terminal runs in an
 * index the sweepers read, and drops terminal runs from it.
 */
export interface ReactorStorage {
  /**
   * Write the run. Returns false only for `createOnly` when the run exists. Throws
   * `LeaseLostError` when fenced by a lost lease, `ContextTooLargeError` over the size limit, and
   * never overwrites a terminal record with a non-terminal one.
   */
  save(state: RunState, options?: SaveOptions): Promise<boolean>;
  /**
   * Read the run, or `undefined` when there is none. Throws `CorruptRecordError` for a record
   * that cannot be read (corrupt JSON, unknown schema version).
   */
  load(runId: string): Promise<RunState | undefined>;
  /** Ids of non-terminal runs (running, rolling back, pending), oldest update first, up to `limit`. */
  listActive(limit: number): Promise<string[]>;
  /**
   * Mark a run failed with `reason` when its record cannot be used (corrupt, unknown reactor),
   * keeping what can be kept. Idempotent.
   */
  markBroken(runId: string, reactorName: string | undefined, reason: { code: string; message: string }): Promise<void>;
}
