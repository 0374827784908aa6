import { randomUUID } from 'node:crypto';
import type { ReactorDefinition } from './definition/definition';
import { DefinitionError } from './errors/definition.error';
import { InputValidationError } from './errors/input-validation.error';
import { ReactorError } from './errors/reactor.error';
import {
  ContextTooLargeError,
  CorruptRecordError,
  DefinitionChangedError,
  InvalidRunStateError,
  LeaseLostError,
  RunNotFoundError,
  UnknownReactorError,
  WaitTimeoutError,
} from './errors/run-state.error';
import { RunExecution, newRunState, outcomeOf, type ExecutionEnv } from './executor/executor';
import { redactInputs, REDACTED } from './definition/redaction';
import { isTerminal, type RunState, type RunStatus, type TraceEntry } from './model/run-state';
import type { ReactorMiddleware } from './middleware/events';
import { MiddlewareRunner } from './middleware/middleware-runner';
import { systemClock, type Clock } from './ports/clock.port';
import type { JobDispatcher, ReactorJob } from './ports/job-dispatcher.port';
import type { Lease, LockManager } from './ports/lock-manager.port';
import type { ClaimResult, ReactorStorage } from './ports/reactor-storage.port';
import type { MapStore } from './ports/map-store.port';
import { inlineProgress, type ElementRecord, type MapProgress } from './model/map';
import { runLeaseKey } from './model/keys';
import { MapJobs } from './map/map-jobs';
import { hydrateMapValue } from './map/map-runner';
import { ConstructingStepResolver, type StepResolver } from './ports/step-resolver.port';
import type { RollbackFailure, RunFailure, RunOutcome } from './results/run-outcome';
import { describeFieldErrors, validateReactorInputs } from './validation/validate';

/** Where the engine reports what it does not throw. */
export interface EngineLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of {@link ReactorEngine}. */
export interface ReactorEngineOptions {
  storage: ReactorStorage;
  locks: LockManager;
  /** Needed for background runs and retries in workers. */
  dispatcher?: JobDispatcher;
  /** Storage of fan-out maps; without it (or a dispatcher) maps run inline. */
  maps?: MapStore;
  /** @default systemClock */
  clock?: Clock;
  /** @default constructs each step class once */
  resolver?: StepResolver;
  middleware?: ReactorMiddleware[];
  /** TTL of a run's lease, extended every third of it while the run executes. @default 60000 */
  leaseTtlMs?: number;
  /** Coalesce mid-run checkpoints closer than this. @default 0 (every step) */
  checkpointMinIntervalMs?: number;
  /** Base delay of a snooze when a delivered run is executing elsewhere. @default 5000 */
  snoozeDelayMs?: number;
  /** Random extra delay of a snooze, up to this. @default snoozeDelayMs */
  snoozeJitterMs?: number;
  logger?: EngineLogger;
  /** Run id factory. @default crypto.randomUUID */
  newRunId?: () => string;
}

/** Options of one run. */
export interface RunOptions {
  /** Use this run id instead of a new UUID; a run with this id must not exist. */
  runId?: string;
}

/** A run as shown to people: inputs and step arguments are redacted. */
export interface RunView {
  runId: string;
  reactorName: string;
  status: RunStatus;
  /** Inputs with redacted fields replaced by `[REDACTED]`. */
  inputs: Record<string, unknown>;
  results: Record<string, unknown>;
  /** Completed steps in completion order. */
  completed: string[];
  attempts: Record<string, number>;
  trace: TraceEntry[];
  value?: unknown;
  failure?: RunFailure;
  halt?: { step: string; reason: string; details?: unknown };
  cancellation?: { reason: string; rollbackFailures: RollbackFailure[] };
  /** Composed children, by compose step name. */
  children: Record<string, RunView>;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
  /** Progress of each map step: total, succeeded, failed, in flight (`dispatched - settled`). */
  maps: Record<string, MapProgress>;
  /** The outcome a caller would see. */
  outcome: RunOutcome;
}

/**
 * The Nest-free engine: a registry of reactor definitions and the operations on runs. The Nest
 * `ReactorClient` is a thin, typed wrapper around it.
 */
export class ReactorEngine {
  private readonly definitions = new Map<string, ReactorDefinition>();
  private readonly clock: Clock;
  private readonly resolver: StepResolver;
  private readonly middleware: MiddlewareRunner;
  private readonly leaseTtlMs: number;
  private readonly logger: EngineLogger;
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly mapJobs: MapJobs;

  constructor(private readonly options: ReactorEngineOptions) {
    this.clock = options.clock ?? systemClock;
    this.resolver = options.resolver ?? new ConstructingStepResolver();
    this.logger = options.logger ?? {
      log: () => undefined,
      warn: (m) => console.warn(m),
      error: (m) => console.error(m),
    };
    this.middleware = new MiddlewareRunner(options.middleware ?? [], this.logger);
    this.leaseTtlMs = options.leaseTtlMs ?? 60_000;
    this.mapJobs = new MapJobs({
      maps: options.maps,
      storage: options.storage,
      locks: options.locks,
      clock: this.clock,
      leaseTtlMs: this.leaseTtlMs,
      logger: this.logger,
      hasDispatcher: options.dispatcher !== undefined,
      definition: (name) => this.definition(name),
      env: (mode, lease, owner) => this.env(mode, lease, owner),
      startExtending: (lease) => this.startExtending(lease),
      snooze: (job) => this.snooze(job),
      dispatcher: (reactorName) => this.requireDispatcher(reactorName),
      dispatchAll: (jobs, delayMs) => this.dispatchAll(jobs, delayMs),
      runLeaseHeld: (runId) => options.locks.isHeld(runLeaseKey(runId)),
    });
  }

  /** Register a definition. Registering the same name with another shape is an error. */
  register(def: ReactorDefinition): void {
    const existing = this.definitions.get(def.name);
    if (existing && existing.hash !== def.hash) {
      throw new DefinitionError(
        `Reactor '${def.name}' is registered twice with different definitions. Reactor names must be unique.`,
        def.name,
      );
    }
    this.definitions.set(def.name, def);
    for (const step of def.steps) {
      if (step.handler.kind === 'map' && step.handler.map.inlineElement) this.register(step.handler.map.inlineElement);
    }
  }

  /**
   * Check links between definitions: every composed child is registered and no reactor composes
   * itself through a chain. Called at Nest boot after discovery.
   */
  validate(): void {
    for (const def of this.definitions.values()) {
      for (const step of def.steps) {
        if (step.handler.kind === 'map' && !this.definitions.has(step.handler.map.elementReactor)) {
          throw new DefinitionError(
            `Reactor '${def.name}': map step '${step.name}' maps reactor '${step.handler.map.elementReactor}', which is not registered. ` +
              `Registered: ${[...this.definitions.keys()].join(', ')}.`,
            def.name,
            step.name,
          );
        }
        if (step.handler.kind !== 'compose') continue;
        if (!this.definitions.has(step.handler.reactorName)) {
          throw new DefinitionError(
            `Reactor '${def.name}': compose step '${step.name}' names reactor '${step.handler.reactorName}', which is not registered. ` +
              `Registered: ${[...this.definitions.keys()].join(', ')}.`,
            def.name,
            step.name,
          );
        }
      }
    }
    const visiting: string[] = [];
    const done = new Set<string>();
    const visit = (name: string): void => {
      if (done.has(name)) return;
      const at = visiting.indexOf(name);
      if (at >= 0) {
        const cycle = [...visiting.slice(at), name];
        throw new DefinitionError(`Reactors compose each other in a cycle: ${cycle.join(' -> ')}.`, name);
      }
      visiting.push(name);
      for (const step of this.definitions.get(name)?.steps ?? []) {
        if (step.handler.kind === 'compose') visit(step.handler.reactorName);
      }
      visiting.pop();
      done.add(name);
    };
    for (const name of this.definitions.keys()) visit(name);
  }

  /** The registered definition named `name`. */
  definition(name: string): ReactorDefinition {
    const def = this.definitions.get(name);
    if (!def) throw new UnknownReactorError(name, [...this.definitions.keys()]);
    return def;
  }

  /** Names of every registered reactor. */
  reactorNames(): string[] {
    return [...this.definitions.keys()];
  }

  /**
   * Run a reactor: validate inputs, then execute in this process until it completes, fails,
   * halts, or reaches a background hand-off (then the outcome is `dispatched`).
   */
  async run<I, O>(
    target: ReactorDefinition<I, O> | string,
    input: I,
    options: RunOptions = {},
  ): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    const background = def.background !== undefined && 'all' in def.background;
    const prepared = await this.prepare(def, input, options, background ? 'handoff' : 'caller');
    if (prepared.state.status === 'failed' || background) return outcomeOf<O>(prepared.state);
    return (await this.execute(def, prepared.state, prepared.lease!, 'caller', false)) as RunOutcome<O>;
  }

  /** Start a reactor in the background regardless of its options; resolves once the run is stored. */
  async start<I, O>(
    target: ReactorDefinition<I, O> | string,
    input: I,
    options: RunOptions = {},
  ): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    const prepared = await this.prepare(def, input, options, 'handoff');
    return outcomeOf<O>(prepared.state);
  }

  /** The run with this id as shown to people, or undefined when there is none. */
  async get(runId: string): Promise<RunView | undefined> {
    const state = await this.options.storage.load(runId);
    return state ? await this.view(state) : undefined;
  }

  /**
   * Wait until the run is terminal (or paused), up to `timeoutMs`; resolves to its outcome.
   * Woken at once by runs that finish in this process; otherwise polls every `pollMs`.
   */
  async wait<O = unknown>(
    runId: string,
    options: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<RunOutcome<O>> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const pollMs = options.pollMs ?? 100;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const state = await this.options.storage.load(runId);
      if (!state) throw new RunNotFoundError(runId);
      if (isTerminal(state.status) || state.status === 'paused') return this.outcome<O>(state);
      const left = deadline - Date.now();
      if (left <= 0) throw new WaitTimeoutError(runId, timeoutMs);
      await this.sleepOrWake(runId, Math.min(pollMs, left));
    }
  }

  /**
   * Undo a finished run: every completed step is undone, newest first (composed children replay
   * their own undos), then the run is `cancelled`. Refused while the run is executing.
   */
  async undo(runId: string): Promise<RunOutcome> {
    const lease: Lease = { key: runLeaseKey(runId), token: randomUUID() };
    const claim = await this.options.storage.acquireAndLoad(runId, lease, this.leaseTtlMs);
    if (!claim.acquired) {
      throw new InvalidRunStateError(
        `Run '${runId}' is executing in some process; undo it after it finishes.`,
        runId,
        'running',
      );
    }
    let released = false;
    try {
      const state = claim.state;
      if (!state) throw new RunNotFoundError(runId);
      if (!['completed', 'halted', 'failed', 'paused'].includes(state.status)) {
        throw new InvalidRunStateError(
          `Run '${runId}' is ${state.status}; only completed, halted, failed or paused runs can be undone.`,
          runId,
          state.status,
        );
      }
      const def = this.definition(state.reactorName);
      const env = this.env('caller', lease, { runId: state.runId, reactorName: def.name });
      const save = RunExecution.saver(env, state, { reopen: true, onRelease: () => (released = true) });
      const outcome = await new RunExecution(def, state, env, save).undo('undo');
      this.notify(runId);
      return outcome;
    } finally {
      if (!released) await this.options.locks.release(lease).catch(() => undefined);
    }
  }

  /**
   * Worker entry point: deliver one identity-only job. A run executing elsewhere is snoozed; a
   * missing run is a no-op; a record that cannot be used marks the run failed once and returns
   * normally, so the job is not retried.
   */
  async handleJob(job: ReactorJob): Promise<void> {
    if (job.kind === 'map-element') return this.mapJobs.handleElement(job);
    if (job.kind === 'map-rollback') return this.mapJobs.handleElementRollback(job);
    if (job.kind !== 'resume') {
      throw new ReactorError('INTERNAL', `Job kind '${job.kind}' is not handled by this engine.`);
    }
    let def: ReactorDefinition;
    try {
      def = this.definition(job.reactorName);
    } catch (error) {
      await this.options.storage.markBroken(job.runId, job.reactorName, toReason(error));
      this.notify(job.runId);
      return;
    }
    const lease: Lease = { key: runLeaseKey(job.runId), token: randomUUID() };
    let claim: ClaimResult;
    try {
      claim = await this.options.storage.acquireAndLoad(job.runId, lease, this.leaseTtlMs);
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      await this.options.storage.markBroken(job.runId, def.name, toReason(error));
      await this.options.locks.release(lease).catch(() => undefined);
      this.notify(job.runId);
      return;
    }
    if (!claim.acquired) {
      // Executing elsewhere: come back later, touching nothing. Uncapped: the holder is alive.
      await this.snooze(job);
      return;
    }
    const state = claim.state;
    if (!state || isTerminal(state.status) || state.status === 'paused') {
      await this.options.locks.release(lease).catch(() => undefined);
      return;
    }
    if (state.definitionHash !== def.hash) {
      await this.options.storage.markBroken(
        job.runId,
        def.name,
        toReason(new DefinitionChangedError(job.runId, def.name)),
      );
      await this.options.locks.release(lease).catch(() => undefined);
      this.notify(job.runId);
      return;
    }
    const due = state.retryAt ? Math.max(...Object.values(state.retryAt)) - this.clock.now() : 0;
    if (due > 0) {
      // Delivered before a scheduled retry is due (a sweeper or a duplicate): re-enqueue for then.
      await this.options.locks.release(lease).catch(() => undefined);
      await this.requireDispatcher(def.name).dispatch(
        { kind: 'resume', runId: job.runId, reactorName: def.name },
        { delayMs: due },
      );
      return;
    }
    await this.execute(def, state, lease, 'worker', true);
  }

  /**
   * Mark a run failed because its job could not be processed (infrastructure errors exhausted the
   * job's retries). Not rolled back: completed steps stay on the undo stack for `undo(runId)`.
   * Skipped when another process holds the run or it is already terminal. Never throws.
   */
  async failRun(runId: string, reason: { code: string; message: string; exceptionClass?: string }): Promise<void> {
    const lease: Lease = { key: runLeaseKey(runId), token: randomUUID() };
    try {
      const claim = await this.options.storage.acquireAndLoad(runId, lease, this.leaseTtlMs);
      if (!claim.acquired) return;
      const state = claim.state;
      if (!state || isTerminal(state.status)) {
        await this.options.locks.release(lease);
        return;
      }
      state.status = 'failed';
      state.failure = {
        message: `Run '${runId}' of reactor '${state.reactorName}' failed: ${reason.message}`,
        code: reason.code,
        reactorName: state.reactorName,
        exceptionClass: reason.exceptionClass ?? 'Error',
        errorMessage: reason.message,
        retryable: false,
        inputs: this.definitions.has(state.reactorName)
          ? redactInputs(this.definition(state.reactorName), state.inputs)
          : {},
        rollbackFailures: [],
      };
      state.finishedAt = state.updatedAt = this.clock.now();
      await this.options.storage.save(state, { lease, releaseLease: true });
      this.notify(runId);
    } catch (error) {
      this.logger.error(`Could not mark run '${runId}' failed: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  /**
   * Find runs whose executor died and re-enqueue them by id: non-terminal runs (from the storage
   * index, never a keyspace scan) that nobody holds a lease on, not updated for `graceMs`, and
   * with no retry scheduled in the future. Returns how many were re-enqueued. Idempotent: a run
   * enqueued twice is executed once (the lease), so a mistaken re-enqueue costs one job.
   */
  async recoverStalled(options: { limit?: number; graceMs?: number } = {}): Promise<number> {
    const limit = options.limit ?? 1000;
    const graceMs = options.graceMs ?? this.leaseTtlMs;
    const dispatcher = this.requireDispatcher('(sweeper)');
    const now = this.clock.now();
    let recovered = 0;
    // Only runs not updated within the grace period can be stalled: the index says which.
    for (const runId of await this.options.storage.listActive(limit, now - graceMs + 1)) {
      try {
        if (await this.options.locks.isHeld(runLeaseKey(runId))) continue;
        const state = await this.options.storage.load(runId);
        if (!state || !['running', 'rolling_back', 'pending'].includes(state.status)) continue;
        if (now - state.updatedAt < graceMs) continue;
        if (state.retryAt && Math.max(...Object.values(state.retryAt)) > now) continue;
        if (await this.mapJobs.waitingOnMap(state)) continue; // the map's last element (or recoverMaps) resumes it
        await dispatcher.dispatch({ kind: 'resume', runId, reactorName: state.reactorName });
        recovered++;
      } catch (error) {
        if (error instanceof CorruptRecordError) {
          await this.options.storage.markBroken(runId, undefined, toReason(error));
          continue;
        }
        this.logger.warn(`Sweeper skipped run '${runId}': ${(error as Error)?.message ?? String(error)}`);
      }
    }
    return recovered;
  }

  /** Validate inputs and store the new run: failed when inputs are invalid, else running. */
  private async prepare<I>(
    def: ReactorDefinition,
    input: I,
    options: RunOptions,
    mode: 'caller' | 'handoff',
  ): Promise<{ state: RunState; lease?: Lease }> {
    const runId = options.runId ?? (this.options.newRunId ?? randomUUID)();
    if (typeof runId !== 'string' || runId.length === 0 || /[:/#{}]/.test(runId)) {
      throw new InvalidRunStateError(
        `Run id '${String(runId)}' is invalid: use a non-empty string without ':', '/', '#', '{' or '}'.`,
        String(runId),
        'invalid',
      );
    }
    const { inputs, errors } = await validateReactorInputs(def.inputs, input);
    const state = newRunState(def, runId, inputs, this.clock.now());
    let lease: Lease | undefined;
    if (Object.keys(errors).length > 0) {
      const error = new InputValidationError(
        `Reactor '${def.name}': input validation failed: ${describeFieldErrors(errors)}`,
        errors,
        def.name,
      );
      state.status = 'failed';
      state.finishedAt = state.createdAt;
      state.failure = {
        message: error.message,
        code: error.code,
        reactorName: def.name,
        exceptionClass: 'InputValidationError',
        errorMessage: error.message,
        retryable: false,
        inputs: redactInputs(def, inputs),
        fieldErrors: errors,
        rollbackFailures: [],
      };
    } else {
      state.status = 'running';
      if (mode === 'handoff') {
        state.handoff = { mode: 'all' };
      } else {
        // The caller executes the run: take its lease in the same write that creates it.
        lease = { key: runLeaseKey(runId), token: randomUUID() };
      }
    }
    let created: boolean;
    try {
      created = await this.options.storage.save(state, {
        createOnly: true,
        lease,
        leaseTtlMs: lease ? this.leaseTtlMs : undefined,
        acquireLease: lease !== undefined,
      });
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error;
      throw new InvalidRunStateError(
        `A run with id '${runId}' is executing; run ids must be unique.`,
        runId,
        'running',
      );
    }
    if (!created) {
      throw new InvalidRunStateError(
        `A run with id '${runId}' already exists; run ids must be unique.`,
        runId,
        'exists',
      );
    }
    if (state.status === 'failed') {
      await this.middleware.emit({
        type: 'reactor.fail',
        runId,
        reactorName: def.name,
        at: this.clock.now(),
        failure: state.failure!,
      });
    } else if (mode === 'handoff') {
      await this.requireDispatcher(def.name).dispatch({ kind: 'resume', runId, reactorName: def.name });
    }
    return { state, lease };
  }

  /** Execute a run whose lease is held; the lease is released by the final save or here. */
  private async execute(
    def: ReactorDefinition,
    state: RunState,
    lease: Lease,
    mode: 'caller' | 'worker',
    resumed: boolean,
  ): Promise<RunOutcome> {
    const extender = this.startExtending(lease);
    let released = false;
    try {
      const env = this.env(mode, lease, { runId: state.runId, reactorName: def.name });
      const save = RunExecution.saver(env, state, { onRelease: () => (released = true) });
      const outcome = await new RunExecution(def, state, env, save).execute(resumed);
      if (outcome.status !== 'dispatched') this.notify(state.runId);
      return outcome.status === 'completed' ? this.outcome(state) : outcome;
    } catch (error) {
      if (error instanceof ContextTooLargeError) {
        // Even the failure cannot be stored at full size: keep a minimal failed record.
        await this.options.storage.markBroken(state.runId, def.name, toReason(error));
        this.notify(state.runId);
        return outcomeOf((await this.options.storage.load(state.runId)) ?? state);
      }
      if (error instanceof LeaseLostError) {
        this.logger.warn(error.message);
        released = true;
        // A worker that lost its lease stops quietly: the new holder carries the run on.
        if (mode === 'worker') return outcomeOf(state);
      }
      throw error;
    } finally {
      clearInterval(extender.timer);
      if (!released && !extender.lost) await this.options.locks.release(lease).catch(() => undefined);
    }
  }

  /**
   * Recover fan-out maps (reading the index of open maps, never the keyspace): re-dispatch
   * elements that were dispatched but have no record and no live lease, refill a dispatch window
   * whose continuation was lost, re-dispatch lost element rollback jobs, and resume an owner whose
   * completion signal was lost. Returns how many maps needed something.
   */
  recoverMaps(options: { limit?: number; graceMs?: number } = {}): Promise<number> {
    return this.mapJobs.recoverMaps(options);
  }

  /** Re-enqueue a job whose run is busy elsewhere, after the snooze delay plus jitter. */
  private async snooze(job: ReactorJob): Promise<void> {
    const base = this.options.snoozeDelayMs ?? 5_000;
    const jitter = Math.floor(Math.random() * (this.options.snoozeJitterMs ?? base));
    await this.requireDispatcher(job.reactorName).dispatch(
      { ...job, snoozes: (job.snoozes ?? 0) + 1 },
      { delayMs: base + jitter },
    );
  }

  private async dispatchAll(jobs: ReactorJob[], delayMs?: number): Promise<void> {
    const dispatcher = this.requireDispatcher(jobs[0]?.reactorName ?? '(map)');
    if (dispatcher.dispatchMany) await dispatcher.dispatchMany(jobs, { delayMs });
    else for (const job of jobs) await dispatcher.dispatch(job, { delayMs });
  }

  private startExtending(lease: Lease): { timer: NodeJS.Timeout; lost: boolean } {
    const handle = {
      lost: false,
      timer: setInterval(
        () => {
          this.options.locks.extend(lease, this.leaseTtlMs).then(
            (ok) => {
              if (!ok) handle.lost = true;
            },
            (error: unknown) => this.logger.warn(`Could not extend lease ${lease.key}: ${(error as Error)?.message}`),
          );
        },
        Math.max(10, Math.floor(this.leaseTtlMs / 3)),
      ),
    };
    handle.timer.unref();
    return handle;
  }

  private env(mode: 'caller' | 'worker', lease: Lease, owner?: { runId: string; reactorName: string }): ExecutionEnv {
    const dispatcher = this.options.dispatcher;
    return {
      owner,
      maps: this.options.maps,
      dispatch: dispatcher ? (jobs, delayMs) => this.dispatchAll(jobs, delayMs) : undefined,
      storage: this.options.storage,
      clock: this.clock,
      middleware: this.middleware,
      resolver: this.resolver,
      definition: (name) => this.definition(name),
      mode,
      lease,
      leaseTtlMs: this.leaseTtlMs,
      checkpointMinIntervalMs: this.options.checkpointMinIntervalMs,
      enqueueResume: dispatcher
        ? (runId, reactorName, delayMs) => dispatcher.dispatch({ kind: 'resume', runId, reactorName }, { delayMs })
        : undefined,
    };
  }

  private resolveTarget(target: ReactorDefinition | string): ReactorDefinition {
    if (typeof target === 'string') return this.definition(target);
    this.register(target);
    return target;
  }

  private requireDispatcher(reactorName: string): JobDispatcher {
    if (!this.options.dispatcher) {
      throw new ReactorError(
        'INTERNAL',
        `Reactor '${reactorName}' needs a job dispatcher for background work, and none is configured.`,
      );
    }
    return this.options.dispatcher;
  }

  private async view(state: RunState): Promise<RunView> {
    const def = this.definitions.get(state.reactorName);
    const inputs = def
      ? redactInputs(def, state.inputs)
      : Object.fromEntries(Object.keys(state.inputs).map((k) => [k, REDACTED]));
    const children: Record<string, RunView> = {};
    for (const [k, child] of Object.entries(state.children)) children[k] = await this.view(child);
    const maps: Record<string, MapProgress> = {};
    for (const [step, record] of Object.entries(state.maps ?? {})) {
      if (record.mode === 'fanOut' && this.options.maps) {
        const progress = await this.options.maps.progress(record.mapId).catch(() => undefined);
        if (progress) maps[step] = progress;
      } else {
        const records = (state.results[step] as { $mapRecords?: ElementRecord[] } | undefined)?.$mapRecords;
        if (records) maps[step] = inlineProgress(records);
      }
    }
    return {
      runId: state.runId,
      reactorName: state.reactorName,
      status: state.status,
      inputs,
      results: state.results,
      completed: state.completed,
      attempts: state.attempts,
      trace: state.trace,
      value: this.hydrate(state.value),
      failure: state.failure,
      halt: state.halt,
      cancellation: state.cancellation,
      children,
      maps,
      createdAt: state.createdAt,
      updatedAt: state.updatedAt,
      finishedAt: state.finishedAt,
      outcome: this.outcome(state),
    };
  }

  /** The caller-facing outcome, with a map value turned into its results object. */
  private outcome<O = unknown>(state: RunState): RunOutcome<O> {
    const outcome = outcomeOf<O>(state);
    if (outcome.status === 'completed') outcome.value = this.hydrate(outcome.value) as O;
    return outcome;
  }

  private hydrate(value: unknown): unknown {
    return hydrateMapValue(value, this.options.maps);
  }

  private notify(runId: string): void {
    const set = this.waiters.get(runId);
    if (!set) return;
    this.waiters.delete(runId);
    for (const wake of set) wake();
  }

  private sleepOrWake(runId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(runId);
      if (!set) this.waiters.set(runId, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        set!.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }
}

function toReason(error: unknown): { code: string; message: string; exceptionClass: string } {
  const exceptionClass = (error as Error)?.constructor?.name ?? 'Error';
  if (error instanceof ReactorError) return { code: error.code, message: error.message, exceptionClass };
  return { code: 'INTERNAL', message: (error as Error)?.message ?? String(error), exceptionClass };
}
