/**
 * A step kind: what one kind of step (a handler, a composed reactor, a map) does when the run
 * invokes it, compensates it, or undoes it. The executor's loop, step runner and rollback call
 * these methods and never ask which kind they hold; a new kind is a new file implementing
 * {@link StepKind} plus one line in `./index.ts`.
 */
import type { HandlerSpec, ReactorDefinition, StepDefinition } from '../definition/definition';
import type { StepContext } from '../definition/step';
import type { RollbackFailure } from '../model/failure';
import type { ResumeClaim } from '../model/interrupt';
import type { RunState, UndoEntry } from '../model/run-state';
import type { MapHost, NestedExecution } from '../map/map-host';
import type { StepOutcome } from '../results/step-outcome';
import type { Suspended } from '../results/suspension';

/** A step whose handler is of spec `S`. */
export type StepOf<S extends HandlerSpec> = StepDefinition & { readonly handler: S };

/** How a nested execution saves: through the current run (composed children), or not at all. */
export type ChildSaving = 'through-parent' | 'none';

/** What a step kind may use of the run that invokes it: what a map needs, and a little more. */
export interface StepScope extends MapHost {
  /** The instance that runs a step class (the Nest container in an app). */
  resolve<T>(stepClass: new (...args: never[]) => T): T;
  /** What a step's callbacks receive besides their arguments (`attempt`: the step's attempts so far). */
  context(step: StepDefinition, attempt?: number): StepContext;
  /** A nested execution of `def` over `state`. */
  child(def: ReactorDefinition, state: RunState, saving: ChildSaving): NestedExecution;
  /** Resume claims and correlation ids of the top-level run, when the engine has an interrupt store. */
  readonly interrupts?: InterruptHost;
  /** Set when this execution is an async unit's run. */
  readonly inAsyncUnit: boolean;
  /**
   * How long the storage keeps a run's record after its last write (`contextTtlMs`), when known: a
   * step that parks the run longer must write it again within that time (a long sleep does).
   */
  readonly recordRetentionMs?: number;
  /** Storing, queueing and reading async units' runs, when the engine can dispatch jobs. */
  readonly units?: AsyncUnitHost;
  /** Take a composed child's own coordination, held by the top-level run (see `ExecutionEnv.coordinate`). */
  coordinate?(
    def: ReactorDefinition,
    state: RunState,
  ): Promise<{ leave(state: RunState): Promise<void> } | { halt: { reason: string; details: unknown } } | undefined>;
}

/** What an async unit step may do with its unit's run. */
export interface AsyncUnitHost {
  /** Store the unit's run, created once (an existing one is kept: a re-dispatch re-attaches). */
  store(unit: RunState): Promise<void>;
  /** Queue the unit's run for a worker. */
  queue(runId: string, reactorName: string): Promise<void>;
  /** The unit's run as stored. */
  load(runId: string): Promise<RunState | undefined>;
  /** Where this execution runs: a worker gives up on a unit after {@link parkTimeoutMs}. */
  readonly mode: 'caller' | 'worker';
  /** How long a worker waits for a unit (from its dispatch) before the step fails. */
  readonly parkTimeoutMs: number;
  /**
   * The reactors whose coordination this execution holds while it runs, with their inputs: its
   * own and those it is nested in (composed), outermost first.
   */
  readonly holding: ReadonlyArray<{ def: ReactorDefinition; inputs: Record<string, unknown> }>;
}

/** What an interrupt may do in storage, on behalf of the top-level run. */
export interface InterruptHost {
  /**
   * Bind a correlation id to the top-level run (taking it over from a run that is gone or
   * finished), and take the resume mailed to it for interrupt `path`, made the run's own claim.
   * `keepUntil` (the interrupt's deadline): the binding is kept the record retention past it, so a
   * run kept until its deadline is still answered by its correlation id.
   */
  bind(
    correlationId: string,
    path: string,
    keepUntil?: number,
  ): Promise<{ ok: true; early?: ResumeClaim } | { ok: false; boundTo: string }>;
  /** The claim made for interrupt `path` before the run reached it, made permanent; if any. */
  take(path: string): Promise<ResumeClaim | undefined>;
  /** List the top-level run as waiting at interrupt `path` for events named `event`. */
  watch(event: string, path: string): Promise<void>;
  /** No longer list it there (the interrupt is settled). */
  unwatch(event: string, path: string): Promise<void>;
}

/** What a kind's compensate or undo did. */
export interface RollbackReport {
  failures: RollbackFailure[];
  /** Said in the trace entry (why nothing ran, or what failed). */
  detail?: string;
  /** Said in the `*.fail` event when there are failures. @default the first failure's message */
  error?: string;
}

/** A reactor a step runs by name: it must be registered when the definitions are validated. */
export interface LinkedReactor {
  reactorName: string;
  /** How the step uses it, for the error message (`compose step 'x' names reactor 'y'`). */
  describe: (stepName: string) => string;
  /** Whether it runs nested inside this reactor (compose): checked for cycles. */
  nested: boolean;
}

/** One kind of step. `S` is the handler spec it serves. */
export interface StepKind<S extends HandlerSpec = HandlerSpec> {
  /**
   * Invoke the step's body with resolved, validated arguments and normalize what it did into an
   * outcome (a throw is a Failure), or {@link Suspended} when the run must wait.
   */
  invoke(
    scope: StepScope,
    step: StepOf<S>,
    args: Record<string, unknown>,
    attempt: number,
  ): Promise<StepOutcome<unknown> | Suspended>;
  /** Re-entering the step adopts work it started earlier (a fan-out map): not a new attempt. */
  adopting?(scope: StepScope, step: StepOf<S>): boolean;
  /** What the trace says of a step re-entered to adopt its work. @default 'adopting the map results' */
  adoptingDetail?: string;
  /**
   * What a failure message calls the step, with no attempt count (an interrupt's attempts are its
   * payloads: its error says how many were tried). Absent: `step`, with the attempts.
   */
  failureNoun?: string;
  /** The step never goes on the run's undo stack (an async unit is never undone with its run). */
  offUndoStack?: true;
  /** The value readers get from what the step stored as its result (an async unit's outcome). */
  readValue?(stored: unknown): unknown;
  /**
   * Clean up after the step's own body failed. Absent: nothing to compensate and nothing is
   * reported (a composed child has already rolled itself back).
   */
  compensate?(
    scope: StepScope,
    step: StepOf<S>,
    error: unknown,
    args: Record<string, unknown>,
  ): Promise<RollbackReport>;
  /** Roll back the step after it had completed. */
  undo(scope: StepScope, step: StepOf<S>, entry: UndoEntry): Promise<RollbackReport>;
  /** Whether {@link undo} would do anything (a handler without `undo` has nothing to undo). */
  hasUndoWork(scope: StepScope, step: StepOf<S>): boolean;
  /** Definitions declared inside the step (a map's inline element reactor), registered with it. */
  innerDefinitions?(step: StepOf<S>): ReactorDefinition[];
  /** Reactors the step runs by name. */
  linkedReactors?(step: StepOf<S>): LinkedReactor[];
}
