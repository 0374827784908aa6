import type { ReactorDefinition } from '../definition/definition';
import type { RunState } from '../model/run-state';
import type { MiddlewareRunner } from '../middleware/middleware-runner';
import type { Clock } from '../ports/clock.port';
import type { ReactorJob } from '../ports/job-dispatcher.port';
import type { Lease } from '../ports/lock-manager.port';
import type { CoordinationStore } from '../ports/coordination-store.port';
import type { InterruptStore } from '../ports/interrupt-store.port';
import type { MapStore } from '../ports/map-store.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import type { StepResolver } from '../ports/step-resolver.port';
import type { Tracing } from '../tracing/tracing';
import type { ExecutionAbort } from './execution-abort';
import type { HeldMutexes } from './mutexes';

/** Everything an execution needs from its host (the engine). */
export interface ExecutionEnv {
  storage: ReactorStorage;
  clock: Clock;
  middleware: MiddlewareRunner;
  resolver: StepResolver;
  /** Look up a reactor definition by name (composed children, map elements). */
  definition(name: string): ReactorDefinition;
  /** `caller`: the process that called run (retries sleep, hand-offs apply). `worker`: a job. */
  mode: 'caller' | 'worker';
  /** The run's lease; every save is fenced by it. */
  lease?: Lease;
  leaseTtlMs?: number;
  /** Mid-run checkpoints closer together than this are coalesced. @default 0 */
  checkpointMinIntervalMs?: number;
  /** The size limit of the run's record, and what the record takes now (see ReactorStorage.sizeOf). */
  recordBudget?: { limit: number; used(): number };
  /**
   * Enqueue a resume of the (root) run, after its state was saved. Needed for hand-offs and for
   * retries in workers; without it, a hand-off is ignored and retries sleep. `unit`: the run is an
   * async unit's (its job is marked so).
   */
  enqueueResume?: (runId: string, reactorName: string, delayMs: number, unit?: boolean) => Promise<void>;
  /** Storage of fan-out maps; without it, maps run inline. */
  maps?: MapStore;
  /** Enqueue jobs (map elements and their rollbacks). */
  dispatch?: (jobs: ReactorJob[], delayMs?: number) => Promise<void>;
  /** The top-level run; fan-out maps resume it. Defaults to this run. */
  owner?: { runId: string; reactorName: string };
  /** This execution is a map element: nested maps run inline. */
  inElement?: boolean;
  /**
   * The executions this one is nested in (a composed child's parents, a map element's run),
   * outermost first: their reactors' locks and semaphores are held while this one runs.
   */
  enclosing?: ReadonlyArray<{ def: ReactorDefinition; inputs: Record<string, unknown> }>;
  /** This execution is an async unit's run (it has no id a client can resume). */
  inAsyncUnit?: boolean;
  /** Resume claims and correlation ids (interrupts); without it, an interrupt fails its run. */
  interrupts?: InterruptStore;
  /** How long resume claims and correlation id bindings are kept. */
  interruptRetentionMs?: number;
  /** How long a caller blocks for async units its run waits on, before the run goes to a worker. */
  asyncWaitTimeoutMs?: number;
  /** How long a worker waits for an async unit (from its dispatch) before the reading step fails. */
  asyncParkTimeoutMs?: number;
  /**
   * Take a composed child's own coordination (its reactor's lock, semaphore, rate limit, period),
   * held by the top-level run (so re-entrant with the parent's lock on the same key).
   */
  coordinate?: (
    def: ReactorDefinition,
    state: RunState,
  ) => Promise<{ leave(state: RunState): Promise<void> } | { halt: { reason: string; details: unknown } } | undefined>;
  /** Steps' own locks and semaphores. */
  coordination?: CoordinationStore;
  /**
   * The locks and semaphore slots the execution holds now (shared with its composed children and
   * inline elements): a step's result is recorded only once they are confirmed still held.
   */
  held?: HeldMutexes;
  /** How many times a step waits for its lock or semaphore before it fails. */
  lockSnoozeMaxAttempts?: number;
  /** Resolve when run `runId` is terminal (or paused), or after `timeoutMs` (with it as it is then). */
  awaitRun?: (runId: string, timeoutMs: number) => Promise<unknown>;
  /** Spans of the execution and its steps; without it, none. */
  tracing?: Tracing;
  /**
   * The execution's abort state: its steps' signals are aborted through it (cancel, shutdown past
   * the grace, lost lease). Shared by composed children and inline map elements. Without it, step
   * signals are never aborted.
   */
  abort?: ExecutionAbort;
}

/** Saves the root run; `final` ends the execution and releases the lease in the same write. */
export type Saver = (final: boolean) => Promise<void>;
