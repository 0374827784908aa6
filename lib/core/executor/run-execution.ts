/**
 * The executor's loop: runs one reactor run over its DAG.
 *
 * Loop (one `RunExecution` per run; composed children get their own, saving through the root):
 *
 *  1. Emit `reactor.start`; mark the run `running`.
 *  2. Pick ready steps (every dependency finished), in declaration order. With
 *     `maxConcurrency: 1` steps run in passes, level by level, as ruby_reactor runs them; with more,
 *     any ready step starts as soon as a slot is free.
 *     - In the caller, a `background: { before: s }` hand-off stops before starting `s`.
 *  3. Run each step (`runStep` in ./step-runner.ts): resolve arguments (an error here: the body
 *     never started), validate the input contract (likewise), then invoke the step's kind under
 *     the retry policy: success / skipped → validate output → done; retryable failure with
 *     attempts left → wait the backoff (in the caller) or schedule a delayed resume (in a worker)
 *     → try again; suspended (a fan-out map) → wait; otherwise → failed.
 *  4. As each step settles, in the loop (never concurrently): success → store the result, push it
 *     on the undo stack, checkpoint; skipped → store, never undone, checkpoint; halt, failure,
 *     hand-off, wait or scheduled retry → start nothing new and let running siblings settle.
 *  5. When nothing is running:
 *     - failure → compensate each failing step whose body started, then undo every completed step
 *       newest first (./rollback.ts; a failing undo or compensate is recorded in
 *       `rollbackFailures`; the walk goes on), then the run is `failed`;
 *     - halt → `halted`, nothing rolled back;
 *     - hand-off or scheduled retry → save, enqueue a resume job, return `dispatched`;
 *     - wait → save with the lease released and no job: what it waits for resumes it;
 *     - all steps finished (async units nobody reads aside: they run on in their jobs) → resolve
 *       the returned ref, `completed`.
 *  6. Emit `reactor.complete` or `reactor.fail`.
 *
 * The loop never asks which kind a step is: each kind (../steps/) invokes, compensates and undoes.
 * Every state change is saved through the storage port (fenced by the run's lease when there is
 * one) before anything that depends on it is enqueued.
 */
import { redactInputs } from '../definition/redaction';
import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import { InternalError } from '../errors/internal.error';
import { ContextTooLargeError, LeaseLostError } from '../errors/run-state.error';
import { UnstorableValueError } from '../errors/unstorable-value.error';
import { ReadySteps } from '../graph/dependency-graph';
import { errorMessage, type RollbackFailure } from '../model/failure';
import { isTerminal, type RunState } from '../model/run-state';
import { withoutUndefinedProperties } from '../model/json-values';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import { RollbackSuspended } from '../results/suspension';
import type { NestedExecution } from '../map/map-host';
import type { ChildSaving } from '../steps/step-kind';
import type { ExecutionEnv, Saver } from './execution-env';
import { finishRollback, rollback, undoAll, undoEntry } from './rollback';
import { RunScope } from './run-scope';
import { stepKindOf } from '../steps';
import { ReactorTraceAttributes } from '../tracing/tracing';
import { runStep, stepFailed, type StepAborted, type StepFailed, type StepResult } from './step-runner';
import { ExecutionStopped } from './execution-abort';
import { InFlight } from './in-flight';

type CancelAborted = Extract<StepAborted, { cause: 'cancel' }>;

type Handoff = { mode: NonNullable<RunState['handoff']>; delayMs: number };

/** Runs (or resumes) one run of a reactor. */
export class RunExecution extends RunScope implements NestedExecution {
  private lastCheckpoint = 0;

  constructor(def: ReactorDefinition, state: RunState, env: ExecutionEnv, save: Saver, root = true) {
    super(def, state, env, save, root);
  }

  /**
   * Save the root run through the storage port, fenced by the lease. A `final` save ends this
   * execution (terminal, hand-off, scheduled retry) and releases the lease in the same write.
   */
  static saver(
    env: ExecutionEnv,
    rootState: RunState,
    options: { reopen?: boolean; onRelease?: () => void } = {},
  ): Saver {
    return async (final) => {
      rootState.updatedAt = env.clock.now();
      const releaseLease = final && env.lease !== undefined;
      const written = await env.storage.save(rootState, {
        lease: env.lease,
        leaseTtlMs: env.leaseTtlMs,
        reopen: options.reopen,
        releaseLease,
      });
      // Nothing written: the stored record is terminal, so this writer is stale and must stop.
      if (!written) throw new LeaseLostError(rootState.runId);
      if (releaseLease) options.onRelease?.();
    };
  }

  /** A composed child saves through this run; a map element run in this process saves nowhere. */
  child(def: ReactorDefinition, state: RunState, saving: ChildSaving): RunExecution {
    const enclosing = [...(this.env.enclosing ?? []), { def: this.def, inputs: this.state.inputs }];
    if (saving === 'through-parent') {
      return new RunExecution(def, state, Object.assign({}, this.env, { enclosing }), this.saveRun, false);
    }
    // Assigned, not spread (DD-speed22-11): one per element of a map run in this process.
    const env: ExecutionEnv = Object.assign({}, this.env, {
      enclosing,
      inElement: true,
      enqueueResume: undefined,
      lease: undefined,
    });
    return new RunExecution(def, state, env, async () => undefined, false);
  }

  /** Execute until the run completes, fails, halts, or hands off. */
  execute(resumed: boolean): Promise<RunOutcome> {
    return this.traced('run', resumed, async () => {
      try {
        return await this.executeSteps(resumed);
      } catch (error) {
        if (error instanceof ExecutionStopped && this.root) return this.stopped(error);
        if (!(error instanceof RollbackSuspended) || !this.root) throw error;
        return this.parkRollback(error);
      }
    });
  }

  /**
   * The execution was told to stop. A lost lease: a `LeaseLostError` (nothing more is written). A
   * shutdown past its grace: nothing more is written either, and the run stays as last stored
   * (`running` or `rolling_back`) for recovery to resume in another process once the lease is free.
   */
  private stopped(stop: ExecutionStopped): RunOutcome {
    if (stop.stopCause === 'lease-lost') throw new LeaseLostError(this.state.runId);
    return outcomeOf(this.state); // `dispatched`: the run goes on elsewhere
  }

  /** Undo every completed step of a finished run (manual undo); the run ends `cancelled`. */
  undo(reason: string): Promise<RunOutcome> {
    return this.traced('undo', true, () => this.undoRun(reason));
  }

  /**
   * Run `body` inside this execution's span (`reactor.run <reactor>` or `reactor.undo <reactor>`),
   * a child of the active context; the span ends with the outcome's status (ERROR when failed).
   */
  private async traced(operation: 'run' | 'undo', resumed: boolean, body: () => Promise<RunOutcome>) {
    const tracing = this.env.tracing;
    // No span to make (tracing off, or nothing registered to record one): the steps see NO_SPAN.
    if (!tracing?.enabled) return body();
    const span = tracing.start(`reactor.${operation} ${this.def.name}`, {
      [ReactorTraceAttributes.REACTOR]: this.def.name,
      [ReactorTraceAttributes.RUN_ID]: this.state.runId,
      [ReactorTraceAttributes.RESUMED]: resumed,
      [ReactorTraceAttributes.MODE]: this.env.mode,
    });
    this.span = span;
    let outcome: RunOutcome;
    try {
      outcome = await span.within(body);
    } catch (error) {
      // A nested run whose rollback waits for map elements is not an error: its parent parks.
      const suspended = error instanceof RollbackSuspended;
      span.set({ [ReactorTraceAttributes.OUTCOME]: suspended ? 'suspended' : 'error' });
      span.end(suspended ? undefined : errorMessage(error));
      throw error;
    }
    span.set({ [ReactorTraceAttributes.OUTCOME]: outcome.status });
    if (outcome.status === 'failed') {
      span.set({ [ReactorTraceAttributes.ERROR_TYPE]: outcome.failure.code });
      span.end(outcome.failure.message);
    } else {
      span.end();
    }
    return outcome;
  }

  private async undoRun(reason: string): Promise<RunOutcome> {
    await this.startCancellation(reason);
    try {
      await finishRollback(this);
    } catch (error) {
      if (error instanceof ExecutionStopped) return this.stopped(error);
      if (!(error instanceof RollbackSuspended)) throw error;
      return this.parkRollback(error);
    }
    return outcomeOf(this.state);
  }

  undoAll(): Promise<RollbackFailure[]> {
    return undoAll(this);
  }

  /**
   * Whether undoing this run would do anything: some completed step's kind has undo work. Map
   * elements without it keep no state for rollback.
   */
  hasUndoWork(): boolean {
    return this.state.undoStack.some((entry) => {
      const step = this.def.stepsByName.get(entry.step);
      return step !== undefined && stepKindOf(step).hasUndoWork(this, step);
    });
  }

  /**
   * The rollback waits for work elsewhere (a fan-out map's element rollbacks): end this execution
   * (the run stays `rolling_back`, its lease released); that work resumes the run when done.
   */
  private async parkRollback(suspended: RollbackSuspended): Promise<RunOutcome> {
    this.state.handoff = { mode: suspended.mode };
    await this.saveRun(true);
    return outcomeOf(this.state);
  }

  private async executeSteps(resumed: boolean): Promise<RunOutcome> {
    const { state } = this;
    if (!this.middleware.empty) {
      await this.emit({
        type: 'reactor.start',
        resumed,
        inputs: redactInputs(this.def, state.inputs, state.redactedInputs),
      });
    }
    delete state.handoff;
    if (state.status === 'rolling_back' && state.rollback) {
      await finishRollback(this);
      return this.finish();
    }
    const wasRunning = state.status === 'running';
    state.status = 'running';
    if (!wasRunning) await this.save();

    let result = await this.loop();
    // A caller waits (bounded) for the async units its run waits on, then goes on where it stopped.
    const waitUntil = this.now() + (this.env.asyncWaitTimeoutMs ?? 30_000);
    while (
      result.handoff?.mode.mode === 'async' &&
      result.cancel === undefined &&
      this.root &&
      this.env.mode === 'caller'
    ) {
      if (!(await this.awaitUnits(waitUntil - this.now()))) break;
      result = await this.loop();
    }
    // A cancel request stops the run unless it failed (its rollback wins) or waits for map elements
    // (the run is cancelled when they have settled and the map can be undone whole).
    if (result.cancel !== undefined && result.failures.length === 0 && result.handoff?.mode.mode !== 'map') {
      return this.cancelRun(result.cancel, result.aborted);
    }
    if (result.failures.length > 0) {
      // Steps that stopped for the cancel are compensated in the rollback too (their bodies started).
      await rollback(this, [...result.failures, ...result.aborted.map((a) => a.failed)]);
    } else if (result.halt) {
      state.status = 'halted';
      state.halt = { step: result.halt.step.name, reason: result.halt.reason, details: result.halt.details };
      state.finishedAt = this.now();
      await this.saveRun(this.root);
    } else if (result.handoff) {
      state.handoff = result.handoff.mode;
      if (result.handoff.mode.mode === 'interrupt') this.pause(result.handoff.mode.step!);
      await this.saveRun(this.root);
      // A run waiting for async units parks: a finishing unit resumes it; a poll is the fallback.
      const delayMs = result.handoff.mode.mode === 'async' ? this.parkPollMs() : result.handoff.delayMs;
      if (this.root && this.env.enqueueResume && delayMs >= 0) {
        await this.env.enqueueResume(state.runId, state.reactorName, delayMs, state.asyncParent !== undefined);
      }
      return outcomeOf(state);
    } else {
      await this.complete(result.last);
    }
    return this.finish();
  }

  /**
   * Wait up to `ms` for one of the async units this run waits on to finish. Returns whether one did
   * (the loop goes on), or false when none did in time (the run parks for a worker).
   */
  private async awaitUnits(ms: number): Promise<boolean> {
    const { awaitRun } = this.env;
    const pending = this.awaitedUnits().map(([, ref]) => ref.runId);
    if (!awaitRun || ms <= 0 || pending.length === 0) return false;
    await Promise.race(pending.map((runId) => awaitRun(runId, ms)));
    return this.anyUnitFinished(pending);
  }

  private async anyUnitFinished(runIds: string[]): Promise<boolean> {
    for (const runId of runIds) {
      const unit = await this.env.storage.load(runId);
      if (!unit || isTerminal(unit.status)) return true;
    }
    return false;
  }

  /**
   * The fallback poll of a run parked on async units: a quarter of the time since its oldest pending
   * unit was dispatched, between 1 s and 30 s (a finishing unit resumes the run at once anyway).
   */
  private parkPollMs(): number {
    const pending = this.awaitedUnits().map(([, ref]) => ref.dispatchedAt);
    const waited = pending.length > 0 ? this.now() - Math.min(...pending) : 0;
    return Math.min(30_000, Math.max(1_000, Math.floor(waited / 4)));
  }

  /** The async units of this run that have not finished and that a step still to run reads. */
  private awaitedUnits(): Array<[string, NonNullable<RunState['asyncUnits']>[string]]> {
    const done = new Set(this.state.completed);
    const read = new Set(this.def.steps.filter((s) => !done.has(s.name)).flatMap((s) => s.reads));
    return Object.entries(this.state.asyncUnits ?? {}).filter(([step]) => !done.has(step) && read.has(step));
  }

  /** The run waits at its interrupts: `paused`, durable, its lease released by the final save. */
  private pause(first: string): void {
    const { state } = this;
    state.status = 'paused';
    const waiting = Object.entries(state.interrupts ?? {})
      .filter(([step]) => !state.completed.includes(step))
      .map(([, record]) => record.path);
    this.trace({ type: 'pause', step: first, detail: `waiting for ${waiting.join(', ') || first}` });
  }

  /**
   * Cancel the run at a step boundary: compensate the steps that stopped for the cancel (their
   * bodies started), undo its completed steps, newest first; it ends `cancelled`.
   */
  private async cancelRun(reason: string, aborted: CancelAborted[] = []): Promise<RunOutcome> {
    for (const a of aborted) this.liveErrors.set(a.step.name, a.failed.error);
    await this.startCancellation(
      reason,
      aborted.map((a) => ({ step: a.step.name, args: a.failed.args, message: a.failed.failure.errorMessage })),
    );
    await finishRollback(this);
    return this.finish();
  }

  /**
   * Turn the run into a rollback that ends `cancelled` with `reason` (undo, cancel), and save it:
   * a pending hand-off or scheduled retry no longer applies.
   */
  private async startCancellation(
    reason: string,
    aborted: NonNullable<RunState['rollback']>['compensate'] = [],
  ): Promise<void> {
    const { state } = this;
    delete state.handoff;
    delete state.retryAt;
    state.status = 'rolling_back';
    // A composed child paused at an interrupt has completed steps but no place on the undo stack
    // (its compose step has not completed): it is rolled back first.
    const compensate = Object.entries(state.children)
      .filter(([step, child]) => child.status === 'paused' && !state.completed.includes(step))
      .map(([step]) => ({ step, args: {}, message: reason }));
    state.rollback = { target: 'cancelled', compensate: [...compensate, ...aborted], failures: [] };
    state.cancellation = { reason, rollbackFailures: [] };
    await this.save();
  }

  /** The cancel request stored with this (top-level) run, as its last checkpoint or load found it. */
  private cancelRequested(): string | undefined {
    if (!this.root) return undefined;
    return this.env.storage.cancelRequest?.(this.state) ?? this.env.abort?.cancelReason;
  }

  /**
   * Complete the run with its value in the final save. When the last step's result (or the value)
   * cannot be stored, that step fails instead and the run rolls back.
   */
  private async complete(last: Extract<StepResult, { kind: 'success' | 'skipped' }> | undefined): Promise<void> {
    const { state } = this;
    this.storingValue = true;
    try {
      state.value = this.def.returns ? this.resolveSource(this.def.returns) : this.allResults();
    } finally {
      this.storingValue = false;
    }
    state.status = 'completed';
    state.finishedAt = this.now();
    try {
      await this.saveRun(this.root);
    } catch (error) {
      if (!(error instanceof UnstorableValueError) || !last) throw error;
      delete state.value;
      delete state.finishedAt;
      state.status = 'running';
      await rollback(this, [await this.takeBack(last, error)]);
    }
  }

  /**
   * The value of a reactor that returns nothing: every result, an async unit's as its value (or its
   * stored outcome, which callers read as a `Failure` or `Halt`: see `publicValue`).
   */
  private allResults(): Record<string, unknown> {
    const out = { ...this.state.results };
    for (const step of Object.keys(this.state.asyncUnits ?? {})) {
      const stored = out[step] as { ok?: boolean; value?: unknown } | undefined;
      if (stored?.ok === true) out[step] = stored.value;
    }
    return out;
  }

  private async finish(): Promise<RunOutcome> {
    const outcome = outcomeOf(this.state);
    if (outcome.status === 'failed') await this.emit({ type: 'reactor.fail', failure: outcome.failure });
    else await this.emit({ type: 'reactor.complete', outcome });
    return outcome;
  }

  private async loop(): Promise<{
    failures: StepFailed[];
    halt?: Extract<StepResult, { kind: 'halt' }>;
    handoff?: Handoff;
    /** The step that settled last with a result (its result goes with the final save). */
    last?: Extract<StepResult, { kind: 'success' | 'skipped' }>;
    /** A cancel request's reason: no step was started after it was seen. */
    cancel?: string;
    /** Steps that stopped because their signal was aborted for the cancel. */
    aborted: CancelAborted[];
  }> {
    const { def, state } = this;
    const finished = new Set(state.completed);
    const ready = new ReadySteps(def.steps, finished);
    const running = new InFlight<string, StepResult>();
    const failures: StepFailed[] = [];
    const aborted: CancelAborted[] = [];
    let halt: Extract<StepResult, { kind: 'halt' }> | undefined;
    let handoff: Handoff | undefined;
    let last: Extract<StepResult, { kind: 'success' | 'skipped' }> | undefined;
    let wave: StepDefinition[] = [];
    /** Interrupts reached that wait for an answer. */
    const paused: StepDefinition[] = [];
    /** Async units dispatched (or re-attached) that have not finished. */
    const units: StepDefinition[] = [];
    const sequential = def.maxConcurrency === 1;
    const background = this.root && this.env.mode === 'caller' && this.env.enqueueResume ? def.background : undefined;
    let cancel = this.cancelRequested();
    // `background: { after: X }`: the caller runs only X and what X depends on; a step that became
    // ready beside them (no path to X) waits for the worker, as in the reference.
    const callerOnly =
      background && 'after' in background && !state.completed.includes(background.after)
        ? upstreamOf(def, background.after)
        : undefined;
    // Once cancelled, only a step adopting finished work (a fan-out map's results) may still start.
    const blocked = (step: StepDefinition): boolean =>
      (callerOnly !== undefined && !callerOnly.has(step.name)) ||
      (cancel !== undefined && !(stepKindOf(step).adopting?.(this, step) ?? false));
    const startable = (): StepDefinition[] => ready.list().filter((step) => !blocked(step));

    const start = (step: StepDefinition): boolean => {
      if (background && 'before' in background && background.before === step.name) {
        handoff = { mode: { mode: 'before', step: step.name }, delayMs: 0 };
        this.trace({ type: 'handoff', step: step.name, detail: 'before' });
        return false;
      }
      ready.started(step.name);
      running.add(step.name, runStep(this, step));
      return true;
    };

    for (;;) {
      const stopping =
        failures.length > 0 || halt !== undefined || handoff !== undefined || this.env.abort?.stopCause !== undefined;
      if (!stopping) {
        if (sequential) {
          if (running.size === 0) {
            if (wave.length === 0) wave = startable();
            let next = wave.shift();
            while (next && blocked(next)) next = wave.shift();
            if (!next) next = (wave = startable()).shift();
            if (next) start(next);
          }
        } else {
          for (const step of ready.list()) {
            if (blocked(step)) continue;
            if (running.size >= def.maxConcurrency || !start(step)) break;
          }
        }
      }
      if (running.size === 0) break;

      // The next step to settle (one in flight, a sequential run: awaited as it is).
      const settled = await running.next();
      switch (settled.kind) {
        case 'success':
        case 'skipped': {
          const name = settled.step.name;
          // Stored as JSON keeps it: readers here get what a worker reading it back gets.
          settled.value = withoutUndefinedProperties(settled.value);
          last = settled;
          state.results[name] = settled.value;
          state.completed.push(name);
          finished.add(name);
          if (settled.kind === 'success' && !stepKindOf(settled.step).offUndoStack) {
            // Arguments are kept only for an undo that will use them (and must survive a resume).
            const args = stepKindOf(settled.step).hasUndoWork(this, settled.step) ? settled.args : {};
            state.undoStack.push({ step: name, args, result: settled.value });
          }
          if (state.retryAt) delete state.retryAt[name];
          this.trace({ type: settled.kind === 'success' ? 'complete' : 'skip', step: name });
          if (!this.middleware.empty)
            await this.emitStep(settled.step, { type: 'step.complete', outcome: settled.kind });
          if (background && 'after' in background && background.after === name) {
            handoff = { mode: { mode: 'after', step: name }, delayMs: 0 };
            this.trace({ type: 'handoff', step: name, detail: 'after' });
          }
          // The last step needs no checkpoint of its own: the final save follows at once.
          if (running.size === 0 && finished.size + units.length === def.steps.length) break;
          // A worker that lost the run's lease writes nothing more (its steps in flight settle first).
          if (this.env.abort?.stopCause === 'lease-lost') break;
          try {
            const saving = this.checkpoint();
            if (saving) await saving;
            cancel ??= this.cancelRequested();
          } catch (error) {
            if (!(error instanceof ContextTooLargeError || error instanceof UnstorableValueError)) throw error;
            failures.push(await this.takeBack(settled, error));
            finished.delete(name);
            break;
          }
          ready.finished(name);
          break;
        }
        case 'halt':
          halt ??= settled;
          this.trace({ type: 'halt', step: settled.step.name, detail: settled.reason });
          await this.emitStep(settled.step, { type: 'step.complete', outcome: 'halt' });
          break;
        case 'failure':
          failures.push(settled);
          break;
        case 'aborted':
          // A shutdown or a lost lease stops the execution once nothing runs (below).
          if (settled.cause === 'cancel') {
            aborted.push(settled);
            cancel ??= settled.reason.cancelReason ?? this.cancelRequested() ?? 'cancelled';
          }
          break;
        case 'retry':
          handoff = handoff ?? { mode: { mode: 'all', step: settled.step.name }, delayMs: settled.delayMs };
          break;
        case 'wait':
          // An interrupt stops nothing that does not depend on it: the run pauses once nothing
          // else can run.
          if (settled.mode === 'interrupt') {
            paused.push(settled.step);
            break;
          }
          // An async unit stops only the steps that read it: the run waits for it once nothing
          // else can run. Steps that only wait for it (`waitFor`) start now: they wait for its
          // dispatch, not its end.
          if (settled.mode === 'async') {
            const unit = settled.step.name;
            units.push(settled.step);
            ready.releaseEarly(unit, (s) => !s.reads.includes(unit));
            if (background && 'after' in background && background.after === unit) {
              handoff ??= { mode: { mode: 'after', step: unit }, delayMs: 0 };
              this.trace({ type: 'handoff', step: unit, detail: 'after' });
            }
            break;
          }
          // The step waits for work elsewhere (a fan-out map's elements), which resumes the run: no job now.
          handoff = handoff ?? { mode: { mode: settled.mode, step: settled.step.name }, delayMs: -1 };
          break;
      }
      // A sequential pass ends at the first terminal outcome.
      if (sequential && (failures.length > 0 || halt || handoff)) wave = [];
    }
    // Told to stop (shutdown past its grace, lost lease): nothing more is started, rolled back or
    // written. A run whose steps all finished anyway (they ignored their signals) completes, unless
    // its lease is lost.
    if (finished.size + units.length < def.steps.length || this.env.abort?.stopCause === 'lease-lost')
      this.throwIfStopped();
    // Units finish on their own. The run waits for one only when a step reads it and waits for
    // nothing else (before it pauses at an interrupt); a unit nobody reads now runs on by itself.
    const pendingUnits = new Set(units.map((s) => s.name));
    const awaited = def.steps.find(
      (s) =>
        !finished.has(s.name) &&
        !pendingUnits.has(s.name) &&
        s.reads.some((r) => pendingUnits.has(r)) &&
        s.dependsOn.every((d) => finished.has(d) || pendingUnits.has(d)),
    );
    if (awaited && failures.length === 0 && !halt && !handoff) {
      const unit = awaited.reads.find((r) => pendingUnits.has(r))!;
      handoff = { mode: { mode: 'async', step: unit }, delayMs: -1 };
    } else if (paused.length > 0 && failures.length === 0 && !halt && !handoff) {
      handoff = { mode: { mode: 'interrupt', step: paused[0].name }, delayMs: -1 };
    }
    if (cancel !== undefined) return { failures, halt, handoff, last, cancel, aborted };
    if (failures.length === 0 && !halt && !handoff && finished.size + pendingUnits.size < def.steps.length) {
      // Unreachable for a validated definition; guards against a corrupt resumed state.
      throw new InternalError(`Reactor '${def.name}': no ready steps but the run is not complete.`);
    }
    return { failures, halt, handoff, last, aborted };
  }

  /**
   * Save a mid-run checkpoint, coalesced by `checkpointMinIntervalMs` (nothing to wait for when it
   * is skipped; the save's own promise otherwise, with none made around it).
   */
  private checkpoint(): Promise<void> | undefined {
    const min = this.env.checkpointMinIntervalMs ?? 0;
    if (min > 0) {
      const now = this.now();
      if (now - this.lastCheckpoint < min) return undefined;
      this.lastCheckpoint = now;
    }
    return this.save();
  }

  /**
   * A step's result could not be stored (the run would be too large, or the value is not
   * JSON-compatible). Take the step back off the run (undoing it at once, in memory, since its
   * result cannot be saved) and fail it with the error.
   */
  private async takeBack(
    settled: Extract<StepResult, { kind: 'success' | 'skipped' }>,
    error: ContextTooLargeError | UnstorableValueError,
  ): Promise<StepFailed> {
    const name = settled.step.name;
    const { state } = this;
    delete state.results[name];
    state.completed = state.completed.filter((s) => s !== name);
    const top = state.undoStack[state.undoStack.length - 1];
    const undoFailures =
      settled.kind === 'success' && top?.step === name ? await undoEntry(this, state.undoStack.pop()!) : [];
    const result = stepFailed(this, settled.step, error, settled.args, { compensate: false });
    result.failure.rollbackFailures.push(...undoFailures);
    return result;
  }
}

/** `step` and every step it depends on, transitively (by name). */
function upstreamOf(def: ReactorDefinition, step: string): Set<string> {
  const out = new Set<string>();
  const visit = (name: string): void => {
    if (out.has(name)) return;
    out.add(name);
    for (const dep of def.stepsByName.get(name)?.dependsOn ?? []) visit(dep);
  };
  visit(step);
  return out;
}
