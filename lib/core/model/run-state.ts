import type { FieldErrors, RollbackFailure, RunFailure } from './failure';

/** Version of the stored run format. A record with another version is refused, not guessed at. */
export const RUN_STATE_SCHEMA_VERSION = 1;

/** Lifecycle of a run. `completed`, `failed`, `halted` and `cancelled` are terminal. */
export type RunStatus =
  'pending' | 'running' | 'rolling_back' | 'paused' | 'completed' | 'failed' | 'halted' | 'cancelled';

export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'halted', 'cancelled'];

/** Whether `status` is terminal (the run will not change again except by undo). */
export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** One entry of a run's execution trace. Arguments are redacted. */
export interface TraceEntry {
  type:
    | 'run'
    | 'retry'
    | 'compensate'
    | 'undo'
    | 'undoAll'
    | 'skip'
    | 'halt'
    | 'complete'
    | 'fail'
    | 'handoff'
    | 'pause'
    | 'resume';
  step: string;
  /** Milliseconds since the epoch, from the engine's Clock. */
  at: number;
  attempt?: number;
  /** Redacted arguments (on `run`). */
  arguments?: Record<string, unknown>;
  /** Outcome detail: reason, error message, or whether the callback existed. */
  detail?: string;
  /** For `retry`: the backoff delay. */
  delayMs?: number;
  /** For `compensate`/`undo`/`undoAll`: whether it succeeded. */
  ok?: boolean;
  /** For `undoAll`: how many completed elements' results it received. */
  count?: number;
}

/** A completed step that a rollback must undo. Arguments are stored raw (they are not shown). */
export interface UndoEntry {
  step: string;
  args: Record<string, unknown>;
  result: unknown;
}

/**
 * What settles a waiting interrupt: a valid payload, the last invalid one (the run fails), or its
 * timeout. The first claim of an interrupt wins and is never changed (it is the dedup marker).
 */
export type ResumeClaim =
  | { kind: 'payload'; payload: unknown; at: number }
  | { kind: 'rejected'; fieldErrors: FieldErrors; attempts: number; at: number }
  | { kind: 'timeout'; at: number };

/** An interrupt a run reached, kept in its state (per run level: a composed child keeps its own). */
export interface InterruptRecord {
  /** From the top-level run: `approve`, or `child.approve` inside compose step `child`. */
  path: string;
  correlationId?: string;
  /** When the run first reached it. */
  pausedAt: number;
  /** When it times out (`timeoutMs` after `pausedAt`). */
  timeoutAt?: number;
  /**
   * The claim this execution applies, copied from storage by the lease holder; the step settles
   * with it at once, so it is never stored.
   */
  applied?: ResumeClaim;
}

/** Where an async unit's run is, and when it was dispatched. */
export interface AsyncUnitRef {
  runId: string;
  reactorName: string;
  dispatchedAt: number;
}

/** The record kept in the run's state for a map step. */
export interface MapRecord {
  mapId: string;
  mode: 'inline' | 'fanOut';
  total?: number;
  /** Inline: final states of completed elements that have something to undo, by index. */
  elements?: Record<string, RunState>;
  /** Inline with `undoAll`: values of completed elements, by index. */
  values?: Record<string, unknown>;
}

/**
 * The whole state of one run: JSON-serializable, saved through {@link ReactorStorage} after every
 * step. Composed children live inside their parent's state.
 */
export interface RunState {
  schemaVersion: typeof RUN_STATE_SCHEMA_VERSION;
  runId: string;
  reactorName: string;
  /** Hash of the reactor definition the run started under. */
  definitionHash: string;
  /** Version of the reactor the run started under (absent in runs stored before versions: '1'). */
  reactorVersion?: string;
  status: RunStatus;
  /**
   * Inputs given from a redacted value of the parent run (a composed child's or a map element's):
   * shown as `[REDACTED]` like the inputs the definition declares `redact: true`. Absent when none.
   */
  redactedInputs?: string[];
  /**
   * Set when storage encrypts the fields of this run that hold inputs in clear (its reactor, or the
   * run it belongs to, declares `encryptInputs`; see `InputCipher`).
   */
  encryptInputs?: true;
  /** Set on a run started by `retry` of a failed run: that run's id, and how many retries led here. */
  retriedFrom?: string;
  retryCount?: number;
  /**
   * Set on a run started with an idempotency key: a salted SHA-256 of its validated inputs'
   * canonical JSON (`inputsHash`), never the inputs, so a later call with the key and other inputs
   * is refused (`IDEMPOTENCY_CONFLICT`).
   */
  inputsHash?: string;
  /** Validated reactor inputs (raw; redact before showing). */
  inputs: Record<string, unknown>;
  /** Step name to value, for completed and skipped steps. */
  results: Record<string, unknown>;
  /** Steps that finished (completed or skipped), in completion order. */
  completed: string[];
  /** Completed steps that rollback must undo, oldest first. */
  undoStack: UndoEntry[];
  /**
   * Attempts made per step. An attempt is recorded together with its `run` trace entry (the
   * storage adapters write the counts of the steps a checkpoint's new `run` entries name).
   */
  attempts: Record<string, number>;
  trace: TraceEntry[];
  /** States of composed children, by compose step name. */
  children: Record<string, RunState>;
  /** Final value of a completed run. */
  value?: unknown;
  failure?: RunFailure;
  halt?: { step: string; reason: string; details?: unknown };
  cancellation?: { reason: string; rollbackFailures: RollbackFailure[] };
  /**
   * A rollback in progress (status `rolling_back`): saved before it starts and after each step of
   * it, so a worker can finish it after a crash. `target` is the status it ends in.
   */
  rollback?: {
    target: 'failed' | 'cancelled';
    /** Failing steps still to compensate (their bodies had started). */
    compensate: Array<{ step: string; args: Record<string, unknown>; message: string }>;
    /** Undo and compensate failures so far. */
    failures: RollbackFailure[];
  };
  /** Where a background run resumes: set by hand-offs, retries that re-enqueue, and fan-out maps. */
  handoff?: { mode: 'all' | 'after' | 'before' | 'map' | 'interrupt' | 'async'; step?: string };
  /**
   * Coordination bookkeeping: the rate limit was charged (once per run), the period bucket of the
   * first execution, and the run's place on its ordered lock.
   */
  coordination?: {
    charged?: true;
    periodBucket?: string;
    /** The run's place on its ordered lock: taken at start, given back (advanced) when it ends. */
    order?: { key: string; nonce: number; epoch: number };
  };
  /** Steps waiting for their own lock or semaphore: how many times each waited (capped). */
  stepContentions?: Record<string, number>;
  /** Async units this run dispatched (`asyncStep`, `asyncReactor`), by step name: each is a run of its own. */
  asyncUnits?: Record<string, AsyncUnitRef>;
  /**
   * Set on the run of an async unit: the run (and step) that dispatched it, resumed when it
   * finishes; `unit` when that run is itself an async unit's (its resume job is marked so).
   */
  asyncParent?: { runId: string; reactorName: string; step: string; unit?: true };
  /** Interrupts this run (not its children) reached, by step name. */
  interrupts?: Record<string, InterruptRecord>;
  /** Map steps: where their elements and records are. */
  maps?: Record<string, MapRecord>;
  /** A retry scheduled for a step in a worker: earliest time it may run. */
  retryAt?: Record<string, number>;
  /**
   * Flow control (the reactor's `concurrency`, `throttle`, `debounce`, `batch`): the concurrency key
   * whose slot the run holds once it started; while it is `pending`, what it waits for and its key,
   * and when it may start (`delayed`) or its gather is due (`debounced`, `batched`).
   */
  flow?: RunFlow;
  /**
   * Tags (issue 25): small string key/value pairs given on start (`tags`) or set by a step
   * (`ctx.tag`), indexed per reactor for `list({ tag })`. Absent when none.
   */
  tags?: Record<string, string>;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
}

/** See {@link RunState.flow}. */
export interface RunFlow {
  /** The concurrency key the run holds a slot of (or waits for, `queued`). */
  slot?: string;
  /** Why a `pending` run has not started; absent once it started. */
  wait?: 'queued' | 'delayed' | 'debounced' | 'batched';
  /** The throttle key (`delayed`) or the gather's key (`debounced`, `batched`). */
  key?: string;
  /** When a `delayed` run may start, or its gather is due (ms). */
  at?: number;
}

/** What a run inherits from the run it belongs to (a composed child's parent, a map element's map). */
export interface InheritedRunTraits {
  /** See {@link RunState.redactedInputs}. */
  redactedInputs?: readonly string[];
  /** Encrypt the stored inputs, whatever the reactor declares (see {@link RunState.encryptInputs}). */
  encryptInputs?: boolean;
}

/** The initial state of a run of reactor `reactor` (its name and definition hash). */
export function newRunState(
  reactor: {
    readonly name: string;
    readonly hash: string;
    readonly version?: string;
    readonly encryptInputs?: boolean;
  },
  runId: string,
  inputs: Record<string, unknown>,
  now: number,
  inherited: InheritedRunTraits = {},
): RunState {
  const redactedInputs = inherited.redactedInputs ?? [];
  return {
    schemaVersion: RUN_STATE_SCHEMA_VERSION,
    runId,
    reactorName: reactor.name,
    definitionHash: reactor.hash,
    ...(reactor.version !== undefined && reactor.version !== '1' ? { reactorVersion: reactor.version } : {}),
    ...(redactedInputs.length > 0 ? { redactedInputs: [...redactedInputs] } : {}),
    ...(reactor.encryptInputs === true || inherited.encryptInputs === true ? { encryptInputs: true as const } : {}),
    status: 'pending',
    inputs,
    results: {},
    completed: [],
    undoStack: [],
    attempts: {},
    trace: [],
    children: {},
    createdAt: now,
    updatedAt: now,
  };
}
