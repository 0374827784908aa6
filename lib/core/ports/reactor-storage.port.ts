import type { RunState, RunStatus } from '../model/run-state';
import type { Lease } from './lock-manager.port';

/** A run as `listRuns` finds it. */
export interface RunSummary {
  runId: string;
  reactorName: string;
  status: RunStatus;
  /** When the run was created (ms), as its index holds it. */
  createdAt: number;
}

/** A place in a reactor's runs, newest first: the last run a page returned. */
export interface RunPosition {
  createdAt: number;
  runId: string;
}

/** What {@link ReactorStorage.listRuns} looks for. */
export interface ListRunsQuery {
  reactorName: string;
  status?: RunStatus;
  /** Only runs created at or after this time (ms). */
  since?: number;
  /** Continue after this run (exclusive). */
  before?: RunPosition;
  limit: number;
  /**
   * Only runs carrying this tag (issue 25): read from the tag's index, which the checkpoint that
   * sets a tag writes, instead of the reactor's runs index (same order, same positions).
   */
  tag?: { key: string; value: string };
}

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
  /**
   * Allow a non-terminal state to replace a terminal record. Only manual undo sets it (a completed
   * run becomes `rolling_back`, then `cancelled`); any other writer over a terminal record is stale.
   */
  reopen?: boolean;
  /** With `lease`: release it in the same write (the run's final save). */
  releaseLease?: boolean;
  /**
   * With `lease` and `leaseTtlMs`: take the lease (its token) in the same write instead of
   * checking it, for a run's first save in the caller. Throws `LeaseLostError` when it is held;
   * with `createOnly`, an existing record returns `false` first and takes nothing.
   */
  acquireLease?: boolean;
}

/** What {@link ReactorStorage.acquireAndLoad} found. */
export type ClaimResult = { acquired: false } | { acquired: true; state: RunState | undefined };

/** Why a run's record cannot be used; stored as the run's failure. */
export interface BrokenReason {
  code: string;
  message: string;
  exceptionClass?: string;
}

/**
 * Where runs live. The adapter serializes the {@link RunState} snapshot; the engine saves it after
 * every step. A durable adapter does each save in one round trip, keeps non-terminal runs in an
 * index the sweepers read, and drops terminal runs from it.
 */
export interface ReactorStorage {
  /**
   * Whether the storage encrypts the inputs of runs marked `encryptInputs` (it was given an
   * `InputCipher`). Without it, a reactor declaring `encryptInputs` is refused when registered.
   */
  readonly encryptsInputs?: boolean;
  /**
   * Whether a save that stores a settled run (terminal or paused) also wakes the run's waiters and
   * watchers in other processes, as `RunEventBus.signal` does, in the same write: the engine then
   * sends no signal of its own after the run's last save (it still wakes this process's).
   */
  readonly announcesSettled?: boolean;
  /**
   * Write the run. Returns false when nothing was written: with `createOnly` because the run
   * exists, otherwise because the stored record is terminal and the state is not (unless
   * `reopen`); the engine treats the latter as a stale writer and stops. Throws `LeaseLostError`
   * when fenced by a lost lease and `ContextTooLargeError` over the size limit.
   */
  save(state: RunState, options?: SaveOptions): Promise<boolean>;
  /**
   * Read the run, or `undefined` when there is none. Throws `CorruptRecordError` for a record
   * that cannot be read (corrupt JSON, unknown schema version).
   */
  load(runId: string): Promise<RunState | undefined>;
  /**
   * Ask a run to cancel: store `reason` with a non-terminal run, where its executing process finds
   * it at its next checkpoint ({@link cancelRequest}). A terminal run, and a run rolling back, are
   * left as they are. Returns the run's status, or `undefined` when there is no run. A durable
   * adapter does it in one round trip.
   */
  requestCancel?(runId: string, reason: string): Promise<RunStatus | undefined>;
  /**
   * Bind an idempotency key of a reactor to `runId` for `ttlMs`, unless it is bound already:
   * returns the run id the key is bound to (`runId` for the first caller). Atomic: of concurrent
   * callers with one key, one binds it. A durable adapter does it in one round trip.
   */
  claimIdempotencyKey?(reactorName: string, key: string, runId: string, ttlMs: number): Promise<string>;
  /**
   * Unbind an idempotency key of a reactor if it is bound to `runId` (a key bound to another run is
   * left alone): the engine gives back a key it bound for a run that never started (invalid inputs,
   * a refused coordination, a failed create), so the next call with the key runs. One round trip.
   */
  releaseIdempotencyKey?(reactorName: string, key: string, runId: string): Promise<void>;
  /**
   * The runs of a reactor, newest first, from an index the run's creation writes (no key scan):
   * at most `limit` matching `status` (when given), created at or after `since` and before the
   * `before` position. `next` is the position to continue from: absent when nothing is left to
   * read (a page after a `next` may be empty).
   */
  listRuns?(query: ListRunsQuery): Promise<{ runs: RunSummary[]; next?: RunPosition }>;
  /**
   * The cancel request that the last save or load of this state object found stored with the run,
   * if any (no round trip: the checkpoint reports it).
   */
  cancelRequest?(state: RunState): string | undefined;
  /**
   * Extend the lease of an executing run for `ttlMs` (as `LockManager.extend`, only for the holder
   * of `lease.token`) and read the run's cancel request, in one round trip: the lease keeper's
   * periodic extension is how an execution learns of a cancel asked in another process while a
   * step runs (to abort its signal). `held: false` when the lease was lost. Optional: without it
   * the engine extends through the `LockManager` and learns of cancels at checkpoints only.
   */
  extendRunLease?(runId: string, lease: Lease, ttlMs: number): Promise<{ held: boolean; cancel?: string }>;
  /**
   * Take the run's lease (`lease.key` is `run:<runId>`, `lease.token` the caller's random token)
   * for `ttlMs` and, if taken, read the run: lock, then load, in one round trip. Not acquired
   * means another process holds the run. Throws `CorruptRecordError` (after acquiring) for a
   * record that cannot be read; the caller holds the token and releases it.
   */
  acquireAndLoad(runId: string, lease: Lease, ttlMs: number): Promise<ClaimResult>;
  /**
   * Ids of non-terminal runs (running, rolling back, pending), oldest update first, up to `limit`;
   * with `updatedBefore`, only runs last updated before that time (ms), so a sweep reads only the
   * runs that could be stalled.
   */
  listActive(limit: number, updatedBefore?: number): Promise<string[]>;
  /**
   * Mark a run failed with `reason` when its record cannot be used (corrupt, unknown reactor),
   * keeping what can be kept. Idempotent.
   */
  markBroken(runId: string, reactorName: string | undefined, reason: BrokenReason): Promise<void>;
  /**
   * The size in UTF-8 bytes of the stored record of `state`, when this adapter wrote or read that
   * state object (undefined otherwise). Lets the engine refuse a step whose arguments would not fit
   * before the step runs. Optional.
   */
  sizeOf?(state: RunState): number | undefined;
}
