/**
 * The executor: runs one reactor run over its DAG.
 *
 * Loop (one `RunExecution` per run; composed children get their own, saving through the root):
 *
 *  1. Emit `reactor.start`; mark the run `running`.
 *  2. Pick ready steps (every dependency finished), in declaration order. With
 *     `maxConcurrency: 1` steps run in passes, level by level, as ruby_reactor runs them; with more,
 *     any ready step starts as soon as a slot is free.
 *     - In the caller, a `background: { before: s }` hand-off stops before starting `s`.
 *  3. Run each step (`runStep`): resolve arguments (an error here: the body never started),
 *     validate the input contract (likewise), then attempt the body under the retry policy:
 *     success / skipped → validate output → done; retryable failure with attempts left → wait the
 *     backoff (in the caller) or schedule a delayed resume (in a worker) → try again; otherwise
 *     → failed.
 *  4. As each step settles, in the loop (never concurrently): success → store the result, push it
 *     on the undo stack, checkpoint; skipped → store, never undone, checkpoint; halt, failure,
 *     hand-off or scheduled retry → start nothing new and let running siblings settle.
 *  5. When nothing is running:
 *     - failure → compensate each failing step whose body started, then undo every completed step
 *       newest first (a failing undo or compensate is recorded in `rollbackFailures`; the walk goes
 *       on), then the run is `failed`;
 *     - halt → `halted`, nothing rolled back;
 *     - hand-off or scheduled retry → save, enqueue a resume job, return `dispatched`;
 *     - all steps finished → resolve the returned ref, `completed`.
 *  6. Emit `reactor.complete` or `reactor.fail`.
 *
 * Every state change is saved through the storage port (fenced by the run's lease when there is
 * one) before anything that depends on it is enqueued.
 */
import { ArgumentResolutionError } from '../errors/argument-resolution.error';
import { InputValidationError } from '../errors/input-validation.error';
import { UnexpectedResultError } from '../errors/step.error';
import { ReactorError } from '../errors/reactor.error';
import { ContextTooLargeError, LeaseLostError } from '../errors/run-state.error';
import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import { applyOps, type ArgSource } from '../definition/ref';
import type { StepContext, StepHandler } from '../definition/step';
import { readySteps } from '../graph/dependency-graph';
import { AwaitMap, AwaitMapRollback, hydrateMapValue, rollbackMap, runMap, type MapHost } from '../map/map-runner';
import type { MapStore } from '../ports/map-store.port';
import type { ReactorJob } from '../ports/job-dispatcher.port';
import type { MiddlewareRunner } from '../middleware/middleware-runner';
import type { Clock } from '../ports/clock.port';
import type { Lease } from '../ports/lock-manager.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import type { StepResolver } from '../ports/step-resolver.port';
import type { RollbackFailure, RunFailure, RunOutcome } from '../results/run-outcome';
import { Failure, Halt, Skipped, Success, isStepOutcome, type StepOutcome } from '../results/step-outcome';
import { isStepSignal } from '../results/step-signal';
import { NestedFailure } from '../results/nested-failure';
import { describeFieldErrors, validateDto, validateReactorInputs } from '../validation/validate';
import { redactArgs, redactInputs } from '../definition/redaction';
import { backoffDelay } from '../definition/retry-policy';
import { RUN_STATE_SCHEMA_VERSION, type RunState, type TraceEntry, type UndoEntry } from '../model/run-state';

/** Everything an execution needs from its host. */
export interface ExecutionEnv {
  storage: ReactorStorage;
  clock: Clock;
  middleware: MiddlewareRunner;
  resolver: StepResolver;
  /** Look up a reactor definition by name (composed children). */
  definition(name: string): ReactorDefinition;
  /** `caller`: the process that called run (retries sleep, hand-offs apply). `worker`: a job. */
  mode: 'caller' | 'worker';
  /** The run's lease; every save is fenced by it. */
  lease?: Lease;
  leaseTtlMs?: number;
  /** Mid-run checkpoints closer together than this are coalesced. @default 0 */
  checkpointMinIntervalMs?: number;
  /**
   * Enqueue a resume of the (root) run, after its state was saved. Needed for hand-offs and for
   * retries in workers; without it, a hand-off is ignored and retries sleep.
   */
  enqueueResume?: (runId: string, reactorName: string, delayMs: number) => Promise<void>;
  /** Storage of fan-out maps; without it, maps run inline. */
  maps?: MapStore;
  /** Enqueue jobs (map elements and their rollbacks). */
  dispatch?: (jobs: ReactorJob[], delayMs?: number) => Promise<void>;
  /** The top-level run; fan-out maps resume it. Defaults to this run. */
  owner?: { runId: string; reactorName: string };
  /** This execution is a map element: nested maps run inline. */
  inElement?: boolean;
}

type StepResult =
  | { kind: 'success' | 'skipped'; step: StepDefinition; value: unknown; args: Record<string, unknown> }
  | { kind: 'halt'; step: StepDefinition; reason: string; details?: unknown }
  | {
      kind: 'failure';
      step: StepDefinition;
      failure: RunFailure;
      error: unknown;
      args: Record<string, unknown>;
      compensate: boolean;
    }
  | { kind: 'retry'; step: StepDefinition; delayMs: number }
  | { kind: 'wait'; step: StepDefinition };

/** Create the initial state of a run. */
export function newRunState(
  def: ReactorDefinition,
  runId: string,
  inputs: Record<string, unknown>,
  now: number,
): RunState {
  return {
    schemaVersion: RUN_STATE_SCHEMA_VERSION,
    runId,
    reactorName: def.name,
    definitionHash: def.hash,
    status: 'pending',
    inputs,
    results: {},
    completed: [],
    undoStack: [],
    attempts: {},
    trace: [],
    children: {},
    createdAt: now,
    updatedAt: now,
  };
}

/** Build the caller-facing outcome from a run's state. */
export function outcomeOf<T = unknown>(state: RunState): RunOutcome<T> {
  const base = {
    runId: state.runId,
    reactorName: state.reactorName,
    results: state.results,
    trace: state.trace,
    attempts: state.attempts,
  };
  switch (state.status) {
    case 'completed':
      return { ...base, status: 'completed', value: state.value as T };
    case 'failed':
      return { ...base, status: 'failed', failure: state.failure ?? brokenFailure(state) };
    case 'halted':
      return {
        ...base,
        status: 'halted',
        stepName: state.halt?.step ?? '',
        reason: state.halt?.reason ?? '',
        details: state.halt?.details,
      };
    case 'cancelled':
      return {
        ...base,
        status: 'cancelled',
        reason: state.cancellation?.reason ?? 'cancelled',
        rollbackFailures: state.cancellation?.rollbackFailures ?? [],
      };
    case 'paused':
      return { ...base, status: 'paused', stepName: state.handoff?.step ?? '' };
    default:
      return { ...base, status: 'dispatched' };
  }
}

function brokenFailure(state: RunState): RunFailure {
  return {
    message: `Run '${state.runId}' failed without a recorded reason.`,
    code: 'INTERNAL',
    reactorName: state.reactorName,
    exceptionClass: 'Error',
    errorMessage: 'unknown',
    retryable: false,
    inputs: {},
    rollbackFailures: [],
  };
}

/** Runs (or resumes) one run of a reactor. */
export class RunExecution {
  private lastCheckpoint = 0;
  /** Errors of failing steps in this process, handed to `compensate` as they were thrown. */
  private readonly liveErrors = new Map<string, unknown>();

  /**
   * @param save saves the root run; a composed child saves through its parent.
   * @param root whether this is the top-level run (emits reactor events, applies hand-offs).
   */
  constructor(
    private readonly def: ReactorDefinition,
    readonly state: RunState,
    private readonly env: ExecutionEnv,
    private readonly save: (terminal: boolean) => Promise<void>,
    private readonly root = true,
  ) {}

  /**
   * Save the root run through the storage port, fenced by the lease. A `final` save ends this
   * execution (terminal, hand-off, scheduled retry) and releases the lease in the same write.
   */
  static saver(
    env: ExecutionEnv,
    rootState: RunState,
    options: { reopen?: boolean; onRelease?: () => void } = {},
  ): (final: boolean) => Promise<void> {
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

  /** Execute until the run completes, fails, halts, or hands off. */
  async execute(resumed: boolean): Promise<RunOutcome> {
    try {
      return await this.executeSteps(resumed);
    } catch (error) {
      if (!(error instanceof AwaitMapRollback) || !this.root) throw error;
      return this.parkOnMapRollback();
    }
  }

  /**
   * A fan-out map is being rolled back by element jobs: end this execution (the run stays
   * `rolling_back`, its lease released); the last element rollback resumes the run.
   */
  private async parkOnMapRollback(): Promise<RunOutcome> {
    this.state.handoff = { mode: 'map' };
    await this.save(true);
    return outcomeOf(this.state);
  }

  private async executeSteps(resumed: boolean): Promise<RunOutcome> {
    const { state } = this;
    await this.emit({ type: 'reactor.start', resumed });
    delete state.handoff;
    if (state.status === 'rolling_back' && state.rollback) {
      await this.finishRollback();
      return this.finish();
    }
    const wasRunning = state.status === 'running';
    state.status = 'running';
    if (!wasRunning) await this.save(false);

    const result = await this.loop();
    if (result.failures.length > 0) {
      await this.rollback(result.failures);
    } else if (result.halt) {
      state.status = 'halted';
      state.halt = { step: result.halt.step.name, reason: result.halt.reason, details: result.halt.details };
      state.finishedAt = this.env.clock.now();
      await this.save(this.root);
    } else if (result.handoff) {
      state.handoff = result.handoff.mode;
      await this.save(this.root);
      if (this.root && this.env.enqueueResume && result.handoff.delayMs >= 0) {
        await this.env.enqueueResume(state.runId, state.reactorName, result.handoff.delayMs);
      }
      return outcomeOf(state);
    } else {
      state.value = this.def.returns ? this.resolveSource(this.def.returns) : { ...state.results };
      state.status = 'completed';
      state.finishedAt = this.env.clock.now();
      await this.save(this.root);
    }
    return this.finish();
  }

  /** Undo every completed step of a finished run (manual undo); the run ends `cancelled`. */
  async undo(reason: string): Promise<RunOutcome> {
    this.state.status = 'rolling_back';
    this.state.rollback = { target: 'cancelled', compensate: [], failures: [] };
    this.state.cancellation = { reason, rollbackFailures: [] };
    await this.save(false);
    try {
      await this.finishRollback();
    } catch (error) {
      if (!(error instanceof AwaitMapRollback)) throw error;
      return this.parkOnMapRollback();
    }
    return outcomeOf(this.state);
  }

  private async finish(): Promise<RunOutcome> {
    const outcome = outcomeOf(this.state);
    if (outcome.status === 'failed') await this.emit({ type: 'reactor.fail', failure: outcome.failure });
    else await this.emit({ type: 'reactor.complete', outcome });
    return outcome;
  }

  private async loop(): Promise<{
    failures: Array<Extract<StepResult, { kind: 'failure' }>>;
    halt?: Extract<StepResult, { kind: 'halt' }>;
    handoff?: { mode: NonNullable<RunState['handoff']>; delayMs: number };
  }> {
    const { def, state } = this;
    const finished = new Set(state.completed);
    const started = new Set<string>();
    const running = new Map<string, Promise<StepResult>>();
    const failures: Array<Extract<StepResult, { kind: 'failure' }>> = [];
    let halt: Extract<StepResult, { kind: 'halt' }> | undefined;
    let handoff: { mode: NonNullable<RunState['handoff']>; delayMs: number } | undefined;
    let wave: StepDefinition[] = [];
    const sequential = def.maxConcurrency === 1;
    const background = this.root && this.env.mode === 'caller' && this.env.enqueueResume ? def.background : undefined;

    const start = (step: StepDefinition): boolean => {
      if (background && 'before' in background && background.before === step.name) {
        handoff = { mode: { mode: 'before', step: step.name }, delayMs: 0 };
        this.trace({ type: 'handoff', step: step.name, detail: 'before' });
        return false;
      }
      started.add(step.name);
      running.set(step.name, this.runStep(step));
      return true;
    };

    for (;;) {
      const stopping = failures.length > 0 || halt !== undefined || handoff !== undefined;
      if (!stopping) {
        if (sequential) {
          if (running.size === 0) {
            if (wave.length === 0) wave = readySteps(def.steps, finished, started);
            const next = wave.shift();
            if (next) start(next);
          }
        } else {
          for (const step of readySteps(def.steps, finished, started)) {
            if (running.size >= def.maxConcurrency || !start(step)) break;
          }
        }
      }
      if (running.size === 0) break;

      const settled = await Promise.race(running.values());
      running.delete(settled.step.name);
      switch (settled.kind) {
        case 'success':
        case 'skipped': {
          const name = settled.step.name;
          state.results[name] = settled.value;
          state.completed.push(name);
          finished.add(name);
          if (settled.kind === 'success')
            state.undoStack.push({ step: name, args: settled.args, result: settled.value });
          if (state.retryAt) delete state.retryAt[name];
          this.trace({ type: settled.kind === 'success' ? 'complete' : 'skip', step: name });
          await this.emitStep(settled.step, { type: 'step.complete', outcome: settled.kind });
          if (background && 'after' in background && background.after === name) {
            handoff = { mode: { mode: 'after', step: name }, delayMs: 0 };
            this.trace({ type: 'handoff', step: name, detail: 'after' });
          }
          // The last step needs no checkpoint of its own: the final save follows at once.
          if (running.size === 0 && finished.size === def.steps.length) break;
          try {
            await this.checkpoint();
          } catch (error) {
            if (!(error instanceof ContextTooLargeError)) throw error;
            failures.push(await this.tooLarge(settled, error));
            finished.delete(name);
          }
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
        case 'retry':
          handoff = handoff ?? { mode: { mode: 'all', step: settled.step.name }, delayMs: settled.delayMs };
          break;
        case 'wait':
          // A fan-out map: the run waits for its elements; the last one resumes it (no job now).
          handoff = handoff ?? { mode: { mode: 'map', step: settled.step.name }, delayMs: -1 };
          break;
      }
      // A sequential pass ends at the first terminal outcome.
      if (sequential && (failures.length > 0 || halt || handoff)) wave = [];
    }
    if (failures.length === 0 && !halt && !handoff && finished.size < def.steps.length) {
      // Unreachable for a validated definition; guards against a corrupt resumed state.
      throw new ReactorError('INTERNAL', `Reactor '${def.name}': no ready steps but the run is not complete.`);
    }
    return { failures, halt, handoff };
  }

  /** Save a mid-run checkpoint, coalesced by `checkpointMinIntervalMs`. */
  private async checkpoint(): Promise<void> {
    const min = this.env.checkpointMinIntervalMs ?? 0;
    const now = this.env.clock.now();
    if (min > 0 && now - this.lastCheckpoint < min) return;
    this.lastCheckpoint = now;
    await this.save(false);
  }

  private async runStep(step: StepDefinition): Promise<StepResult> {
    let args: Record<string, unknown>;
    try {
      args = this.resolveArgs(step);
    } catch (error) {
      const cause = error as Error;
      const wrapped = new ArgumentResolutionError(
        `Reactor '${this.def.name}' step '${step.name}' could not resolve its arguments: ${cause?.message ?? String(error)}`,
        this.def.name,
        step.name,
        errorClass(error),
      );
      return this.failed(step, wrapped, {}, false, errorClass(error));
    }
    const shownArgs = redactArgs(step, args);
    await this.emitStep(step, {
      type: 'step.start',
      attempt: (this.state.attempts[step.name] ?? 0) + 1,
      arguments: shownArgs,
    });

    if (step.input) {
      const fieldErrors = await validateDto(step.input, args);
      if (Object.keys(fieldErrors).length > 0) {
        const error = new InputValidationError(
          `Reactor '${this.def.name}' step '${step.name}': input validation failed (${step.input.name}): ${describeFieldErrors(fieldErrors)}`,
          fieldErrors,
          this.def.name,
          step.name,
        );
        return this.failed(step, error, args, false);
      }
    }

    for (;;) {
      // Re-entering a fan-out map to adopt its results is not a new attempt.
      const adopting = step.handler.kind === 'map' && this.state.maps?.[step.name]?.mode === 'fanOut';
      const attempt = (this.state.attempts[step.name] ?? 0) + (adopting ? 0 : 1);
      this.state.attempts[step.name] = attempt;
      this.trace(
        adopting
          ? { type: 'run', step: step.name, attempt, detail: 'adopting the map results' }
          : { type: 'run', step: step.name, attempt, arguments: shownArgs },
      );
      let outcome = await this.invoke(step, args, attempt);

      if ((outcome instanceof Success || outcome instanceof Skipped) && step.output) {
        const fieldErrors = await validateDto(step.output, outcome.value);
        if (Object.keys(fieldErrors).length > 0) {
          outcome = new Failure(
            new InputValidationError(
              `Reactor '${this.def.name}' step '${step.name}': output validation failed (${step.output.name}): ${describeFieldErrors(fieldErrors)}`,
              fieldErrors,
              this.def.name,
              step.name,
            ),
            { retryable: false },
          );
        }
      }

      if (outcome instanceof AwaitMap) return { kind: 'wait', step };
      if (outcome instanceof Success) return { kind: 'success', step, value: outcome.value, args };
      if (outcome instanceof Skipped) return { kind: 'skipped', step, value: outcome.value, args };
      if (outcome instanceof Halt) return { kind: 'halt', step, reason: outcome.reason, details: outcome.details };

      if (outcome instanceof NestedFailure) {
        const nested = outcome.failure;
        this.trace({ type: 'fail', step: step.name, attempt, detail: nested.errorMessage });
        return {
          kind: 'failure',
          step,
          failure: { ...nested, rollbackFailures: [...nested.rollbackFailures] },
          error: outcome.error,
          args,
          compensate: outcome.compensate,
        };
      }

      if (outcome.retryable && attempt < step.retries.maxAttempts) {
        const delayMs = backoffDelay(step.retries, attempt);
        this.trace({ type: 'retry', step: step.name, attempt, delayMs, detail: errorMessage(outcome.error) });
        await this.emitStep(step, { type: 'step.retry', attempt, delayMs, error: errorMessage(outcome.error) });
        if (this.env.mode === 'worker' && this.env.enqueueResume) {
          this.state.retryAt = { ...this.state.retryAt, [step.name]: this.env.clock.now() + delayMs };
          return { kind: 'retry', step, delayMs };
        }
        await this.env.clock.sleep(delayMs);
        continue;
      }
      return this.failed(step, outcome.error, args, true, undefined, attempt, outcome.retryable);
    }
  }

  /** Call the step's body and normalize what it did into an outcome. */
  private async invoke(
    step: StepDefinition,
    args: Record<string, unknown>,
    attempt: number,
  ): Promise<StepOutcome<unknown> | AwaitMap> {
    if (step.handler.kind === 'compose') return this.runChild(step, args);
    if (step.handler.kind === 'map') return runMap(this.mapHost(), step, args);
    const handler = this.handlerFor(step);
    try {
      const result: unknown = await handler.run(args as never, this.context(step, attempt));
      if (isStepOutcome(result)) return result;
      return new Failure(new UnexpectedResultError(this.def.name, step.name, describeValue(result)), {
        retryable: false,
      });
    } catch (error) {
      if (isStepSignal(error)) return error.outcome;
      return new Failure(error);
    }
  }

  /** Run a composed child inside this step. Its state lives in the parent's `children`. */
  private async runChild(
    step: StepDefinition,
    args: Record<string, unknown>,
  ): Promise<StepOutcome<unknown> | AwaitMap> {
    const childDef = this.env.definition((step.handler as { reactorName: string }).reactorName);
    let childState = this.state.children[step.name];
    if (!childState || childState.status === 'failed' || childState.status === 'cancelled') {
      const { inputs, errors } = await validateReactorInputs(childDef.inputs, args);
      if (Object.keys(errors).length > 0) {
        const error = new InputValidationError(
          `Reactor '${childDef.name}' (composed as '${step.name}' in '${this.def.name}'): input validation failed: ${describeFieldErrors(errors)}`,
          errors,
          childDef.name,
        );
        return new Failure(error, { retryable: false });
      }
      childState = newRunState(childDef, `${this.state.runId}/${step.name}`, inputs, this.env.clock.now());
      this.state.children[step.name] = childState;
    }
    const child = new RunExecution(childDef, childState, this.env, this.save, false);
    const outcome = await child.execute(false);
    switch (outcome.status) {
      case 'completed':
        return new Success(outcome.value);
      case 'halted':
        return new Halt(outcome.reason, outcome.details);
      case 'failed':
        // The child already rolled itself back: nothing left to compensate here.
        return new NestedFailure(outcome.failure, false);
      case 'dispatched':
        // The child waits for a fan-out map (or a scheduled retry): the parent waits with it.
        return new AwaitMap();
      default:
        throw new ReactorError(
          'INTERNAL',
          `Composed reactor '${childDef.name}' ended ${outcome.status}, which compose does not support.`,
        );
    }
  }

  /**
   * Whether undoing this run would do anything: some completed step has an `undo` (or is a
   * compose or map step). Map elements without it keep no state for rollback.
   */
  hasUndoWork(): boolean {
    return this.state.undoStack.some((entry) => {
      const step = this.def.stepsByName.get(entry.step);
      if (!step) return false;
      if (step.handler.kind === 'compose' || step.handler.kind === 'map') return true;
      return typeof this.handlerFor(step).undo === 'function';
    });
  }

  /** What the map runner needs from this execution. */
  private mapHost(): MapHost {
    const env = this.env;
    return {
      def: this.def,
      state: this.state,
      owner: env.owner ?? { runId: this.state.runId, reactorName: this.def.name },
      inElement: env.inElement === true,
      maps: env.dispatch ? env.maps : undefined,
      now: () => env.clock.now(),
      definition: (name) => env.definition(name),
      resolveSource: (source, element) => this.resolveSource(source, element),
      elementExecution: (def, state) =>
        new RunExecution(
          def,
          state,
          { ...env, inElement: true, enqueueResume: undefined, lease: undefined },
          async () => undefined,
          false,
        ),
      save: () => this.save(false),
      dispatchElements: async (mapId, indices, kind) => {
        if (indices.length === 0) return;
        const owner = env.owner ?? { runId: this.state.runId, reactorName: this.def.name };
        await env.dispatch!(
          indices.map((index) => ({ kind, runId: owner.runId, reactorName: owner.reactorName, mapId, index })),
        );
      },
      context: (step) => this.context(step, this.state.attempts[step.name] ?? 1),
    };
  }

  private handlerFor(step: StepDefinition): StepHandler<never, unknown> {
    const spec = step.handler;
    if (spec.kind === 'inline') return spec.handler;
    if (spec.kind === 'class') return this.env.resolver.resolve(spec.stepClass);
    throw new ReactorError('INTERNAL', `Step '${step.name}' has no handler.`);
  }

  private context(step: StepDefinition, attempt: number): StepContext {
    return { runId: this.state.runId, reactorName: this.def.name, stepName: step.name, attempt };
  }

  private resolveArgs(step: StepDefinition): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, source] of Object.entries(step.args)) out[key] = this.resolveSource(source);
    return out;
  }

  /** Resolve a source against this run's state (and, for `element` sources, the current element). */
  resolveSource(source: ArgSource, element?: unknown): unknown {
    const raw =
      source.kind === 'input'
        ? this.state.inputs[source.name]
        : source.kind === 'result'
          ? this.hydrate(this.state.results[source.step])
          : source.kind === 'element'
            ? element
            : source.value;
    return applyOps(raw, source.ops);
  }

  /** Turn a stored map value into its results object. */
  private hydrate(value: unknown): unknown {
    return hydrateMapValue(value, this.env.maps);
  }

  private failed(
    step: StepDefinition,
    error: unknown,
    args: Record<string, unknown>,
    compensate: boolean,
    exceptionClass = errorClass(error),
    attempts = this.state.attempts[step.name] ?? 0,
    retryable = error instanceof ReactorError ? error.retryable : errorRetryable(error),
  ): StepResult {
    const message = errorMessage(error);
    const failure: RunFailure = {
      message:
        attempts > 0
          ? `Reactor '${this.def.name}' step '${step.name}' failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${message}`
          : `Reactor '${this.def.name}' step '${step.name}' failed: ${message}`,
      code: error instanceof ReactorError ? error.code : 'STEP_FAILED',
      reactorName: this.def.name,
      stepName: step.name,
      exceptionClass,
      errorMessage: message,
      retryable,
      attempts,
      inputs: redactInputs(this.def, this.state.inputs),
      stepArguments: redactArgs(step, args),
      fieldErrors: error instanceof InputValidationError ? error.fieldErrors : undefined,
      rollbackFailures: [],
    };
    if (failure.fieldErrors === undefined) delete failure.fieldErrors;
    this.trace({ type: 'fail', step: step.name, attempt: attempts || undefined, detail: message });
    return { kind: 'failure', step, failure, error, args, compensate };
  }

  /**
   * A step's result made the run too large to store. Take the step back off the run (undoing it
   * at once, in memory, since its result cannot be saved) and fail it with the error.
   */
  private async tooLarge(
    settled: Extract<StepResult, { kind: 'success' | 'skipped' }>,
    error: ContextTooLargeError,
  ): Promise<Extract<StepResult, { kind: 'failure' }>> {
    const name = settled.step.name;
    const { state } = this;
    delete state.results[name];
    state.completed = state.completed.filter((s) => s !== name);
    const top = state.undoStack[state.undoStack.length - 1];
    const undoFailures =
      settled.kind === 'success' && top?.step === name ? await this.undoEntry(state.undoStack.pop()!) : [];
    const result = this.failed(settled.step, error, settled.args, false) as Extract<StepResult, { kind: 'failure' }>;
    result.failure.rollbackFailures.push(...undoFailures);
    return result;
  }

  /**
   * Compensate failing steps whose body started, then undo completed steps newest first, then
   * mark the run failed. The plan is saved first (status `rolling_back`), so a worker finishes it
   * if this process dies.
   */
  private async rollback(failures: Array<Extract<StepResult, { kind: 'failure' }>>): Promise<void> {
    const { state } = this;
    state.failure = failures[0].failure;
    state.rollback = {
      target: 'failed',
      compensate: failures
        .filter((f) => f.compensate)
        .map((f) => ({ step: f.step.name, args: f.args, message: f.failure.errorMessage })),
      failures: failures.flatMap((f) => f.failure.rollbackFailures),
    };
    for (const f of failures) if (f.compensate) this.liveErrors.set(f.step.name, f.error);
    state.status = 'rolling_back';
    await this.save(false);
    await this.finishRollback();
    for (const f of failures) {
      await this.emitStep(f.step, {
        type: 'step.fail',
        error: f.failure.errorMessage,
        attempts: f.failure.attempts ?? 0,
      });
    }
  }

  /** Carry out (or resume) the saved rollback plan, then end in its target status. */
  private async finishRollback(): Promise<void> {
    const { state } = this;
    const plan = state.rollback!;
    while (plan.compensate.length > 0) {
      const pending = plan.compensate[0];
      const step = this.def.stepsByName.get(pending.step);
      const error = this.liveErrors.get(pending.step) ?? new Error(pending.message);
      if (step) plan.failures.push(...(await this.compensate(step, error, pending.args)));
      plan.compensate.shift();
      await this.save(false);
    }
    await this.undoAll();
    if (plan.target === 'failed') {
      state.failure = { ...state.failure!, rollbackFailures: plan.failures };
      state.status = 'failed';
    } else {
      state.cancellation = { reason: state.cancellation?.reason ?? 'undo', rollbackFailures: plan.failures };
      state.status = 'cancelled';
    }
    delete state.rollback;
    state.finishedAt = this.env.clock.now();
    await this.save(this.root);
  }

  private async compensate(
    step: StepDefinition,
    error: unknown,
    args: Record<string, unknown>,
  ): Promise<RollbackFailure[]> {
    if (step.handler.kind === 'compose') return [];
    if (step.handler.kind === 'map') {
      await this.emitStep(step, { type: 'compensation.start' });
      const failures = await rollbackMap(this.mapHost(), step);
      this.trace({ type: 'compensate', step: step.name, ok: failures.length === 0 });
      await this.emitStep(
        step,
        failures.length
          ? { type: 'compensation.fail', error: `${failures.length} element rollback failure(s)` }
          : { type: 'compensation.complete' },
      );
      return failures;
    }
    const handler = this.handlerFor(step);
    await this.emitStep(step, { type: 'compensation.start' });
    if (!handler.compensate) {
      this.trace({ type: 'compensate', step: step.name, ok: true, detail: 'no compensate defined' });
      await this.emitStep(step, { type: 'compensation.complete' });
      return [];
    }
    const problem = await this.callRollback(() =>
      handler.compensate!(error, args as never, this.context(step, this.state.attempts[step.name] ?? 1)),
    );
    this.trace({ type: 'compensate', step: step.name, ok: !problem, detail: problem?.message });
    if (problem) {
      await this.emitStep(step, { type: 'compensation.fail', error: problem.message });
      return [
        {
          step: step.name,
          kind: 'compensate',
          reason: problem.reason,
          message: problem.message,
          reactorName: this.def.name,
        },
      ];
    }
    await this.emitStep(step, { type: 'compensation.complete' });
    return [];
  }

  /**
   * Undo every entry of the undo stack, newest first. An entry is popped only after its undo
   * returned, and the state is saved after each, so a crash mid-rollback leaves exactly the rest.
   */
  async undoAll(): Promise<RollbackFailure[]> {
    const failures: RollbackFailure[] = [];
    const { state } = this;
    while (state.undoStack.length > 0) {
      const entry = state.undoStack[state.undoStack.length - 1];
      const problems = await this.undoEntry(entry);
      failures.push(...problems);
      state.rollback?.failures.push(...problems);
      state.undoStack.pop();
      await this.save(false);
    }
    return failures;
  }

  private async undoEntry(entry: UndoEntry): Promise<RollbackFailure[]> {
    const step = this.def.stepsByName.get(entry.step);
    if (!step) {
      return [
        {
          step: entry.step,
          kind: 'undo',
          reason: 'raised',
          message: `step '${entry.step}' is not in the definition`,
          reactorName: this.def.name,
        },
      ];
    }
    await this.emitStep(step, { type: 'undo.start' });
    if (step.handler.kind === 'map') {
      const failures = await rollbackMap(this.mapHost(), step);
      this.trace({ type: 'undo', step: step.name, ok: failures.length === 0 });
      await this.emitStep(
        step,
        failures.length
          ? { type: 'undo.fail', error: `${failures.length} element rollback failure(s)` }
          : { type: 'undo.complete' },
      );
      return failures;
    }
    if (step.handler.kind === 'compose') {
      const childState = this.state.children[step.name];
      const childFailures = childState
        ? await new RunExecution(
            this.env.definition(childState.reactorName),
            childState,
            this.env,
            this.save,
            false,
          ).undoChild()
        : [];
      this.trace({ type: 'undo', step: step.name, ok: childFailures.length === 0 });
      await this.emitStep(
        step,
        childFailures.length
          ? { type: 'undo.fail', error: `${childFailures.length} child rollback failure(s)` }
          : { type: 'undo.complete' },
      );
      return childFailures;
    }
    const handler = this.handlerFor(step);
    if (!handler.undo) {
      this.trace({ type: 'undo', step: step.name, ok: true, detail: 'no undo defined' });
      await this.emitStep(step, { type: 'undo.complete' });
      return [];
    }
    const problem = await this.callRollback(() =>
      handler.undo!(entry.result, entry.args as never, this.context(step, this.state.attempts[step.name] ?? 1)),
    );
    this.trace({ type: 'undo', step: step.name, ok: !problem, detail: problem?.message });
    if (problem) {
      await this.emitStep(step, { type: 'undo.fail', error: problem.message });
      return [
        { step: step.name, kind: 'undo', reason: problem.reason, message: problem.message, reactorName: this.def.name },
      ];
    }
    await this.emitStep(step, { type: 'undo.complete' });
    return [];
  }

  /** Undo a composed child that had completed (its parent is being rolled back). */
  private async undoChild(): Promise<RollbackFailure[]> {
    const failures = await this.undoAll();
    this.state.status = 'cancelled';
    this.state.cancellation = { reason: 'parent rolled back', rollbackFailures: failures };
    return failures;
  }

  /** Run an undo or compensate; a throw or a returned Failure is a problem, anything else is fine. */
  private async callRollback(
    fn: () => unknown,
  ): Promise<{ reason: 'raised' | 'returnedFailure'; message: string } | undefined> {
    try {
      const result = await fn();
      if (result instanceof Failure) return { reason: 'returnedFailure', message: errorMessage(result.error) };
      return undefined;
    } catch (error) {
      if (isStepSignal(error)) {
        return error.outcome instanceof Failure
          ? { reason: 'returnedFailure', message: errorMessage(error.outcome.error) }
          : undefined;
      }
      return { reason: 'raised', message: errorMessage(error) };
    }
  }

  private trace(entry: Omit<TraceEntry, 'at'>): void {
    this.state.trace.push({ ...entry, at: this.env.clock.now() } as TraceEntry);
  }

  private async emit(
    event: DistributiveOmit<Parameters<MiddlewareRunner['emit']>[0], 'runId' | 'reactorName' | 'at'>,
  ): Promise<void> {
    if (this.env.middleware.empty) return;
    await this.env.middleware.emit({
      ...event,
      runId: this.state.runId,
      reactorName: this.def.name,
      at: this.env.clock.now(),
    } as never);
  }

  private async emitStep(
    step: StepDefinition,
    event: DistributiveOmit<Parameters<MiddlewareRunner['emit']>[0], 'runId' | 'reactorName' | 'at' | 'step'>,
  ): Promise<void> {
    if (this.env.middleware.empty) return;
    await this.emit({ ...event, step: step.name } as never);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

function errorClass(error: unknown): string {
  if (error instanceof Error) return error.constructor?.name ?? error.name;
  return typeof error;
}

function errorRetryable(error: unknown): boolean {
  if (
    error &&
    typeof error === 'object' &&
    'retryable' in error &&
    typeof (error as { retryable: unknown }).retryable === 'boolean'
  ) {
    return (error as { retryable: boolean }).retryable;
  }
  return true;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'object') return `a plain ${Array.isArray(value) ? 'array' : 'object'}`;
  return `a ${typeof value}`;
}
