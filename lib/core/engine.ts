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
import { redactInputs, REDACTED } from './executor/redaction';
import { isTerminal, type RunState, type RunStatus, type TraceEntry } from './executor/run-state';
import type { ReactorMiddleware } from './middleware/events';
import { MiddlewareRunner } from './middleware/middleware-runner';
import { systemClock, type Clock } from './ports/clock.port';
import type { JobDispatcher, ReactorJob } from './ports/job-dispatcher.port';
import type { Lease, LockManager } from './ports/lock-manager.port';
import type { ClaimResult, ReactorStorage } from './ports/reactor-storage.port';
import type { ElementRecord, MapMeta, MapProgress, MapStore } from './ports/map-store.port';
import { elementLeaseKey, elementRunId } from './map/map-keys';
import { hydrateMapValue, recordOf, rollbackStateOf } from './map/map-runner';
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

function inlineProgress(records: ElementRecord[]): MapProgress {
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

const RUN_LEASE_PREFIX = 'run:';
/** How many times an element rollback waits for a still-running duplicate of the element. */
const ELEMENT_ROLLBACK_SNOOZES = 20;

/** The lease key of a run (shared by executions, undo and the sweeper). */
export function runLeaseKey(runId: string): string {
  return RUN_LEASE_PREFIX + runId;
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
  private readonly mapMetas = new Map<string, MapMeta>();

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
    if (job.kind === 'map-element') return this.handleElement(job);
    if (job.kind === 'map-rollback') return this.handleElementRollback(job);
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
    for (const runId of await this.options.storage.listActive(limit)) {
      try {
        if (await this.options.locks.isHeld(runLeaseKey(runId))) continue;
        const state = await this.options.storage.load(runId);
        if (!state || !['running', 'rolling_back', 'pending'].includes(state.status)) continue;
        if (now - state.updatedAt < graceMs) continue;
        if (state.retryAt && Math.max(...Object.values(state.retryAt)) > now) continue;
        if (await this.waitingOnMap(state)) continue; // the map's last element (or recoverMaps) resumes it
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
        lease = (await this.options.locks.acquire(runLeaseKey(runId), this.leaseTtlMs)) ?? undefined;
        if (!lease) {
          throw new InvalidRunStateError(
            `A run with id '${runId}' is executing; run ids must be unique.`,
            runId,
            'running',
          );
        }
      }
    }
    const created = await this.options.storage.save(state, {
      createOnly: true,
      lease,
      leaseTtlMs: lease ? this.leaseTtlMs : undefined,
    });
    if (!created) {
      if (lease) await this.options.locks.release(lease).catch(() => undefined);
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

  /** Re-enqueue a job whose run is busy elsewhere, after the snooze delay plus jitter. */
  private async snooze(job: ReactorJob): Promise<void> {
    const base = this.options.snoozeDelayMs ?? 5_000;
    const jitter = Math.floor(Math.random() * (this.options.snoozeJitterMs ?? base));
    await this.requireDispatcher(job.reactorName).dispatch(
      { ...job, snoozes: (job.snoozes ?? 0) + 1 },
      { delayMs: base + jitter },
    );
  }

  /** Run one element of a fan-out map (a `map-element` job). */
  private async handleElement(job: ReactorJob): Promise<void> {
    const maps = this.requireMaps();
    const mapId = job.mapId!;
    const index = job.index!;
    const meta = await this.mapMeta(mapId);
    if (!meta) return; // expired or never created: nothing to do
    const def = this.definition(meta.elementReactor);
    const lease: Lease = { key: elementLeaseKey(mapId, index), token: randomUUID() };
    const claim = await maps.claimElement(mapId, index, lease, this.leaseTtlMs);
    if (!claim.acquired || claim.done) return; // a duplicate delivery: the live one settles it
    let record: ElementRecord | undefined;
    let kept: RunState | undefined;
    let state: RunState | undefined = claim.state;
    if (claim.skip) {
      record = { status: 'skipped' };
    } else if (!state) {
      const { inputs, errors } = await validateReactorInputs(def.inputs, claim.input);
      if (Object.keys(errors).length > 0) {
        const message = `Reactor '${meta.ownerReactor}' map '${meta.step}' element ${index}: input validation failed: ${describeFieldErrors(errors)}`;
        record = {
          status: 'failed',
          failure: {
            message,
            code: 'INPUT_VALIDATION',
            reactorName: def.name,
            exceptionClass: 'InputValidationError',
            errorMessage: message,
            retryable: false,
            inputs: redactInputs(def, inputs),
            fieldErrors: errors,
            rollbackFailures: [],
          },
        };
      } else {
        state = newRunState(def, elementRunId(mapId, index), inputs, this.clock.now());
        state.status = 'running';
      }
    }
    if (!record && state) {
      const due = state.retryAt ? Math.max(...Object.values(state.retryAt)) - this.clock.now() : 0;
      if (due > 0) {
        await this.options.locks.release(lease).catch(() => undefined);
        await this.requireDispatcher(def.name).dispatch(job, { delayMs: due });
        return;
      }
      const extender = this.startExtending(lease);
      try {
        const elementState = state;
        const env: ExecutionEnv = {
          ...this.env('worker', lease, { runId: meta.ownerRunId, reactorName: meta.ownerReactor }),
          inElement: true,
          enqueueResume: (_runId, _reactorName, delayMs) => this.requireDispatcher(def.name).dispatch(job, { delayMs }),
        };
        // Checkpoints of an element go to the map's element state; its final record is written by settle.
        const save = async (final: boolean) => {
          if (isTerminal(elementState.status)) return;
          elementState.updatedAt = this.clock.now();
          await maps.putElementState(mapId, index, elementState, lease);
          if (final) await this.options.locks.release(lease).catch(() => undefined);
        };
        const execution = new RunExecution(def, elementState, env, save);
        const outcome = await execution.execute(claim.state !== undefined);
        if (outcome.status === 'dispatched') return; // a retry was scheduled
        record = recordOf(outcome);
        kept = record.status === 'completed' ? rollbackStateOf(elementState, execution) : undefined;
      } finally {
        clearInterval(extender.timer);
      }
    }
    const settled = await maps.settleElement(mapId, index, record!, kept, lease);
    await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, mapId, settled.next, 'map-element');
    if (settled.signalOwner)
      await this.requireDispatcher(meta.ownerReactor).dispatch({
        kind: 'resume',
        runId: meta.ownerRunId,
        reactorName: meta.ownerReactor,
      });
  }

  /** Undo one completed element of a fan-out map that is rolling back (a `map-rollback` job). */
  private async handleElementRollback(job: ReactorJob): Promise<void> {
    const maps = this.requireMaps();
    const mapId = job.mapId!;
    const index = job.index!;
    const meta = await this.mapMeta(mapId);
    if (!meta) return;
    const tag = (failures: RollbackFailure[]) =>
      failures.map((f) => ({ ...f, mapStep: meta.step, elementIndex: index }));
    let failures: RollbackFailure[];
    const lease = await this.options.locks.acquire(elementLeaseKey(mapId, index), this.leaseTtlMs);
    if (!lease) {
      // A duplicate of the element is still running: wait for it, a bounded number of times.
      if ((job.snoozes ?? 0) < ELEMENT_ROLLBACK_SNOOZES) {
        await this.snooze(job);
        return;
      }
      failures = tag([
        {
          step: meta.step,
          kind: 'undo',
          reason: 'elementInFlight',
          message: `element ${index} was still running when the map rolled back`,
          reactorName: meta.ownerReactor,
        },
      ]);
    } else {
      const state = await maps.elementState(mapId, index);
      if (!state) {
        failures = tag([
          {
            step: meta.step,
            kind: 'undo',
            reason: 'contextUnavailable',
            message: `the state of element ${index} is no longer stored (contextTtl)`,
            reactorName: meta.ownerReactor,
          },
        ]);
      } else {
        const def = this.definition(meta.elementReactor);
        const env: ExecutionEnv = {
          ...this.env('worker', lease, { runId: meta.ownerRunId, reactorName: meta.ownerReactor }),
          inElement: true,
        };
        const save = async () => maps.putElementState(mapId, index, state, lease);
        failures = tag(await new RunExecution(def, state, env, save, false).undoAll());
      }
    }
    const settled = await maps.settleRollback(mapId, index, failures, lease ?? undefined);
    await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, mapId, settled.next, 'map-rollback');
    if (settled.signalOwner)
      await this.requireDispatcher(meta.ownerReactor).dispatch({
        kind: 'resume',
        runId: meta.ownerRunId,
        reactorName: meta.ownerReactor,
      });
  }

  private async dispatchMapJobs(
    ownerRunId: string,
    ownerReactor: string,
    mapId: string,
    indices: number[],
    kind: 'map-element' | 'map-rollback',
  ): Promise<void> {
    if (indices.length === 0) return;
    await this.dispatchAll(
      indices.map((index) => ({ kind, runId: ownerRunId, reactorName: ownerReactor, mapId, index })),
    );
  }

  private async dispatchAll(jobs: ReactorJob[], delayMs?: number): Promise<void> {
    const dispatcher = this.requireDispatcher(jobs[0]?.reactorName ?? '(map)');
    if (dispatcher.dispatchMany) await dispatcher.dispatchMany(jobs, { delayMs });
    else for (const job of jobs) await dispatcher.dispatch(job, { delayMs });
  }

  /**
   * Recover fan-out maps (reading the index of open maps, never the keyspace): re-dispatch
   * elements that were dispatched but have no record and no live lease, refill a dispatch window
   * whose continuation was lost, re-dispatch lost element rollback jobs, and resume an owner whose
   * completion signal was lost. Returns how many maps needed something.
   */
  async recoverMaps(options: { limit?: number; graceMs?: number } = {}): Promise<number> {
    const maps = this.options.maps;
    if (!maps || !this.options.dispatcher) return 0;
    const graceMs = options.graceMs ?? this.leaseTtlMs;
    let touched = 0;
    for (const mapId of await maps.listOpen(options.limit ?? 1000)) {
      try {
        const meta = await maps.meta(mapId);
        if (!meta) continue;
        const progress = await maps.progress(mapId);
        const rollback = await maps.rollbackProgress(mapId);
        let acted = false;
        if (rollback && rollback.reported < rollback.total) {
          const lost = await maps.stalledRollback(mapId, meta.batchSize);
          await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, mapId, lost, 'map-rollback');
          acted = lost.length > 0;
        } else if (!progress.done) {
          const lost = await maps.stalled(mapId, meta.batchSize);
          const inFlight = progress.dispatched - progress.settled;
          // The window lost its continuation (a dispatcher died after settling): top it up.
          const refill = inFlight < meta.batchSize ? await maps.reserve(mapId, meta.batchSize - inFlight) : [];
          await this.dispatchMapJobs(meta.ownerRunId, meta.ownerReactor, mapId, [...lost, ...refill], 'map-element');
          acted = lost.length + refill.length > 0;
        }
        if (!acted && (progress.done || (rollback && rollback.reported >= rollback.total))) {
          // Done, but the owner has not adopted it: its signal (or its resume job) was lost.
          const owner = await this.options.storage.load(meta.ownerRunId);
          const idle =
            owner &&
            ['running', 'rolling_back'].includes(owner.status) &&
            this.clock.now() - owner.updatedAt >= graceMs;
          if (idle && !(await this.options.locks.isHeld(runLeaseKey(meta.ownerRunId)))) {
            await this.requireDispatcher(meta.ownerReactor).dispatch({
              kind: 'resume',
              runId: meta.ownerRunId,
              reactorName: meta.ownerReactor,
            });
            acted = true;
          }
        }
        if (acted) touched++;
      } catch (error) {
        this.logger.warn(`Map sweeper skipped map '${mapId}': ${(error as Error)?.message ?? String(error)}`);
      }
    }
    return touched;
  }

  /**
   * Whether the run is parked on a fan-out map (its elements or its element rollbacks) that is
   * still stored: then the map, not the run, needs watching.
   */
  private async waitingOnMap(state: RunState): Promise<boolean> {
    if (state.handoff?.mode !== 'map' || !this.options.maps) return false;
    const mapIds = Object.values(state.maps ?? {}).map((m) => m.mapId);
    for (const child of Object.values(state.children))
      mapIds.push(...Object.values(child.maps ?? {}).map((m) => m.mapId));
    for (const mapId of mapIds) if (await this.mapMeta(mapId)) return true;
    return false;
  }

  /** A map's metadata; it never changes once written, so each process reads it once. */
  private async mapMeta(mapId: string): Promise<MapMeta | undefined> {
    const cached = this.mapMetas.get(mapId);
    if (cached) return cached;
    const meta = await this.requireMaps().meta(mapId);
    if (!meta) return undefined;
    if (this.mapMetas.size >= 1000) this.mapMetas.delete(this.mapMetas.keys().next().value as string);
    this.mapMetas.set(mapId, meta);
    return meta;
  }

  private requireMaps(): MapStore {
    if (!this.options.maps)
      throw new ReactorError('INTERNAL', 'Fan-out maps need a map store, and none is configured.');
    return this.options.maps;
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
