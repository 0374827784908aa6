import type { ReactorDefinition } from '../definition/definition';
import { didYouMean } from '../errors/closest-names';
import { ConfigurationError } from '../errors/configuration.error';
import { InternalError } from '../errors/internal.error';
import { clientCallError } from '../errors/storage-unavailable.error';
import type { ReactorMiddleware } from '../middleware/events';
import { MiddlewareRunner } from '../middleware/middleware-runner';
import type { BrokenReason, ReactorStorage } from '../ports/reactor-storage.port';
import { systemClock } from '../ports/clock.port';
import type { ReactorJob } from '../ports/job-dispatcher.port';
import { ConstructingStepResolver } from '../ports/step-resolver.port';
import type { RunState, RunStatus } from '../model/run-state';
import type { RunOutcome } from '../results/run-outcome';
import { Dispatch } from './dispatch';
import { ENGINE_DEFAULTS, type EngineParts, type ReactorEngineOptions, type RunOptions } from './engine-options';
import { Executions, type DrainOptions, type DrainResult } from './executions';
import { LeaseKeeper } from './lease-keeper';
import { MapJobs } from './map-jobs';
import { Recovery, type RecoveryOptions } from './recovery';
import { Resumes, type ContinueOptions, type ContinueResult } from './resumes';
import { Events, type EmitOptions, type EmitResult } from './events';
import { Coordination } from './coordination';
import { FlowControl, type FlowQueues } from './flow';
import { failInputs } from './run-starter';
import { runFailure } from '../model/failure';
import { toRateWindows, type RateLimits } from '../definition/coordination-spec';
import type { RateWindow } from '../ports/coordination-store.port';
import { DefinitionRegistry } from './registry';
import {
  RunControl,
  type RetryManyQuery,
  type RetryManyResult,
  type RunRetryOptions,
  type UndoOptions,
} from './run-control';
import { RunJobs } from './run-jobs';
import { listRuns, type ListQuery, type RunList } from './run-list';
import { RunStarter } from './run-starter';
import { RunViewer, type RunView } from './run-view';
import { checkRunId, checkStoredRunId } from './run-id';
import { Waiters } from './waiters';
import type { RunEventBus, RunWatchEvent, RunWatchOptions } from '../ports/run-events.port';
import { tracingOf } from '../tracing/tracing';

/**
 * The Nest-free engine: a registry of reactor definitions and the operations on runs. The Nest
 * `ReactorClient` is a thin, typed wrapper around it. A facade: each operation belongs to one
 * small collaborator (registry, starter, run jobs, map jobs, control, recovery, viewer, waiters)
 * that receives only the parts it needs.
 */
export class ReactorEngine {
  private readonly registry = new DefinitionRegistry();
  private readonly starter: RunStarter;
  private readonly runJobs: RunJobs;
  private readonly mapJobs: MapJobs;
  private readonly control: RunControl;
  private readonly recovery: Recovery;
  private readonly viewer: RunViewer;
  private readonly waiters: Waiters;
  private readonly storage: ReactorStorage;
  private readonly resumes: Resumes;
  private readonly events: Events;
  private readonly coordination: Coordination;
  private readonly flow: FlowControl;
  private readonly parts: EngineParts;
  private readonly executions: Executions;
  /** Enqueues jobs, and traces the handling of one (its CONSUMER span). */
  private readonly dispatch: Dispatch;
  /** Whether storage (and the map store, if any) can store inputs encrypted. */
  private readonly encryptsInputs: boolean;

  constructor(options: ReactorEngineOptions) {
    const logger = options.logger ?? {
      log: () => undefined,
      warn: (m: string) => console.warn(m),
      error: (m: string) => console.error(m),
    };
    const parts: EngineParts = {
      storage: options.storage,
      locks: options.locks,
      maps: options.maps,
      interrupts: options.interrupts,
      interruptRetentionMs: options.interruptRetentionMs ?? ENGINE_DEFAULTS.interruptRetentionMs,
      earlyResumeTtlMs: options.earlyResumeTtlMs ?? ENGINE_DEFAULTS.earlyResumeTtlMs,
      asyncWaitTimeoutMs: options.asyncWaitTimeoutMs ?? ENGINE_DEFAULTS.asyncWaitTimeoutMs,
      asyncParkTimeoutMs: options.asyncParkTimeoutMs ?? ENGINE_DEFAULTS.asyncParkTimeoutMs,
      coordination: options.coordination,
      flow: options.flow,
      lockSnoozeMaxAttempts: options.lockSnoozeMaxAttempts ?? ENGINE_DEFAULTS.lockSnoozeMaxAttempts,
      clock: options.clock ?? systemClock,
      resolver: options.resolver ?? new ConstructingStepResolver(),
      middleware: new MiddlewareRunner(options.middleware ?? [], logger),
      logger,
      leaseTtlMs: options.leaseTtlMs ?? ENGINE_DEFAULTS.leaseTtlMs,
      checkpointMinIntervalMs: options.checkpointMinIntervalMs,
      maxContextBytes: options.maxContextBytes,
      idempotencyWindowMs: options.idempotencyWindowMs ?? ENGINE_DEFAULTS.idempotencyWindowMs,
      tracing: tracingOf(options.tracing ?? true),
    };
    this.parts = parts;
    const snoozeDelayMs = options.snoozeDelayMs ?? ENGINE_DEFAULTS.snoozeDelayMs;
    const dispatch = new Dispatch(
      options.dispatcher,
      snoozeDelayMs,
      options.snoozeJitterMs ?? snoozeDelayMs,
      parts.tracing,
    );
    this.dispatch = dispatch;
    const leases = new LeaseKeeper(parts.locks, parts.leaseTtlMs, logger, parts.storage);
    this.storage = parts.storage;
    this.encryptsInputs =
      parts.storage.encryptsInputs === true && (parts.maps === undefined || parts.maps.encryptsInputs === true);
    this.waiters = new Waiters(parts.storage, parts.clock);
    this.viewer = new RunViewer(this.registry, parts.maps, parts.storage);
    const executions = new Executions(parts, this.registry, dispatch, leases, this.waiters, this.viewer);
    this.executions = executions;
    this.coordination = new Coordination(
      options.coordination,
      rateLimitWindows(options.rateLimits),
      logger,
      parts.clock,
    );
    executions.coordination = this.coordination;
    this.resumes = new Resumes(parts, this.registry, leases, executions, dispatch);
    executions.afterPause = (state) => this.resumes.afterPause(state);
    this.waiters.pendingResume = (state) => this.resumes.due(state);
    this.flow = new FlowControl(parts, this.registry, dispatch);
    executions.afterEnd = (state) => this.flow.release(state);
    this.flow.failRun = async (state, lease, code, message, fieldErrors) => {
      const def = this.registry.forRun(state) ?? this.registry.get(state.reactorName);
      state.status = 'running';
      if (code === 'INPUT_VALIDATION' && fieldErrors) {
        failInputs(def, state, fieldErrors);
      } else {
        state.status = 'failed';
        state.finishedAt = parts.clock.now();
        state.failure = runFailure({
          message,
          code,
          reactorName: def.name,
          exceptionClass: 'Error',
          errorMessage: message,
          inputs: {},
        });
      }
      delete state.flow;
      state.updatedAt = state.finishedAt ?? parts.clock.now();
      await parts.storage.save(state, { lease, leaseTtlMs: parts.leaseTtlMs, releaseLease: true });
      this.waiters.notify(state.runId);
    };
    this.starter = new RunStarter(
      parts,
      this.registry,
      dispatch,
      leases,
      executions,
      this.waiters,
      options.newRunId,
      this.flow,
    );
    this.events = new Events(parts, this.registry, this.starter, this.resumes);
    this.runJobs = new RunJobs(
      parts.storage,
      parts.clock,
      parts.leaseTtlMs,
      this.registry,
      dispatch,
      leases,
      executions,
      this.waiters,
      logger,
      {
        retries: options.unknownReactorRetries ?? ENGINE_DEFAULTS.unknownReactorDeferrals,
        delayMs: options.unknownReactorDelayMs ?? ENGINE_DEFAULTS.unknownReactorDelayMs,
      },
      this.resumes,
      {
        maxAttempts: options.lockSnoozeMaxAttempts ?? ENGINE_DEFAULTS.lockSnoozeMaxAttempts,
        fail: (runId, reason) => this.control.failRun(runId, reason),
      },
      this.flow,
    );
    this.mapJobs = new MapJobs(parts, this.registry, dispatch, leases, executions);
    this.control = new RunControl(parts, this.registry, leases, executions, this.waiters, this.starter, dispatch);
    this.recovery = new Recovery(parts, dispatch, this.mapJobs, this.resumes);
  }

  /** Deliver lifecycle events to `middleware` too, after the configured middleware (call it at boot). */
  addMiddleware(middleware: ReactorMiddleware): void {
    this.parts.middleware.add(middleware);
  }

  /**
   * Live runs: signal runs settling on `bus` (so `wait` in any process wakes at once) and let
   * {@link watch} replay and follow the runs' logs on it; with `logSettles`, log each pause and end
   * there too (the lifecycle events are logged by a middleware). Call it at boot (the Nest module
   * does, with its runtime's bus and `liveEvents`).
   */
  useRunEvents(bus: RunEventBus, options: { logSettles?: boolean } = {}): void {
    this.waiters.bus = bus;
    this.waiters.logSettles = options.logSettles === true;
  }

  /**
   * The events of run `runId` as they happen (an async iterable), replayed first from its log
   * after `options.after`; ends after `run.finished`, on `options.signal`, or at `break`.
   */
  watch(runId: string, options: RunWatchOptions = {}): AsyncIterableIterator<RunWatchEvent> {
    checkStoredRunId(runId);
    return this.waiters.watch(runId, options);
  }

  /** Register a definition. Registering the same name with another shape is an error. */
  register(def: ReactorDefinition): void {
    this.checkFlow(def);
    this.checkEncryption(def);
    this.checkInterrupts(def);
    this.checkCoordination(def);
    this.registry.register(def);
  }

  /**
   * Check links between definitions: every composed child and mapped reactor is registered and no
   * reactor composes itself through a chain. Called at Nest boot after discovery.
   */
  validate(): void {
    this.registry.validate();
    for (const def of this.registry.all()) this.checkEncryption(def);
  }

  /** A reactor with flow control needs a flow store, and a dispatcher to start what it holds back. */
  private checkFlow(def: ReactorDefinition): void {
    if (!def.flow) return;
    if (!this.parts.flow) {
      throw new ConfigurationError(
        `Reactor '${def.name}' declares concurrency, throttle, debounce or batch, but the engine has no flow store (its \`flow\` option).`,
        'flow',
      );
    }
    if (!this.dispatch.available) {
      throw new ConfigurationError(
        `Reactor '${def.name}' declares concurrency, throttle, debounce or batch, but the engine has no job dispatcher to start the runs it holds back.`,
        'flow',
      );
    }
  }

  /** A reactor that stores its inputs encrypted needs adapters that can. */
  private checkCoordination(def: ReactorDefinition): void {
    const step = def.steps.find((s) => s.coordination);
    if (step && !this.coordination.available) {
      throw new ConfigurationError(
        `Reactor '${def.name}' step '${step.name}' declares a lock or semaphore, but the engine has no coordination store (its \`coordination\` option).`,
        'coordination',
      );
    }
    if (!def.coordination) return;
    if (!this.coordination.available) {
      throw new ConfigurationError(
        `Reactor '${def.name}' declares a lock, semaphore, rate limit or period, but the engine has no coordination store (its \`coordination\` option).`,
        'coordination',
      );
    }
    const unknown = this.coordination.unknownRateLimit(def);
    if (unknown !== undefined) {
      throw new ConfigurationError(
        `Reactor '${def.name}' uses rate limit '${unknown}', which is not registered.` +
          `${didYouMean(unknown, this.coordination.rateLimitNames())} ` +
          `Register it: ReactorModule.forRoot({ rateLimits: { ${JSON.stringify(unknown)}: { second: 10 } } }).`,
        'rateLimits',
      );
    }
  }

  private checkInterrupts(def: ReactorDefinition): void {
    const store = this.parts.interrupts;
    const listed = def.steps.find(
      (s) =>
        s.handler.kind === 'interrupt' && s.handler.interrupt.event !== undefined && !s.handler.interrupt.correlationId,
    );
    if (store && listed && !(store.watchEvent && store.unwatchEvent && store.eventWatchers)) {
      throw new ConfigurationError(
        `Reactor '${def.name}' has interrupt '${listed.name}', answered by events without a correlation id, but the engine's interrupt store keeps no index of waiting runs (watchEvent, unwatchEvent, eventWatchers).`,
        'interrupts',
      );
    }
    if (store) return;
    const step = def.steps.find((s) => s.handler.kind === 'interrupt');
    if (!step) return;
    throw new ConfigurationError(
      `Reactor '${def.name}' has interrupt '${step.name}', but the engine has no interrupt store (its \`interrupts\` option).`,
      'interrupts',
    );
  }

  private checkEncryption(def: ReactorDefinition): void {
    if (!def.encryptInputs || this.encryptsInputs) return;
    throw new ConfigurationError(
      `Reactor '${def.name}' declares encryptInputs, but its storage has no input cipher. Configure one ` +
        '(ReactorModule.forRoot({ inputCipher: createAesGcmInputCipher(...) }), or the `inputCipher` option of ' +
        'the storage and map store adapters), or remove encryptInputs.',
      'inputCipher',
    );
  }

  /** The registered definition named `name`. */
  definition(name: string): ReactorDefinition {
    return this.registry.get(name);
  }

  /**
   * For tests: runs of `def.name` started by name, and children composed by that name, use `def`
   * until the returned function is called (the testing kit's `mockReactor`).
   */
  overrideDefinition(def: ReactorDefinition): () => void {
    return this.registry.override(def);
  }

  /** Names of every registered reactor. */
  reactorNames(): string[] {
    return this.registry.names();
  }

  /**
   * Run a reactor: validate inputs, then execute in this process until it completes, fails,
   * halts, or reaches a background hand-off (then the outcome is `dispatched`).
   */
  run<I, O>(target: ReactorDefinition<I, O> | string, input: I, options: RunOptions = {}): Promise<RunOutcome<O>> {
    return guarded('run', () => this.starter.run(target, input, options));
  }

  /** Start a reactor in the background regardless of its options; resolves once the run is stored. */
  start<I, O>(target: ReactorDefinition<I, O> | string, input: I, options: RunOptions = {}): Promise<RunOutcome<O>> {
    return guarded('start', () => this.starter.start(target, input, options));
  }

  /** The run with this id as shown to people, or undefined when there is none. */
  async get(runId: string): Promise<RunView | undefined> {
    checkStoredRunId(runId);
    return guarded('get', async () => {
      const state = await this.storage.load(runId);
      return state ? await this.viewer.view(state) : undefined;
    });
  }

  /**
   * The run as shown to people and as stored, from one read (for tools that show both, such as the
   * dashboard); undefined when there is none.
   */
  async inspect(runId: string): Promise<{ view: RunView; state: RunState } | undefined> {
    checkStoredRunId(runId);
    return guarded('get', async () => {
      const state = await this.storage.load(runId);
      return state ? { view: await this.viewer.view(state), state } : undefined;
    });
  }

  /**
   * Wait until the run is terminal (or paused), up to `timeoutMs` on the engine's clock; resolves
   * to its outcome. Woken at once by runs that finish in this process; otherwise polls every `pollMs`.
   */
  async wait<O = unknown>(
    runId: string,
    options: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<RunOutcome<O>> {
    checkStoredRunId(runId);
    return guarded('wait', async () => this.viewer.outcome<O>(await this.waiters.until(runId, options)));
  }

  /**
   * Undo a finished run: every completed step is undone, newest first (composed children replay
   * their own undos), then the run is `cancelled`. Refused while the run is executing or rolling
   * back. A fan-out map's elements are undone by jobs: `undo` waits for them (bounded; see
   * {@link UndoOptions}), so it resolves `cancelled` in every mode, unless `{ wait: false }`.
   */
  async undo(runId: string, options: UndoOptions = {}): Promise<RunOutcome> {
    checkRunId(runId);
    return guarded('undo', () => this.control.undo(runId, options));
  }

  /**
   * Cancel a run that has not finished: it stops at its next step boundary, its completed steps
   * are undone newest first, and it ends `cancelled` with `reason`. Refused for a finished run.
   * Returns the outcome as it is when this returns; a run executing elsewhere is cancelled by
   * its process (wait for it).
   */
  async cancel(runId: string, reason = 'cancelled'): Promise<RunOutcome> {
    checkStoredRunId(runId);
    return guarded('cancel', () => this.control.cancel(runId, reason));
  }

  /**
   * The runs of a reactor, newest first, from an index the runs' creation writes (no key scan):
   * `status` and `since` filter them, `limit` (default 50, at most 1000) bounds a page, and the
   * returned `cursor` continues the listing. Records that expired are left out.
   */
  async list(query: ListQuery): Promise<RunList> {
    return guarded('list', () => listRuns(this.storage, query, this.parts.interrupts));
  }

  /**
   * Retry a failed run. One that was rolled back starts again as a new run with the same inputs,
   * linked to it (`retriedFrom`, `retryCount`), handed to a worker. One that stopped without a
   * rollback (its job's retries ran out: `JOB_RETRIES_EXHAUSTED`) resumes from its failed step,
   * its completed steps kept. Refused for a run that is not failed. Idempotent per source run: a
   * second call returns the first retry's run (`replayed`), unless `{ new: true }`.
   */
  async retry(runId: string, options: RunRetryOptions = {}): Promise<RunOutcome> {
    checkRunId(runId);
    return guarded('retry', () => this.control.retry(runId, options));
  }

  /**
   * Retry the runs of a reactor that match `query` (default: `failed`, at most 100, newest first),
   * each as `retry` would (idempotent per source run); refusals are collected, not thrown. With
   * `dryRun`, lists the runs it would retry.
   */
  async retryMany(query: RetryManyQuery): Promise<RetryManyResult> {
    return guarded('retryMany', () => this.control.retryMany(query));
  }

  /**
   * Answer interrupt `step` (a path such as `child.approve` for one inside a composed child) of a
   * paused run with `payload`. Applied exactly once: of concurrent resumes one wins and the others
   * get `ALREADY_RESUMED`. An invalid payload is refused (`PAYLOAD_INVALID`) while attempts remain;
   * the last one fails the run with rollback. A run executing elsewhere gets it through a worker
   * (`deferred`); a run that has not reached the interrupt yet gets it on arrival (`queued`).
   */
  async continue(
    runId: string,
    step: string | readonly string[],
    payload: unknown,
    options: ContinueOptions = {},
  ): Promise<ContinueResult> {
    checkRunId(runId);
    return guarded('continue', async () =>
      this.waitedFor(await this.resumes.continue(runId, step, payload, options), options),
    );
  }

  /** With `{ wait: true }`: a resume not applied in the call carries the run's next outcome. */
  private async waitedFor(result: ContinueResult, options: ContinueOptions): Promise<ContinueResult> {
    if (!options.wait || result.accepted === 'applied' || result.runId === undefined) return result;
    const state = await this.waiters.until(result.runId, { timeoutMs: options.timeoutMs });
    return { ...result, outcome: this.viewer.outcome(state) };
  }

  /** {@link continue} the run of `reactorName` whose interrupt `step` has `correlationId`. */
  async continueByCorrelationId(
    reactorName: string,
    step: string | readonly string[],
    correlationId: string,
    payload: unknown,
    options: ContinueOptions = {},
  ): Promise<ContinueResult> {
    return guarded('continueByCorrelationId', async () =>
      this.waitedFor(
        await this.resumes.continueByCorrelationId(reactorName, step, correlationId, payload, options),
        options,
      ),
    );
  }

  /**
   * Emit event `name`: start every reactor declared `on: { event: name }` and answer every
   * interrupt declared `event: name` that waits for it (see {@link EmitResult}). With `id`, an
   * event emitted again starts and answers nothing twice.
   */
  async emit(name: string, payload: unknown, options: EmitOptions = {}): Promise<EmitResult> {
    return guarded('emit', () => this.events.emit(name, payload, options));
  }

  /**
   * Worker entry point: deliver one identity-only job. A run executing elsewhere is snoozed; a
   * missing run is a no-op; a record that cannot be used marks the run failed once and returns
   * normally, so the job is not retried.
   */
  async handleJob(job: ReactorJob): Promise<void> {
    // In a CONSUMER span, the child of the PRODUCER span that enqueued the job (the context it
    // carries): a background run is one trace with its caller.
    return this.dispatch.process(job, () => this.deliver(job));
  }

  private async deliver(job: ReactorJob): Promise<void> {
    switch (job.kind) {
      case 'resume':
        return this.runJobs.handle(job);
      case 'map-element':
        return this.mapJobs.handleElements(job);
      case 'map-rollback':
        return this.mapJobs.handleElementRollback(job);
      default:
        throw new InternalError(`Job kind '${(job as { kind: string }).kind}' is not handled by this engine.`);
    }
  }

  /**
   * Mark a run failed because its job could not be processed (infrastructure errors exhausted the
   * job's retries). Not rolled back: completed steps stay on the undo stack for `undo(runId)`.
   * Skipped when another process holds the run or it is already terminal. Never throws.
   */
  failRun(runId: string, reason: BrokenReason): Promise<void> {
    return this.control.failRun(runId, reason);
  }

  /**
   * Shutdown: wait up to `graceMs` for the runs executing in this process (inline calls, jobs, undos)
   * to end; then abort the `ctx.signal` of their steps in flight (`abortCause: 'shutdown'`) and wait
   * up to `graceMs` more. An execution told to stop starts no step, rolls nothing back and writes
   * nothing more; it releases its lease and leaves its run, as last stored, for recovery (the
   * sweeper resumes it in another process). A step that ignores its signal is not waited for past
   * the second wait (`left`). With `{ handOff: true }` (a durable queue, which outlives this
   * process), each execution stopped so is enqueued again as it gives its lease back, so another
   * worker carries it on at once instead of the sweeper after the lease TTL. The Nest module calls
   * this at shutdown with `shutdownGraceMs`, handing off on the Redis runtime.
   */
  drain(graceMs: number, options?: DrainOptions): Promise<DrainResult> {
    return this.executions.drain(graceMs, options);
  }

  /** How many runs execute in this process now (inline calls, jobs, undos and cancels carried out here). */
  get executing(): number {
    return this.executions.running;
  }

  /**
   * Find runs whose executor died and re-enqueue them by id: non-terminal runs (from the storage
   * index, never a keyspace scan) that nobody holds a lease on, not updated for `graceMs`, and
   * with no retry scheduled in the future. Returns how many were re-enqueued. Idempotent: a run
   * enqueued twice is executed once (the lease), so a mistaken re-enqueue costs one job.
   */
  async recoverStalled(options: RecoveryOptions = {}): Promise<number> {
    return (await this.recovery.stalledRuns(options)) + (await this.flow.sweep(options));
  }

  /**
   * The concurrency queues of reactor `reactorName` (its `concurrency` flow control): per key, the
   * runs holding a slot, how many wait, and the first `peek` waiting. `undefined` when it declares
   * none. At most `limit` keys, least recently active first.
   */
  async flowQueues(
    reactorName: string,
    options: { limit?: number; peek?: number } = {},
  ): Promise<FlowQueues | undefined> {
    return this.flow.queues(this.registry.get(reactorName), options.limit, options.peek);
  }

  /**
   * A pre-deploy check: the live runs (running, rolling back, waiting) that no definition
   * registered in this process can carry on, because their reactor, its version or its shape is
   * not here. Deploy a build that lists none of them (or keeps their versions registered beside the
   * new ones), or let them finish first. Reads up to `limit` runs of the index of live runs.
   */
  async runsOnOtherDefinitions(limit: number = ENGINE_DEFAULTS.sweepLimit): Promise<RunOnOtherDefinition[]> {
    return guarded('runsOnOtherDefinitions', async () => {
      const out: RunOnOtherDefinition[] = [];
      for (const runId of await this.storage.listActive(limit)) {
        const state = await this.storage.load(runId).catch(() => undefined);
        if (!state) continue;
        const def = this.registry.has(state.reactorName) ? this.registry.forRun(state) : undefined;
        if (def && def.hash === state.definitionHash) continue;
        out.push({
          runId,
          reactorName: state.reactorName,
          version: state.reactorVersion ?? '1',
          status: state.status,
          registeredVersions: this.registry.versionsOf(state.reactorName),
        });
      }
      return out;
    });
  }

  /**
   * Recover fan-out maps (reading the index of open maps, never the keyspace): re-dispatch
   * elements that were dispatched but have no record and no live lease, refill a dispatch window
   * whose continuation was lost, re-dispatch lost element rollback jobs, and resume an owner whose
   * completion signal was lost. Returns how many maps needed something.
   */
  recoverMaps(options: RecoveryOptions = {}): Promise<number> {
    return this.recovery.stalledMaps(options);
  }
}

/** A live run that no definition registered in this process can carry on. */
export interface RunOnOtherDefinition {
  runId: string;
  reactorName: string;
  /** The version the run started under. */
  version: string;
  status: RunStatus;
  /** The versions of the reactor registered in this process (none: the reactor is unknown here). */
  registeredVersions: string[];
}

/** Run a client operation; a storage failure is `STORAGE_UNAVAILABLE`, nothing else (see `clientCallError`). */
async function guarded<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw clientCallError(operation, error);
  }
}

/** Named rate limits as windows. @throws ConfigurationError for a bad one, naming it. */
function rateLimitWindows(limits: Readonly<Record<string, RateLimits>> | undefined): Record<string, RateWindow[]> {
  const out: Record<string, RateWindow[]> = {};
  for (const [name, spec] of Object.entries(limits ?? {})) {
    const windows = toRateWindows(spec);
    if (typeof windows === 'string') throw new ConfigurationError(`Rate limit '${name}': ${windows}.`, 'rateLimits');
    out[name] = windows;
  }
  return out;
}
