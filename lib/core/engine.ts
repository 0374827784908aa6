import { randomUUID } from 'node:crypto';
import type { ReactorDefinition } from './definition/definition';
import { DefinitionError } from './errors/definition.error';
import { InputValidationError } from './errors/input-validation.error';
import { ReactorError } from './errors/reactor.error';
import {
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
import type { ReactorStorage } from './ports/reactor-storage.port';
import { ConstructingStepResolver, type StepResolver } from './ports/step-resolver.port';
import type { DispatchedOutcome, RollbackFailure, RunFailure, RunOutcome } from './results/run-outcome';
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
  /** The outcome a caller would see. */
  outcome: RunOutcome;
}

const RUN_LEASE_PREFIX = 'run:';

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
  }

  /**
   * Check links between definitions: every composed child is registered and no reactor composes
   * itself through a chain. Called at Nest boot after discovery.
   */
  validate(): void {
    for (const def of this.definitions.values()) {
      for (const step of def.steps) {
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
    const prepared = await this.prepare(def, input, options);
    if (prepared.status === 'failed') return outcomeOf<O>(prepared);
    if (def.background && 'all' in def.background) return this.handOff(prepared) as Promise<RunOutcome<O>>;
    return (await this.executeWithLease(def, prepared.runId, 'caller', false)) as RunOutcome<O>;
  }

  /** Start a reactor in the background regardless of its options; resolves once the run is stored. */
  async start<I, O>(
    target: ReactorDefinition<I, O> | string,
    input: I,
    options: RunOptions = {},
  ): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    const prepared = await this.prepare(def, input, options);
    if (prepared.status === 'failed') return outcomeOf<O>(prepared);
    return this.handOff(prepared) as Promise<RunOutcome<O>>;
  }

  /** The run with this id as shown to people, or undefined when there is none. */
  async get(runId: string): Promise<RunView | undefined> {
    const state = await this.options.storage.load(runId);
    return state ? this.view(state) : undefined;
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
      if (isTerminal(state.status) || state.status === 'paused') return outcomeOf<O>(state);
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
    const lease = await this.options.locks.acquire(runLeaseKey(runId), this.leaseTtlMs);
    if (!lease) {
      throw new InvalidRunStateError(
        `Run '${runId}' is executing in some process; undo it after it finishes.`,
        runId,
        'running',
      );
    }
    try {
      const state = await this.options.storage.load(runId);
      if (!state) throw new RunNotFoundError(runId);
      if (!['completed', 'halted', 'failed', 'paused'].includes(state.status)) {
        throw new InvalidRunStateError(
          `Run '${runId}' is ${state.status}; only completed, halted, failed or paused runs can be undone.`,
          runId,
          state.status,
        );
      }
      const def = this.definition(state.reactorName);
      const env = this.env('caller', lease);
      const save = RunExecution.saver(env, state, { reopen: true });
      const execution = new RunExecution(def, state, env, save);
      state.status = 'rolling_back';
      await save(false);
      const failures = await execution.undoAll();
      state.status = 'cancelled';
      state.cancellation = { reason: 'undo', rollbackFailures: failures };
      state.finishedAt = this.clock.now();
      await save(true);
      this.notify(runId);
      return outcomeOf(state);
    } finally {
      await this.options.locks.release(lease).catch(() => undefined);
    }
  }

  /**
   * Worker entry point: deliver one identity-only job. A run executing elsewhere is snoozed; a
   * missing run is a no-op; a record that cannot be used marks the run failed once and returns
   * normally, so the job is not retried.
   */
  async handleJob(job: ReactorJob): Promise<void> {
    if (job.kind !== 'resume')
      throw new ReactorError('INTERNAL', `Job kind '${job.kind}' is not handled by this engine yet.`);
    let def: ReactorDefinition;
    try {
      def = this.definition(job.reactorName);
    } catch (error) {
      await this.options.storage.markBroken(job.runId, job.reactorName, toReason(error));
      this.notify(job.runId);
      return;
    }
    await this.executeWithLease(def, job.runId, 'worker', true, job);
  }

  /** Validate inputs and store the new run (failed, when inputs are invalid). */
  private async prepare<I>(def: ReactorDefinition, input: I, options: RunOptions): Promise<RunState> {
    const runId = options.runId ?? (this.options.newRunId ?? randomUUID)();
    const { inputs, errors } = await validateReactorInputs(def.inputs, input);
    const state = newRunState(def, runId, inputs, this.clock.now());
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
    }
    const created = await this.options.storage.save(state, { createOnly: true });
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
    }
    return state;
  }

  private async handOff(state: RunState): Promise<DispatchedOutcome> {
    const dispatcher = this.requireDispatcher(state.reactorName);
    state.status = 'running';
    state.handoff = { mode: 'all' };
    state.updatedAt = this.clock.now();
    await this.options.storage.save(state);
    await dispatcher.dispatch({ kind: 'resume', runId: state.runId, reactorName: state.reactorName });
    return outcomeOf(state) as DispatchedOutcome;
  }

  /**
   * Take the run's lease, load, execute, release. In a worker, a held lease snoozes the job and a
   * missing or terminal run is a no-op.
   */
  private async executeWithLease(
    def: ReactorDefinition,
    runId: string,
    mode: 'caller' | 'worker',
    resumed: boolean,
    job?: ReactorJob,
  ): Promise<RunOutcome> {
    const lease = await this.options.locks.acquire(runLeaseKey(runId), this.leaseTtlMs);
    if (!lease) {
      if (mode === 'worker' && job) {
        await this.requireDispatcher(def.name).dispatch(
          { ...job, snoozes: (job.snoozes ?? 0) + 1 },
          { delayMs: this.options.snoozeDelayMs ?? 5_000 },
        );
        return { status: 'dispatched', runId, reactorName: def.name, results: {}, trace: [], attempts: {} };
      }
      throw new InvalidRunStateError(`Run '${runId}' is already executing elsewhere.`, runId, 'running');
    }
    const extender = this.startExtending(lease);
    try {
      let state: RunState | undefined;
      try {
        state = await this.options.storage.load(runId);
      } catch (error) {
        if (error instanceof CorruptRecordError) {
          await this.options.storage.markBroken(runId, def.name, toReason(error));
          this.notify(runId);
          return { status: 'dispatched', runId, reactorName: def.name, results: {}, trace: [], attempts: {} };
        }
        throw error;
      }
      if (!state) return { status: 'dispatched', runId, reactorName: def.name, results: {}, trace: [], attempts: {} };
      if (isTerminal(state.status) || state.status === 'paused') return outcomeOf(state);
      if (state.definitionHash !== def.hash) {
        await this.options.storage.markBroken(runId, def.name, toReason(new DefinitionChangedError(runId, def.name)));
        this.notify(runId);
        return outcomeOf((await this.options.storage.load(runId)) ?? state);
      }
      if (mode === 'worker' && state.retryAt) {
        const due = Math.max(...Object.values(state.retryAt));
        const early = due - this.clock.now();
        if (early > 0) {
          await this.requireDispatcher(def.name).dispatch(
            { kind: 'resume', runId, reactorName: def.name },
            { delayMs: early },
          );
          return outcomeOf(state);
        }
      }
      const env = this.env(mode, lease);
      const outcome = await new RunExecution(def, state, env, RunExecution.saver(env, state)).execute(resumed);
      if (outcome.status !== 'dispatched') this.notify(runId);
      return outcome;
    } catch (error) {
      if (error instanceof LeaseLostError) {
        this.logger.warn(error.message);
        // A worker that lost its lease stops quietly: the new holder carries the run on.
        if (mode === 'worker')
          return { status: 'dispatched', runId, reactorName: def.name, results: {}, trace: [], attempts: {} };
      }
      throw error;
    } finally {
      clearInterval(extender.timer);
      if (!extender.lost) await this.options.locks.release(lease).catch(() => undefined);
    }
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

  private env(mode: 'caller' | 'worker', lease: Lease): ExecutionEnv {
    const dispatcher = this.options.dispatcher;
    return {
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

  private view(state: RunState): RunView {
    const def = this.definitions.get(state.reactorName);
    const inputs = def
      ? redactInputs(def, state.inputs)
      : Object.fromEntries(Object.keys(state.inputs).map((k) => [k, REDACTED]));
    return {
      runId: state.runId,
      reactorName: state.reactorName,
      status: state.status,
      inputs,
      results: state.results,
      completed: state.completed,
      attempts: state.attempts,
      trace: state.trace,
      value: state.value,
      failure: state.failure,
      halt: state.halt,
      cancellation: state.cancellation,
      children: Object.fromEntries(Object.entries(state.children).map(([k, child]) => [k, this.view(child)])),
      createdAt: state.createdAt,
      updatedAt: state.updatedAt,
      finishedAt: state.finishedAt,
      outcome: outcomeOf(state),
    };
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

function toReason(error: unknown): { code: string; message: string } {
  if (error instanceof ReactorError) return { code: error.code, message: error.message };
  return { code: 'INTERNAL', message: (error as Error)?.message ?? String(error) };
}
