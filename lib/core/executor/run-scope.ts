import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import { applyOps, type ArgSource } from '../definition/ref';
import type { StepContext } from '../definition/step';
import { elementJobs } from '../map/element-jobs';
import { hydrateMapValue, storesMapMarker } from '../map/map-results';
import type { ReactorEvent } from '../middleware/events';
import type { MiddlewareRunner } from '../middleware/middleware-runner';
import type { RunState, TraceEntry } from '../model/run-state';
import { NO_SPAN, type TraceSpan } from '../tracing/tracing';

/** Retention of resume claims and correlation ids when the engine sets none (24 h, the record's default). */
const DEFAULT_INTERRUPT_RETENTION_MS = 24 * 60 * 60 * 1000;
import type { JobKind } from '../ports/job-dispatcher.port';
import type { MapStore } from '../ports/map-store.port';
import type { NestedExecution } from '../map/map-host';
import type { AsyncUnitHost, ChildSaving, InterruptHost, StepScope } from '../steps/step-kind';
import { stepKindOf } from '../steps';
import { publicValue } from '../results/async-unit-result';
import { isTerminal } from '../model/run-state';
import { withoutUndefinedProperties } from '../model/json-values';
import { setTag } from '../validation/run-tags';
import type { ExecutionEnv, Saver } from './execution-env';
import { ExecutionStopped, NEVER_ABORTED, type OpenSignal } from './execution-abort';
import type { StepAbortedError, StepAbortSite } from '../errors/step-aborted.error';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event as an execution emits it: the run's id, reactor and time are added. */
export type RunEvent = DistributiveOmit<ReactorEvent, 'runId' | 'reactorName' | 'at'>;
/** A step event as an execution emits it: the step's name is added too. */
export type StepEvent = DistributiveOmit<ReactorEvent, 'runId' | 'reactorName' | 'at' | 'step'>;

/**
 * One run (or composed child) being executed: its definition, state, host and save, and what the
 * loop, the step runner, the rollback and the step kinds share (trace, events, argument sources,
 * nested executions). The loop itself is {@link RunExecution}, which makes the nested executions.
 */
export abstract class RunScope implements StepScope {
  /** Errors of failing steps in this process, handed to `compensate` as they were thrown. */
  readonly liveErrors = new Map<string, unknown>();

  /** The span of this execution (its steps' spans are its children; rollback events go on it). */
  span: TraceSpan = NO_SPAN;

  /**
   * @param saveRun saves the root run; a composed child saves through its parent.
   * @param root whether this is the top-level run (emits reactor events, applies hand-offs).
   */
  constructor(
    readonly def: ReactorDefinition,
    readonly state: RunState,
    readonly env: ExecutionEnv,
    readonly saveRun: Saver,
    readonly root: boolean,
  ) {}

  abstract child(def: ReactorDefinition, state: RunState, saving: ChildSaving): NestedExecution;

  get owner(): { runId: string; reactorName: string } {
    return this.env.owner ?? { runId: this.state.runId, reactorName: this.def.name };
  }

  get inElement(): boolean {
    return this.env.inElement === true;
  }

  get inAsyncUnit(): boolean {
    return this.env.inAsyncUnit === true;
  }

  /** How long the storage keeps the run's record after its last write (see {@link StepScope.recordRetentionMs}). */
  get recordRetentionMs(): number | undefined {
    return this.env.interruptRetentionMs;
  }

  /** The map store, when this process can fan out (it needs a dispatcher too). */
  get maps(): MapStore | undefined {
    return this.env.dispatch ? this.env.maps : undefined;
  }

  now(): number {
    return this.env.clock.now();
  }

  /** Resume claims and correlation ids of the top-level run (see {@link InterruptHost}). */
  get interrupts(): InterruptHost | undefined {
    const { interrupts: store, storage } = this.env;
    if (!store) return undefined;
    const owner = this.owner;
    const retentionMs = this.env.interruptRetentionMs ?? DEFAULT_INTERRUPT_RETENTION_MS;
    return {
      bind: async (correlationId, path, keepUntil) => {
        // A paused run is kept until its deadline plus the retention (see `recordTtlMs`): so is its binding.
        const keepMs =
          keepUntil === undefined ? retentionMs : Math.max(retentionMs, keepUntil - this.now() + retentionMs);
        let bound = await store.bindCorrelationId(owner.reactorName, correlationId, owner.runId, path, {
          retentionMs: keepMs,
        });
        if (!bound.ok) {
          // A binding left by a run that is gone or finished (a retried run, an expired one) is taken over.
          const holder = await storage.load(bound.boundTo).catch(() => undefined);
          if (holder && !isTerminal(holder.status)) return bound;
          bound = await store.bindCorrelationId(owner.reactorName, correlationId, owner.runId, path, {
            retentionMs: keepMs,
            replacing: bound.boundTo,
          });
        }
        if (!bound.ok || !bound.early) return bound;
        // The mailed resume becomes the run's own claim before it is applied (durable, first wins).
        const claimed = await store.claim(owner.runId, path, bound.early, { now: this.now(), retentionMs });
        return { ok: true, early: claimed.won ? bound.early : claimed.existing };
      },
      take: async (path) => (await store.claims(owner.runId, [path], 'take', this.now()))[path],
      watch: async (event, path) => {
        await store.watchEvent?.(event, owner.runId, path);
      },
      unwatch: async (event, path) => {
        await store.unwatchEvent?.(event, owner.runId, path);
      },
    };
  }

  definition(name: string): ReactorDefinition {
    return this.env.definition(name);
  }

  /** A definition by name, or undefined when this process does not know it. */
  private readonly definitionOf = (name: string): ReactorDefinition | undefined => {
    try {
      return this.env.definition(name);
    } catch {
      return undefined;
    }
  };

  resolve<T>(stepClass: new (...args: never[]) => T): T {
    return this.env.resolver.resolve(stepClass);
  }

  save(): Promise<void> {
    return this.saveRun(false);
  }

  async dispatchMapJobs(
    mapId: string,
    indices: number[],
    kind: Extract<JobKind, 'map-element' | 'map-rollback'>,
    perJob = 1,
  ): Promise<void> {
    if (indices.length === 0) return;
    await this.env.dispatch!(elementJobs(this.owner, mapId, indices, kind, perJob));
  }

  context(step: StepDefinition, attempt = this.state.attempts[step.name] ?? 1): StepContext {
    return new RunStepContext(
      this.state,
      this.def.name,
      step.name,
      attempt,
      this.env.held,
      this.signals.get(step.name),
    );
  }

  /** The signal of each step whose callback (body, compensate or undo) runs now. */
  private readonly signals = new Map<string, OpenSignal>();

  /**
   * Run `fn` (one of `step`'s rollback callbacks) with a signal of its own, which {@link context}
   * hands to the step; returns what `fn` returned and whether the signal was aborted by the time it
   * did. (An attempt of the body opens and closes its signal itself, with no frame around it.)
   */
  async withSignal<T>(
    step: StepDefinition,
    phase: StepAbortSite['phase'],
    fn: () => Promise<T>,
  ): Promise<{ value: T; abortedBy?: StepAbortedError }> {
    const open = this.openStepSignal(step, phase);
    if (!open) return { value: await fn() };
    try {
      const value = await fn();
      return open.reason ? { value, abortedBy: open.reason } : { value };
    } finally {
      this.closeStepSignal(step, open);
    }
  }

  /**
   * Open the signal of a callback of `step` that starts now (none without an abort state); close it
   * with {@link closeStepSignal} once the callback returned.
   */
  openStepSignal(step: StepDefinition, phase: StepAbortSite['phase']): OpenSignal | undefined {
    const abort = this.env.abort;
    if (!abort) return undefined;
    const open = abort.openSignal({ runId: this.state.runId, reactorName: this.def.name, stepName: step.name, phase });
    this.signals.set(step.name, open);
    return open;
  }

  /** Close a signal {@link openStepSignal} opened. */
  closeStepSignal(step: StepDefinition, open: OpenSignal | undefined): void {
    if (!open) return;
    open.close();
    if (this.signals.get(step.name) === open) this.signals.delete(step.name);
  }

  /** Throw {@link ExecutionStopped} when the execution was told to stop (shutdown past its grace, lost lease). */
  throwIfStopped(): void {
    const cause = this.env.abort?.stopCause;
    if (cause) throw new ExecutionStopped(cause);
  }

  resolveArgs(step: StepDefinition): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    // As a worker would read them back: no `undefined` properties (an argument that resolved to
    // `undefined` is absent), so a step and its undo get the same arguments in every process.
    // Inputs and results lost theirs when they entered the run: only a constant or a transform's
    // value is new, and only that is scanned.
    const sources = step.args;
    for (const key in sources) {
      const source = sources[key];
      const value = this.resolveSource(source);
      if (value === undefined) continue;
      out[key] = isFresh(source) ? withoutUndefinedProperties(value) : value;
    }
    return out;
  }

  resolveSource(source: ArgSource, element?: unknown): unknown {
    const raw =
      source.kind === 'input'
        ? this.state.inputs[source.name]
        : source.kind === 'result'
          ? this.resultOf(source.step)
          : source.kind === 'element'
            ? element
            : source.value;
    return applyOps(raw, source.ops);
  }

  /**
   * A step's stored result as readers get it: a map step's marker becomes its results object, an
   * async unit's outcome its value (or `Failure`); nothing else is read differently.
   */
  private resultOf(step: string): unknown {
    const value = this.state.results[step];
    const definition = this.def.stepsByName.get(step);
    if (storesMapMarker(definition, this.definitionOf)) return hydrateMapValue(value, this.env.maps);
    const read = definition ? stepKindOf(definition).readValue : undefined;
    if (read) return read(value);
    // A composed child's value that holds its async units' results reads them as callers do (the
    // run's own value keeps it as stored: it is read so when the value is read).
    const child = this.state.children[step];
    return child && !this.storingValue ? publicValue(child, value) : value;
  }

  /** Set while the run's value is computed to be stored (see {@link resultOf}). */
  protected storingValue = false;

  coordinate(def: ReactorDefinition, state: RunState) {
    return this.env.coordinate ? this.env.coordinate(def, state) : Promise.resolve(undefined);
  }

  /** Async units' runs (see {@link AsyncUnitHost}); needs a way to queue them. */
  get units(): AsyncUnitHost | undefined {
    const { storage, enqueueResume, mode } = this.env;
    if (!enqueueResume) return undefined;
    return {
      store: async (unit) => {
        await storage.save(unit, { createOnly: true });
      },
      queue: (runId, reactorName) => enqueueResume(runId, reactorName, 0, true),
      load: (runId) => storage.load(runId),
      mode,
      parkTimeoutMs: this.env.asyncParkTimeoutMs ?? 60 * 60 * 1000,
      holding: [...(this.env.enclosing ?? []), { def: this.def, inputs: this.state.inputs }],
    };
  }

  /** Append `entry` (a fresh object, stamped here) to the run's trace. */
  trace(entry: Omit<TraceEntry, 'at'>): void {
    (entry as TraceEntry).at = this.env.clock.now();
    this.state.trace.push(entry as TraceEntry);
  }

  /** The middleware of this execution: the global ones, then the reactor's own (classes instantiated once here). */
  get middleware(): MiddlewareRunner {
    if (this.runner === undefined) {
      const own = this.def.middleware.map((entry) => (typeof entry === 'function' ? new entry() : entry));
      this.runner = this.env.middleware.with(own);
    }
    return this.runner;
  }

  private runner: MiddlewareRunner | undefined;

  async emit(event: RunEvent): Promise<void> {
    if (this.middleware.empty) return;
    // Assigned, not spread: see DD-speed22-11.
    await this.middleware.emit(
      Object.assign({}, event, {
        runId: this.state.runId,
        reactorName: this.def.name,
        at: this.env.clock.now(),
      }) as ReactorEvent,
    );
  }

  async emitStep(step: StepDefinition, event: StepEvent): Promise<void> {
    if (this.middleware.empty) return;
    await this.emit(Object.assign({}, event, { step: step.name }) as RunEvent);
  }
}

/**
 * The `ctx` a step's callback gets. A class, not an object literal: a literal with a getter is
 * built through V8's slow path (about 1 µs per step on Node 20, DD-speed22-13); its `signal` getter
 * is on the prototype, its `fence` and `tag` are own functions (a destructured `const { tag } = ctx`
 * still works).
 */
class RunStepContext implements StepContext {
  readonly runId: string;
  readonly fence: (key?: string) => number;
  readonly tag: (key: string, value: string) => void;
  readonly #open: OpenSignal | undefined;

  constructor(
    state: RunState,
    readonly reactorName: string,
    readonly stepName: string,
    readonly attempt: number,
    held: ExecutionEnv['held'],
    open: OpenSignal | undefined,
  ) {
    this.runId = state.runId;
    this.#open = open;
    this.fence = (key) => {
      if (!held)
        throw new TypeError(`Reactor '${reactorName}' step '${stepName}': ctx.fence(): the run holds no lock.`);
      return held.fenceFor(stepName, reactorName, key);
    };
    this.tag = (key, value) => setTag(state, `Reactor '${reactorName}' step '${stepName}': ctx.tag`, key, value);
  }

  /** The signal's AbortController is made only for a step that reads it. */
  get signal(): AbortSignal {
    return this.#open ? this.#open.signal : NEVER_ABORTED;
  }
}

/** Whether an argument's value is made by the definition (a constant, a transform), not read from the run. */
function isFresh(source: ArgSource): boolean {
  if (source.kind === 'value') return true;
  for (const op of source.ops) if ('transform' in op) return true;
  return false;
}
