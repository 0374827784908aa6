import { createHash } from 'node:crypto';
import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import type { ArgSource } from '../definition/ref';
import { didYouMean } from '../errors/closest-names';
import { InputValidationError } from '../errors/input-validation.error';
import { InvalidArgumentError } from '../errors/invalid-argument.error';
import { ReactorError } from '../errors/reactor.error';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import { listRuns } from './run-list';
import { redactInputs } from '../definition/redaction';
import { InvalidRunStateError, RunNotFoundError } from '../errors/run-state.error';
import { RunExecution } from '../executor/run-execution';
import { errorMessage, runFailure } from '../model/failure';
import { runLeaseKey } from '../model/keys';
import { isTerminal, type RunState, type RunStatus } from '../model/run-state';
import type { Lease } from '../ports/lock-manager.port';
import type { BrokenReason } from '../ports/reactor-storage.port';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import type { EngineParts } from './engine-options';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import { resumeJobOf, type Dispatch } from './dispatch';
import type { DefinitionRegistry } from './registry';
import type { RunStarter } from './run-starter';
import type { Waiters } from './waiters';
import { sleepingStep } from '../steps/sleep.step';

const UNDOABLE: readonly RunStatus[] = ['completed', 'halted', 'failed', 'paused'];

/** Options of `undo`. */
export interface UndoOptions {
  /**
   * Wait for the end of a rollback that goes on in workers (a fan-out map's elements), so `undo`
   * resolves `cancelled` in every mode. `false`: return at once (`dispatched`, rolling back).
   * @default true
   */
  wait?: boolean;
  /** Bound of that wait. @default the engine's wait timeout (30 s) */
  timeoutMs?: number;
}

/** Options of `retry`. */
export interface RunRetryOptions {
  /**
   * Start another new run even when this failed run was retried already. By default a retry is
   * idempotent per source run: a second call returns the first retry's run (`replayed`).
   * @default false
   */
  new?: boolean;
  /**
   * Redrive from this step of the current definition: the new run reuses the source run's results
   * of the steps that are not `fromStep`, do not depend on it (transitively) and do not read a
   * changed input, and runs the rest. Allowed for completed and halted runs and for failed runs
   * that were not rolled back; the reused steps' undo entries move to the new run.
   */
  fromStep?: string;
  /** Replace the inputs (validated as a start's): steps reading a changed one run again, and their dependents. */
  inputs?: Record<string, unknown>;
}

/** What `retryMany` looks for: a reactor's runs of `status` (default `failed`) created in [since, until]. */
export interface RetryManyQuery {
  reactor: string;
  /** @default 'failed' */
  status?: RunStatus;
  /** Created at or after (ms). */
  since?: number;
  /** Created at or before (ms). */
  until?: number;
  /** At most this many matching runs. @default 100 */
  limit?: number;
  /** List the runs it would retry, and retry none. @default false */
  dryRun?: boolean;
  /** Retry each from this step (see {@link RunRetryOptions.fromStep}). */
  fromStep?: string;
}

/** What `retryMany` did (or, `dryRun`, would do). */
export interface RetryManyResult {
  /** Retried runs and their new (or reopened) run; `replayed` when an earlier retry's run was found. A dry run lists the runs without `newRunId`. */
  retried: Array<{ runId: string; newRunId?: string; replayed?: true }>;
  /** Runs whose retry was refused: the error's code and message. */
  refused: Array<{ runId: string; code: string; message: string }>;
  dryRun: boolean;
}

/** The trace detail of a step a redriven run reused, and of the source's step whose undo it took. */
const REUSED_FROM = 'reused from run ';
const HANDED_TO = 'undo handed to run ';

/**
 * The id of the `count`th retry's run of `sourceRunId`: a UUID-shaped SHA-256 of both, so every
 * caller (in any process) names the same run, and no caller-chosen id is likely to collide.
 */
export function retryRunId(sourceRunId: string, count: number): string {
  const hex = createHash('sha256').update(`retry\u0000${sourceRunId}\u0000${count}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const REDRIVABLE: readonly RunStatus[] = ['completed', 'halted', 'failed'];

/**
 * The steps a retry from `fromStep` (with inputs `changed`) reuses from `source`, on `def`: those
 * `source` completed, that are not `fromStep`, read no changed input, are not a fan-out map or an
 * async unit (their records are the source run's), whose undo was not handed to an earlier
 * redrive, and all of whose dependencies are reused too (so no dependent of `fromStep` is).
 */
export function reusedSteps(
  def: ReactorDefinition,
  source: RunState,
  fromStep: string | undefined,
  changed: ReadonlySet<string>,
): Set<string> {
  const done = new Set(source.completed);
  const handed = new Set(
    source.trace.filter((t) => t.type === 'skip' && t.detail?.startsWith(HANDED_TO)).map((t) => t.step),
  );
  const readsChanged = (step: StepDefinition): boolean => {
    const sources: unknown[] = Object.values(step.args);
    if (step.handler.kind === 'map') sources.push(step.handler.map.source, ...Object.values(step.handler.map.inputs));
    return sources.some(
      (s) =>
        typeof s === 'object' &&
        s !== null &&
        (s as ArgSource).kind === 'input' &&
        changed.has((s as { name: string }).name),
    );
  };
  const reused = new Set(
    def.steps
      .filter(
        (step) =>
          step.name !== fromStep &&
          done.has(step.name) &&
          !handed.has(step.name) &&
          step.handler.kind !== 'async' &&
          source.maps?.[step.name]?.mode !== 'fanOut' &&
          !readsChanged(step),
      )
      .map((step) => step.name),
  );
  for (let shrunk = true; shrunk;) {
    shrunk = false;
    for (const step of def.steps) {
      if (reused.has(step.name) && !step.dependsOn.every((dep) => reused.has(dep))) {
        reused.delete(step.name);
        shrunk = true;
      }
    }
  }
  return reused;
}

/** Acting on a run from outside its execution: undo a finished run, fail a run whose job died. */
export class RunControl {
  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
    private readonly waiters: Waiters,
    private readonly starter: RunStarter,
    private readonly dispatch: Dispatch,
  ) {}

  /**
   * Retry a failed run: a new linked run when it was rolled back; a resume from its failed step
   * when it stopped without a rollback (job retries exhausted). See `ReactorEngine.retry`.
   *
   * The new run of a rolled-back run is idempotent per source run: its id is derived from the
   * source's id and retry count (`retryRunId`), so a second call (in a row, or while the first
   * retry runs, or at the same time) finds it stored and returns it, `replayed`. `{ new: true }`
   * starts another run, with an id of its own.
   */
  retry(runId: string, options: RunRetryOptions = {}): Promise<RunOutcome> {
    if (options.fromStep !== undefined || options.inputs !== undefined) return this.redrive(runId, options);
    const notFailed = (status: RunStatus) =>
      new InvalidRunStateError(`Run '${runId}' is ${status}; only a failed run can be retried.`, runId, status);
    const rerun = (state: RunState): Promise<RunOutcome> => {
      if (state.undoStack.length > 0) {
        throw new InvalidRunStateError(
          `Run '${runId}' failed (${state.failure?.code ?? 'unknown'}) without a rollback; undo it (client.undo) before starting it again.`,
          runId,
          state.status,
        );
      }
      const def = this.registry.get(state.reactorName);
      const count = (state.retryCount ?? 0) + 1;
      const newRunId = options.new === true ? undefined : retryRunId(state.runId, count);
      return this.starter.start(def, state.inputs, { runId: newRunId }, { runId: state.runId, count });
    };
    // Held by a process: it is executing (not failed), a failed run is being reopened right now,
    // or a concurrent retry holds it a moment to start its new run (started idempotently here too).
    const busy = async (): Promise<RunOutcome> => {
      const stored = await this.parts.storage.load(runId);
      if (!stored) throw new RunNotFoundError(runId);
      if (stored.status !== 'failed') throw notFailed(stored.status);
      if (stored.failure?.code !== 'JOB_RETRIES_EXHAUSTED') return rerun(stored);
      throw new InvalidRunStateError(
        `Run '${runId}' is being handled in some process; retry it later.`,
        runId,
        'running',
      );
    };
    return this.holding(runId, busy, async (state, lease, released) => {
      if (state.status !== 'failed') throw notFailed(state.status);
      if (state.failure?.code === 'JOB_RETRIES_EXHAUSTED') return this.reopen(state, lease, released);
      return rerun(state);
    });
  }

  /**
   * Retry `runId` from `options.fromStep` and/or with other inputs: a new run (on the current
   * definition) seeded with the source's results of the steps it reuses ({@link reusedSteps}),
   * whose undo entries move from the source to it. Idempotent per source run like `retry`.
   */
  private redrive(runId: string, options: RunRetryOptions): Promise<RunOutcome> {
    const { fromStep } = options;
    const check = (state: RunState): void => {
      const rolledBack =
        state.status === 'failed' && state.undoStack.length === 0 && state.failure?.code !== 'JOB_RETRIES_EXHAUSTED';
      if (rolledBack && fromStep !== undefined) {
        throw new InvalidRunStateError(
          `Run '${runId}' failed and was rolled back: its completed steps were undone, so their results no longer hold and cannot be reused from step '${fromStep}'. Retry it without fromStep (a new run from the start; inputs may be given).`,
          runId,
          state.status,
        );
      }
      if (!rolledBack && !REDRIVABLE.includes(state.status)) {
        throw new InvalidRunStateError(
          `Run '${runId}' is ${state.status}; only a completed or halted run, or a failed one, can be retried from a step or with other inputs${state.status === 'cancelled' ? ' (a cancelled run was undone: start a new run)' : ''}.`,
          runId,
          state.status,
        );
      }
    };
    const idOf = (state: RunState) =>
      options.new === true ? undefined : retryRunId(state.runId, (state.retryCount ?? 0) + 1);
    const busy = async (): Promise<RunOutcome> => {
      const stored = await this.parts.storage.load(runId);
      if (!stored) throw new RunNotFoundError(runId);
      check(stored);
      const id = idOf(stored);
      const found = id === undefined ? undefined : await this.parts.storage.load(id);
      if (found) return { ...outcomeOf(found), replayed: true };
      throw new InvalidRunStateError(
        `Run '${runId}' is being handled in some process; retry it later.`,
        runId,
        'running',
      );
    };
    return this.holding(runId, busy, async (source, lease) => {
      check(source);
      const def = this.registry.get(source.reactorName);
      const names = def.steps.map((step) => step.name);
      if (fromStep !== undefined && !names.includes(fromStep)) {
        throw new InvalidArgumentError(
          'retry',
          'options.fromStep',
          `a step of reactor '${def.name}' ('${fromStep}' is not one.${didYouMean(fromStep, names)} Steps: ${names.join(', ')})`,
          fromStep,
        );
      }
      let inputs = source.inputs;
      if (options.inputs !== undefined) {
        const validated = await validateReactorInputs(def.inputs, options.inputs, { fresh: true });
        if (Object.keys(validated.errors).length > 0) {
          throw new InputValidationError(
            `Reactor '${def.name}': retry(): input validation failed: ${describeFieldErrors(validated.errors)}`,
            validated.errors,
            def.name,
          );
        }
        inputs = validated.inputs;
      }
      const changed = new Set(
        [...new Set([...Object.keys(inputs), ...Object.keys(source.inputs)])].filter(
          (name) => JSON.stringify(inputs[name]) !== JSON.stringify(source.inputs[name]),
        ),
      );
      const reused = source.status === 'cancelled' ? new Set<string>() : reusedSteps(def, source, fromStep, changed);
      const seed = (state: RunState): void => {
        const at = this.parts.clock.now();
        state.completed = source.completed.filter((step) => reused.has(step));
        for (const step of state.completed) {
          state.results[step] = source.results[step];
          if (source.children[step]) state.children[step] = source.children[step];
          if (source.maps?.[step]) (state.maps ??= {})[step] = source.maps[step];
          state.trace.push({ type: 'skip', step, at, detail: `${REUSED_FROM}${source.runId}` });
        }
        state.undoStack = source.undoStack.filter((entry) => reused.has(entry.step));
      };
      const count = (source.retryCount ?? 0) + 1;
      const outcome = await this.starter.start(
        def,
        inputs,
        { runId: idOf(source) },
        { runId: source.runId, count, seed },
      );
      // The new run owns the undo of what it reused (read back: a replayed run's, as it was seeded).
      const started = await this.parts.storage.load(outcome.runId);
      const carried = new Set(
        (started?.retriedFrom === source.runId ? started.trace : [])
          .filter((entry) => entry.type === 'skip' && entry.detail === `${REUSED_FROM}${source.runId}`)
          .map((entry) => entry.step),
      );
      const moved = source.undoStack.filter((entry) => carried.has(entry.step));
      if (moved.length > 0) {
        const at = this.parts.clock.now();
        // A new object: stored whole, as the undo stack lost entries below its top (a delta holds pops only).
        const handed: RunState = {
          ...source,
          undoStack: source.undoStack.filter((entry) => !carried.has(entry.step)),
          trace: [
            ...source.trace,
            ...moved.map((entry) => ({
              type: 'skip' as const,
              step: entry.step,
              at,
              detail: `${HANDED_TO}${outcome.runId}`,
            })),
          ],
          updatedAt: at,
        };
        await this.parts.storage.save(handed, { lease, leaseTtlMs: this.parts.leaseTtlMs });
      }
      return outcome;
    });
  }

  /**
   * Retry the runs of `query.reactor` of `query.status` (default `failed`) created in
   * [`since`, `until`], newest first, at most `limit` (default 100): each through `retry` (so
   * idempotent per source run: a second call finds the first's runs, `replayed`); a refusal is
   * collected, not thrown. `dryRun` lists the runs and retries none.
   */
  async retryMany(query: RetryManyQuery): Promise<RetryManyResult> {
    const limit = query.limit ?? 100;
    const result: RetryManyResult = { retried: [], refused: [], dryRun: query.dryRun === true };
    const matched: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listRuns(this.parts.storage, {
        reactor: query.reactor,
        status: query.status ?? 'failed',
        since: query.since,
        cursor,
        limit: Math.min(1000, Math.max(limit, 50)),
      });
      for (const run of page.runs) {
        if (query.until !== undefined && run.createdAt > query.until) continue;
        if (matched.length < limit) matched.push(run.runId);
      }
      cursor = matched.length < limit ? page.cursor : undefined;
    } while (cursor !== undefined);
    for (const runId of matched) {
      if (result.dryRun) {
        result.retried.push({ runId });
        continue;
      }
      try {
        const outcome = await this.retry(runId, query.fromStep === undefined ? {} : { fromStep: query.fromStep });
        result.retried.push({
          runId,
          newRunId: outcome.runId,
          ...(outcome.replayed ? { replayed: true as const } : {}),
        });
      } catch (error) {
        const code = error instanceof ReactorError ? error.code : 'ERROR';
        result.refused.push({ runId, code, message: errorMessage(error) });
      }
    }
    return result;
  }

  /** Reopen a run whose job's retries ran out and hand it to a worker, from its failed step. */
  private async reopen(state: RunState, lease: Lease, released: () => void): Promise<RunOutcome> {
    state.status = 'running';
    state.handoff = { mode: 'all' };
    delete state.failure;
    delete state.finishedAt;
    delete state.retryAt; // the failed step runs again now
    state.updatedAt = this.parts.clock.now();
    await this.parts.storage.save(state, {
      lease,
      leaseTtlMs: this.parts.leaseTtlMs,
      reopen: true,
      releaseLease: true,
    });
    released();
    await this.dispatch.resume(state.runId, state.reactorName, undefined, state.asyncParent !== undefined);
    return outcomeOf(state);
  }

  /**
   * Undo a finished run: every completed step is undone, newest first (composed children replay
   * their own undos), then the run is `cancelled`. Refused while the run is executing.
   */
  async undo(runId: string, options: UndoOptions = {}): Promise<RunOutcome> {
    const outcome = await this.undoNow(runId);
    // A fan-out map's elements are undone by jobs: the run is rolling back until they report.
    if (outcome.status !== 'dispatched' || options.wait === false) return outcome;
    return outcomeOf(await this.waiters.until(runId, { timeoutMs: options.timeoutMs }));
  }

  private undoNow(runId: string): Promise<RunOutcome> {
    const busy = () => {
      throw new InvalidRunStateError(
        `Run '${runId}' is executing in some process; undo it after it finishes.`,
        runId,
        'running',
      );
    };
    return this.holding(runId, busy, async (state, lease, released) => {
      if (state.status === 'rolling_back') {
        throw new InvalidRunStateError(
          `Run '${runId}' is rolling back: a rollback is in progress; wait for it (client.wait) instead of undoing.`,
          runId,
          state.status,
        );
      }
      // A sleeping run (`r.sleep`) is parked like a paused one: nobody executes it (its lease was free).
      if (!UNDOABLE.includes(state.status) && !sleepingStep(state, this.definitionOf)) {
        throw new InvalidRunStateError(
          `Run '${runId}' is ${state.status}; only completed, halted, failed or paused runs can be undone (or a sleeping one).`,
          runId,
          state.status,
        );
      }
      // A paused or sleeping run may keep its reactor's lock and slot across the park.
      const parked = !isTerminal(state.status);
      const outcome = await this.rollBackHere(state, lease, released, 'undo', true);
      // What it kept is given back now, not when its TTL runs out (as `cancel` does).
      if (parked && isTerminal(state.status)) {
        await this.executions.coordination?.releaseKept(
          this.registry.forRun(state) ?? this.registry.get(state.reactorName),
          state,
        );
        await this.executions.afterEnd?.(state);
      }
      return outcome;
    });
  }

  /**
   * Cancel a run that has not finished: it stops at its next step boundary (steps in flight
   * finish), its completed steps are undone newest first, and it ends `cancelled` with `reason`.
   * A run no process is executing now is cancelled here; one executing elsewhere is cancelled by
   * that process, at its next checkpoint (this returns its outcome as it is now: wait for the end).
   * A run waiting for its fan-out map's elements is cancelled when they have settled, so that
   * every completed element is undone too. Refused for a finished run (undo it instead).
   */
  async cancel(runId: string, reason: string): Promise<RunOutcome> {
    const { storage } = this.parts;
    if (!storage.requestCancel) {
      throw new InvalidRunStateError(`This storage adapter cannot cancel runs (run '${runId}').`, runId, 'running');
    }
    const status = await storage.requestCancel(runId, reason);
    if (status === undefined) throw new RunNotFoundError(runId);
    // Rolling back (a failure or an undo is being rolled back): the storage kept nothing, as undo refuses it.
    if (status === 'rolling_back') {
      throw new InvalidRunStateError(
        `Run '${runId}' is rolling back: a rollback is in progress, so there is nothing left to cancel; wait for it (client.wait).`,
        runId,
        status,
      );
    }
    // Executing in this process: its steps in flight learn of it now, through their signals (an
    // execution elsewhere learns of it at its next lease extension or checkpoint).
    if (!isTerminal(status)) this.executions.abort(runId, 'cancel', reason);
    if (isTerminal(status)) {
      throw new InvalidRunStateError(
        `Run '${runId}' is ${status}: a finished run cannot be cancelled; undo it instead (client.undo).`,
        runId,
        status,
      );
    }
    return this.holding(
      runId,
      () => this.current(runId),
      async (state, lease, released) => {
        // Finished meanwhile, rolling back already, or waiting for map elements: nothing to do here.
        if (isTerminal(state.status) || state.status === 'rolling_back' || state.handoff?.mode === 'map') {
          return outcomeOf(state);
        }
        const outcome = await this.rollBackHere(state, lease, released, reason, false);
        // What it kept across a retry or a park is given back now, not when its TTL runs out.
        if (isTerminal(state.status))
          await this.executions.coordination?.releaseKept(
            this.registry.forRun(state) ?? this.registry.get(state.reactorName),
            state,
          );
        // An async unit cancelled here (no process executing it) resumes its parent now.
        if (isTerminal(state.status)) await this.executions.ended(state);
        return outcome;
      },
    );
  }

  /**
   * Take the run's lease and read it (one round trip), then run `work` on it; `busy` answers when
   * another process holds the run. The lease is released after, unless `work` said a final save
   * released it.
   */
  private async holding(
    runId: string,
    busy: () => Promise<RunOutcome> | never,
    work: (state: RunState, lease: Lease, released: () => void) => Promise<RunOutcome>,
  ): Promise<RunOutcome> {
    const lease = this.leases.newLease(runLeaseKey(runId));
    const claim = await this.parts.storage.acquireAndLoad(runId, lease, this.parts.leaseTtlMs);
    if (!claim.acquired) return busy();
    let released = false;
    try {
      if (!claim.state) throw new RunNotFoundError(runId);
      return await work(claim.state, lease, () => (released = true));
    } finally {
      if (!released) await this.leases.releaseQuietly(lease);
    }
  }

  /**
   * Undo every completed step of `state` here, under `lease`; the run ends `cancelled` with
   * `reason`. Under the version the run started with when registered here, else the current one
   * (undo finds steps by name). `reopen`: a finished run's record is replaced.
   */
  private async rollBackHere(
    state: RunState,
    lease: Lease,
    released: () => void,
    reason: string,
    reopen: boolean,
  ): Promise<RunOutcome> {
    const def = this.registry.forRun(state) ?? this.registry.get(state.reactorName);
    const env = this.executions.env('caller', lease, { runId: state.runId, reactorName: def.name });
    // Its undos' signals are aborted at shutdown (a cancel does not abort a rollback).
    const tracked = this.executions.track(state.runId);
    env.abort = tracked.abort;
    let saveReleased = false;
    const onRelease = () => {
      saveReleased = true;
      released();
    };
    try {
      const save = RunExecution.saver(env, state, { reopen, onRelease });
      const outcome = await new RunExecution(def, state, env, save).undo(reason);
      this.waiters.notify(state.runId);
      return outcome;
    } finally {
      if (tracked.abort.stopCause === 'shutdown' && !saveReleased) {
        // Stopped at shutdown mid-rollback: give the lease back and hand the run off (its stored
        // rollback, if it got that far, is finished by another worker now).
        await this.leases.releaseQuietly(lease);
        onRelease();
        await this.executions.handOff(resumeJobOf(state), tracked.abort);
      }
      tracked.untrack();
    }
  }

  private readonly definitionOf = (name: string) => (this.registry.has(name) ? this.registry.get(name) : undefined);

  private async current(runId: string): Promise<RunOutcome> {
    const state = await this.parts.storage.load(runId);
    if (!state) throw new RunNotFoundError(runId);
    return outcomeOf(state);
  }

  /**
   * Mark a run failed because its job could not be processed (infrastructure errors exhausted the
   * job's retries). Not rolled back: completed steps stay on the undo stack for `undo(runId)`.
   * Skipped when another process holds the run or it is already terminal. Never throws.
   */
  async failRun(runId: string, reason: BrokenReason): Promise<void> {
    const { storage, clock, leaseTtlMs, logger } = this.parts;
    const lease = this.leases.newLease(runLeaseKey(runId));
    try {
      const claim = await storage.acquireAndLoad(runId, lease, leaseTtlMs);
      if (!claim.acquired) return;
      const state = claim.state;
      if (!state || isTerminal(state.status)) {
        await this.parts.locks.release(lease);
        return;
      }
      state.status = 'failed';
      state.failure = runFailure({
        message: `Run '${runId}' of reactor '${state.reactorName}' failed: ${reason.message}`,
        code: reason.code,
        reactorName: state.reactorName,
        exceptionClass: reason.exceptionClass ?? 'Error',
        errorMessage: reason.message,
        inputs: this.registry.has(state.reactorName)
          ? redactInputs(this.registry.get(state.reactorName), state.inputs, state.redactedInputs)
          : {},
      });
      state.finishedAt = state.updatedAt = clock.now();
      await storage.save(state, { lease, releaseLease: true });
      // Its turn on an ordered lock goes to the next run now (not after the poison pill), as failed.
      if (this.registry.has(state.reactorName)) {
        const def = this.registry.forRun(state) ?? this.registry.get(state.reactorName);
        await this.executions.coordination?.abandonOrder(def, state, true);
      }
      this.waiters.notify(runId);
      await this.executions.afterEnd?.(state);
    } catch (error) {
      logger.error(`Could not mark run '${runId}' failed: ${errorMessage(error)}`);
    }
  }
}
