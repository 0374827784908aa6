import type { RollbackFailure } from '../model/failure';
import type { ElementRecord, MapMeta, MapProgress, MapRollbackProgress } from '../model/map';
import type { RunState } from '../model/run-state';
import type { Lease } from './lock-manager.port';

/** What claiming an element found. */
export type ElementClaim =
  | { acquired: false }
  | { acquired: true; done: true }
  | { acquired: true; done: false; input: Record<string, unknown>; state?: RunState; skip: boolean };

/** What storing elements' records decided. */
export interface ElementSettled {
  progress: MapProgress;
  /**
   * Next indices to dispatch: the window refills once at least `elementsPerJob` of its
   * `batchSize` places are free (with one element per job, it slides by one per settled element).
   */
  next: number[];
  /** True for exactly one caller: the one that must resume the owner. */
  signalOwner: boolean;
}

/** One element to claim: its index and the lease to take for it. */
export interface ElementToClaim {
  index: number;
  lease: Lease;
}

/** One element's outcome to store, under the lease its claim took. */
export interface ElementSettlement {
  index: number;
  record: ElementRecord;
  /** The final state to keep for rollback; absent when the element has nothing to undo. */
  state?: RunState;
  lease: Lease;
}

/** What storing a chunk of elements decided; `lost` are the elements whose lease was not held (not written). */
export interface ElementsSettled extends ElementSettled {
  lost: number[];
}

/** How element inputs are stored. */
export interface StoredInputsOptions {
  /** Encrypt them with the store's `InputCipher` (see `MapMeta.encryptInputs`). */
  encrypt: boolean;
}

/**
 * Storage of fan-out maps: element inputs, records by index, the dispatch window, element
 * leases, and distributed rollback. Results are written by index (a re-run overwrites its own
 * slot) and completion is judged by the number of stored records, never by a counter alone.
 * Every key of a map lives in its owner run's cluster slot.
 */
export interface MapStore {
  /**
   * Whether the store encrypts element inputs and states marked `encryptInputs` (it was given an
   * `InputCipher`). Without it, such a map is refused when it is created.
   */
  readonly encryptsInputs?: boolean;
  /** Create the map and add it to the index of open maps. False if it exists (a re-run). */
  create(meta: MapMeta): Promise<boolean>;
  meta(mapId: string): Promise<MapMeta | undefined>;
  /** Store the inputs of elements `start ..< start + inputs.length`, encrypted when `options.encrypt`. */
  putInputs(
    mapId: string,
    start: number,
    inputs: Array<Record<string, unknown>>,
    options?: StoredInputsOptions,
  ): Promise<void>;
  /** Reserve up to `count` more indices to dispatch (never past `total`). */
  reserve(mapId: string, count: number): Promise<number[]>;
  /**
   * Take element `index`'s lease and read what it needs, in one round trip. `done` when the
   * element already has a record (a duplicate delivery). `skip` when an atomic map has failed.
   */
  claimElement(mapId: string, index: number, lease: Lease, ttlMs: number): Promise<ElementClaim>;
  /**
   * {@link claimElement} for the elements of one `map-element` job, in one round trip; the
   * claims come back in the order asked.
   */
  claimElements(mapId: string, elements: readonly ElementToClaim[], ttlMs: number): Promise<ElementClaim[]>;
  /** Save an element's state between attempts (a retry re-enqueues the element job). Fenced. */
  putElementState(mapId: string, index: number, state: RunState, lease: Lease): Promise<void>;
  /**
   * Store element `index`'s record and (when it has something to undo) its final state, release
   * its lease, record the first failure of an atomic map (settling every undispatched element as
   * skipped), reserve the next index to dispatch, and claim the owner signal when the map is
   * done. One round trip. Fenced by the element lease.
   */
  settleElement(
    mapId: string,
    index: number,
    record: ElementRecord,
    state: RunState | undefined,
    lease: Lease,
  ): Promise<ElementSettled>;
  /**
   * {@link settleElement} for the elements of one `map-element` job, in one round trip: each
   * element is fenced by its own lease, and one whose lease is no longer held is reported in
   * `lost` and not written (its live holder settles it); the window and the owner signal are
   * decided once for the chunk.
   */
  settleElements(mapId: string, settlements: readonly ElementSettlement[]): Promise<ElementsSettled>;
  /** Records of `from ..< to` (undefined where none is stored). */
  records(mapId: string, from: number, to: number): Promise<Array<ElementRecord | undefined>>;
  progress(mapId: string): Promise<MapProgress>;
  /** Dispatched indices with no record and no live element lease (lost or dead elements). */
  stalled(mapId: string, limit: number): Promise<number[]>;
  /** Claim the owner signal for a done map (the sweeper uses it when the signal was lost). */
  claimSignal(mapId: string): Promise<boolean>;
  /** Ids of maps not yet adopted by their owner, oldest first. */
  listOpen(limit: number): Promise<string[]>;
  /** The owner adopted the map: drop it from the open index (records stay for the enumerator). */
  close(mapId: string): Promise<void>;

  /** Final state of element `index` (for rollback), if it had something to undo. */
  elementState(mapId: string, index: number): Promise<RunState | undefined>;
  /**
   * Start (once) the rollback of the map: the elements to undo are the ones with a stored state,
   * highest index first. Returns the first `batchSize` to dispatch (empty when already started).
   */
  startRollback(mapId: string, batchSize: number): Promise<number[]>;
  /**
   * Record the rollback outcome of element `index` (first outcome wins), release its lease,
   * reserve the next element to undo, and claim the owner signal when all have reported.
   */
  settleRollback(
    mapId: string,
    index: number,
    failures: RollbackFailure[],
    lease: Lease | undefined,
  ): Promise<{ next: number[]; signalOwner: boolean }>;
  rollbackProgress(mapId: string): Promise<MapRollbackProgress | undefined>;
  /** Rollback positions claimed but not reported, whose element holds no live lease (lost jobs). */
  stalledRollback(mapId: string, limit: number): Promise<number[]>;
}
