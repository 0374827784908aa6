import type { ReactorDefinition } from '../definition/definition';
import { ContextTooLargeError, LeaseLostError } from '../errors/run-state.error';
import type { ExecutionEnv } from '../executor/execution-env';
import { RunExecution } from '../executor/run-execution';
import { ExecutionAbort } from '../executor/execution-abort';
import { HeldMutexes } from '../executor/mutexes';
import type { StepAbortCause } from '../errors/step-aborted.error';
import type { RunFailure } from '../model/failure';
import { isTerminal, type RunState } from '../model/run-state';
import type { ReactorJob } from '../ports/job-dispatcher.port';
import type { Lease } from '../ports/lock-manager.port';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import type { Coordination, HaltBeforeStart, Holding } from './coordination';
import { resumeJobOf, type Dispatch } from './dispatch';
import type { EngineParts } from './engine-options';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';
import { toBrokenReason } from './broken-reason';
import type { RunViewer } from './run-view';
import type { Waiters } from './waiters';

/** The top-level run an execution belongs to. */
export interface RunOwner {
  runId: string;
  reactorName: string;
}

/** An execution in this process, as {@link Executions.track} registers it. */
export interface TrackedExecution {
  readonly runId: string;
  /** The execution's abort state (its steps' signals). */
  readonly abort: ExecutionAbort;
  /** Unregister it: the execution has ended. */
  untrack(): void;
}

/** Options of {@link Executions.drain}. */
export interface DrainOptions {
  /**
   * Enqueue each execution the drain stops again as it gives its lease back (a resume job for a
   * run, the element's job for a map element), so another worker carries it on at once. For a
   * durable runtime whose queue outlives this process (BullMQ); the Nest module passes it for the
   * Redis runtime. @default false (the sweeper recovers stopped runs after the lease TTL)
   */
  handOff?: boolean;
}

/** What {@link Executions.drain} did. */
export interface DrainResult {
  /** Executions still running when the grace passed, whose steps' signals were aborted. */
  aborted: number;
  /** Executions still running when `drain` returned (they ignored their signals). */
  left: number;
}

/** Executing runs in this process: the environment an execution gets, and the lease around it. */
export class Executions {
  /** Executions running in this process now, with their abort state and their end. */
  private readonly live = new Map<TrackedExecution, Promise<void>>();
  /** Set once a drain's grace has passed: executions that start after it are stopped at once. */
  private stopping = false;
  /** Whether {@link drain} was asked to hand off what it stops (`drain(graceMs, { handOff: true })`). */
  private handOffAtShutdown = false;
  /**
   * The executions the drain stopped (live when its grace passed): only these are handed off, so
   * a hand-off job delivered back to this process (an in-process dispatcher), stopped at once, is
   * never handed off again.
   */
  private readonly drained = new WeakSet<ExecutionAbort>();
  /** Called after a top-level run paused at an interrupt (its final save done, its lease released). */
  afterPause?: (state: RunState) => Promise<void>;

  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
    private readonly leases: LeaseKeeper,
    private readonly waiters: Waiters,
    private readonly view: RunViewer,
  ) {}

  /**
   * The environment of an execution holding `lease`, on behalf of `owner`; `held`: the locks and
   * slots it holds (its reactor's, when taken before).
   */
  env(mode: 'caller' | 'worker', lease: Lease, owner?: RunOwner, held = new HeldMutexes()): ExecutionEnv {
    const { parts, dispatch } = this;
    return {
      owner,
      held,
      maps: parts.maps,
      interrupts: parts.interrupts,
      interruptRetentionMs: parts.interruptRetentionMs,
      asyncWaitTimeoutMs: parts.asyncWaitTimeoutMs,
      coordination: parts.coordination,
      lockSnoozeMaxAttempts: parts.lockSnoozeMaxAttempts,
      coordinate: this.coordination
        ? (childDef, childState) =>
            this.coordination!.enter(childDef, childState, mode, owner?.runId ?? childState.runId, held)
        : undefined,
      asyncParkTimeoutMs: parts.asyncParkTimeoutMs,
      awaitRun: (runId, timeoutMs) =>
        this.waiters.until(runId, { timeoutMs, settled: (s) => isTerminal(s.status) }).catch(() => undefined),
      dispatch: dispatch.available ? (jobs, delayMs) => dispatch.many(jobs, delayMs) : undefined,
      storage: parts.storage,
      clock: parts.clock,
      middleware: parts.middleware,
      resolver: parts.resolver,
      definition: (name) => this.registry.get(name),
      mode,
      lease,
      leaseTtlMs: parts.leaseTtlMs,
      checkpointMinIntervalMs: parts.checkpointMinIntervalMs,
      tracing: parts.tracing,
      enqueueResume: dispatch.available
        ? (runId, reactorName, delayMs, unit) => dispatch.resume(runId, reactorName, delayMs, unit)
        : undefined,
    };
  }

  /** Called when a top-level run ended (its flow control gives its concurrency slot back). */
  afterEnd?: (state: RunState) => Promise<void>;

  /**
   * A run ended (terminal), in its own execution or where no process executed it (a cancel, an
   * undo of a parked run): its concurrency slot goes to the next run of its key, and an async
   * unit's run resumes the run that dispatched it (its readers wait for it).
   */
  async ended(state: RunState): Promise<void> {
    await this.afterEnd?.(state);
    const parent = state.asyncParent;
    if (!parent || !this.dispatch.available) return;
    await this.dispatch.resume(parent.runId, parent.reactorName, 0, parent.unit === true);
  }

  /**
   * Register an execution of `runId` in this process (a top-level run, or an undo or cancel carried
   * out here), so that a cancel asked here and a shutdown reach its steps' signals.
   */
  track(runId: string): TrackedExecution {
    const abort = new ExecutionAbort();
    let ended!: () => void;
    const done = new Promise<void>((resolve) => (ended = resolve));
    const tracked: TrackedExecution = {
      runId,
      abort,
      untrack: () => {
        this.live.delete(tracked);
        ended();
      },
    };
    this.live.set(tracked, done);
    if (this.stopping) abort.abort('shutdown');
    return tracked;
  }

  /**
   * Abort the step signals of the executions of `runId` in this process (a cancel asked here);
   * returns whether there was one.
   */
  abort(runId: string, cause: StepAbortCause, cancelReason?: string): boolean {
    let found = false;
    for (const tracked of this.live.keys()) {
      if (tracked.runId !== runId) continue;
      tracked.abort.abort(cause, cancelReason);
      found = true;
    }
    return found;
  }

  /** How many executions run in this process now. */
  get running(): number {
    return this.live.size;
  }

  /**
   * Shutdown: wait up to `graceMs` for the executions running in this process to end; abort the
   * step signals of those still running then (cause `shutdown`: each stops, writes nothing more
   * and releases its lease, leaving its run for recovery), and wait up to `graceMs` more for them.
   * With `handOff`, each execution stopped so is enqueued again as it releases its lease (see
   * {@link handOff}). An execution that starts after the grace is stopped before its first step
   * (and left for the sweeper).
   */
  async drain(graceMs: number, options: DrainOptions = {}): Promise<DrainResult> {
    this.handOffAtShutdown = options.handOff === true;
    if (await settlesWithin([...this.live.values()], graceMs)) return { aborted: 0, left: 0 };
    this.stopping = true;
    const aborted = this.live.size;
    for (const tracked of this.live.keys()) {
      this.drained.add(tracked.abort);
      tracked.abort.abort('shutdown');
    }
    await settlesWithin([...this.live.values()], graceMs);
    return { aborted, left: this.live.size };
  }

  /**
   * Hand-off at shutdown: an execution the drain stopped (`abort`), whose lease this process has
   * just given back, is enqueued again at once (`job`: a resume of the run, or the element's job),
   * so that another worker carries it on now instead of the sweeper after the lease TTL. Only with
   * `drain(graceMs, { handOff: true })` and a dispatcher. The state is already stored (a stopped
   * execution writes nothing more), and a second delivery is harmless: a run (or element) whose
   * lease is held is snoozed, a finished one is left alone. A failed enqueue is logged; the sweeper
   * still recovers the run. Never throws.
   */
  async handOff(job: ReactorJob, abort: ExecutionAbort): Promise<void> {
    if (!this.handOffAtShutdown || abort.stopCause !== 'shutdown' || !this.drained.has(abort)) return;
    if (!this.dispatch.available) return;
    const what = job.kind === 'resume' ? `Run '${job.runId}'` : `Element ${job.index} of map '${job.mapId}'`;
    try {
      await this.dispatch.one(job);
      this.parts.logger.log(`${what} was stopped at shutdown and handed off: its job is back on the queue.`);
    } catch (error) {
      this.parts.logger.warn(
        `${what} was stopped at shutdown but could not be handed off (${(error as Error)?.message}); the sweeper recovers it after the lease TTL.`,
      );
    }
  }

  /** Say in the log that a background run failed, and what its rollback could not undo. */
  private logFailure(failure: RunFailure, runId: string): void {
    const { logger } = this.parts;
    logger.warn(`Run '${runId}' failed (${failure.code}): ${failure.message}`);
    for (const f of failure.rollbackFailures) {
      const where = f.mapStep !== undefined ? ` (map '${f.mapStep}' element ${f.elementIndex})` : '';
      logger.error(
        `Run '${runId}': the ${f.kind} of step '${f.step}'${where} did not complete (${f.reason}): ${f.message}`,
      );
    }
  }

  /** The reactors' locks, semaphores, rate limits and periods, taken around each execution. */
  coordination?: Coordination;

  /**
   * Execute a run whose lease is held; the lease is released by the final save or here. The
   * reactor's coordination is taken first (unless the caller took it: `holding`) and given back when
   * the execution ends. Resolves to the caller-facing outcome; a worker's (its job resolves to
   * nothing) is the execution's own, without the view's reading of a map value or a sleep.
   * @throws CoordinationContendedError when its lock, semaphore or rate limit is contended (the
   *   lease is released; the run is as it was).
   */
  async execute(
    def: ReactorDefinition,
    state: RunState,
    lease: Lease,
    mode: 'caller' | 'worker',
    resumed: boolean,
    holding?: Holding,
  ): Promise<RunOutcome> {
    const tracked = this.track(state.runId);
    const { abort } = tracked;
    const held = this.leases.keep(lease, {
      runId: state.runId,
      onLost: () => abort.abort('lease-lost'),
      onCancel: (reason) => abort.abort('cancel', reason),
    });
    let released = false;
    let entered: Holding | undefined = holding;
    try {
      if (!entered && def.coordination && this.coordination) {
        const taken = await this.coordination.enter(def, state, mode);
        if (taken && 'halt' in taken) {
          released = true;
          return await this.haltBeforeStart(state, lease, taken.halt);
        }
        entered = taken;
      }
      const env = this.env(mode, lease, { runId: state.runId, reactorName: def.name }, entered?.held);
      env.inAsyncUnit = state.asyncParent !== undefined;
      env.abort = abort;
      const { maxContextBytes, storage } = this.parts;
      if (maxContextBytes !== undefined) {
        env.recordBudget = { limit: maxContextBytes, used: () => storage.sizeOf?.(state) ?? 0 };
      }
      const save = RunExecution.saver(env, state, { onRelease: () => (released = true) });
      const outcome = await new RunExecution(def, state, env, save).execute(resumed);
      // Its last save stored it settled: with a storage that announces such writes, that woke the
      // waiters in other processes already (one PUBLISH less per run).
      if (outcome.status !== 'dispatched')
        this.waiters.notify(state.runId, this.parts.storage.announcesSettled === true);
      if (outcome.status === 'paused') await this.afterPause?.(state);
      // An async unit that finished resumes the run that dispatched it (its readers wait for it).
      if (isTerminal(state.status)) await this.ended(state);
      if (mode === 'worker' && outcome.status === 'failed') this.logFailure(outcome.failure, state.runId);
      // A completed run's map value, a sleeping run's wake-up time: read through the view, for a
      // caller (a worker's job resolves to nothing: the outcome is read from storage).
      return mode === 'caller' && (outcome.status === 'completed' || outcome.status === 'dispatched')
        ? this.view.outcome(state)
        : outcome;
    } catch (error) {
      if (error instanceof ContextTooLargeError) {
        // Even the failure cannot be stored at full size: keep a minimal failed record.
        await this.parts.storage.markBroken(state.runId, def.name, toBrokenReason(error));
        this.parts.logger.warn(`Run '${state.runId}' was marked failed: ${error.message}`);
        this.waiters.notify(state.runId);
        return outcomeOf((await this.parts.storage.load(state.runId)) ?? state);
      }
      if (error instanceof LeaseLostError) {
        this.parts.logger.warn(error.message);
        await this.parts.middleware.emit({
          type: 'lease.lost',
          runId: state.runId,
          reactorName: def.name,
          at: this.parts.clock.now(),
        });
        released = true;
        // A worker that lost its lease stops quietly: the new holder carries the run on.
        if (mode === 'worker') return outcomeOf(state);
      }
      throw error;
    } finally {
      held.stop();
      if (entered) await entered.leave(state);
      if (!released && !held.lost && abort.cause !== 'lease-lost') {
        await this.leases.releaseQuietly(lease);
        // Stopped at shutdown with its lease given back here (not by a save that handed it off):
        // another worker resumes it now.
        await this.handOff(resumeJobOf(state), abort);
      }
      tracked.untrack();
    }
  }

  /**
   * A run its coordination stops before any step (a used period bucket, a failed predecessor on a
   * strict ordered lock, a reset ordered lock): it halts with the reason, nothing rolled back.
   */
  async haltBeforeStart(state: RunState, lease: Lease | undefined, halt: HaltBeforeStart['halt']): Promise<RunOutcome> {
    const now = this.parts.clock.now();
    delete state.handoff;
    state.status = 'halted';
    state.halt = { step: '(coordination)', reason: halt.reason, details: halt.details };
    state.finishedAt = state.updatedAt = now;
    await this.parts.storage.save(state, lease ? { lease, leaseTtlMs: this.parts.leaseTtlMs, releaseLease: true } : {});
    this.waiters.notify(state.runId);
    await this.afterEnd?.(state);
    return outcomeOf(state);
  }
}

/** Whether every one of `promises` settles within `ms` (the timer is cleared either way). */
async function settlesWithin(promises: Promise<void>[], ms: number): Promise<boolean> {
  if (promises.length === 0) return true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([Promise.all(promises).then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
