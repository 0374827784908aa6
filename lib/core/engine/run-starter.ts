import { randomUUID } from 'node:crypto';
import type { ReactorDefinition } from '../definition/definition';
import { redactInputs } from '../definition/redaction';
import { ConfigurationError } from '../errors/configuration.error';
import { InputValidationError } from '../errors/input-validation.error';
import { IdempotencyConflictError, InvalidRunStateError, LeaseLostError } from '../errors/run-state.error';
import { UnstorableValueError } from '../errors/unstorable-value.error';
import { errorMessage, runFailure, type FieldErrors } from '../model/failure';
import { inputsHash } from '../model/inputs-hash';
import { jsonProblem } from '../model/json-values';
import { runLeaseKey } from '../model/keys';
import { checkRunId } from './run-id';
import { isTerminal, newRunState, type RunState } from '../model/run-state';
import { checkTags } from '../validation/run-tags';
import type { Lease } from '../ports/lock-manager.port';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import { isWellFormed } from '../validation/arguments';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import type { Holding } from './coordination';
import { CoordinationContendedError } from '../errors/coordination.error';
import type { Dispatch } from './dispatch';
import type { EngineParts, RunOptions } from './engine-options';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';
import type { Waiters } from './waiters';
import type { FlowControl } from './flow';
import type { FlowHandle } from '../results/run-outcome';

/** A retry's source run and count; `seed` fills the new state (a redrive's reused steps) before it is stored. */
export interface RetryOf {
  runId: string;
  count: number;
  seed?: (state: RunState) => void;
}

/** Starting runs: validate inputs, store the new run, then execute it here or hand it to a worker. */
export class RunStarter {
  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
    private readonly waiters: Waiters,
    private readonly newRunId: () => string = randomUUID,
    private readonly flow?: FlowControl,
  ) {}

  /** Run in this process until done or a hand-off (the outcome is then `dispatched`). */
  async run<I, O>(target: ReactorDefinition<I, O> | string, input: I, options: RunOptions): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    if (this.flow?.gathers(def)) return this.gathered<O>(def, input, options);
    const background = def.background !== undefined && 'all' in def.background;
    const prepared = await this.prepare(def, input, options, background ? 'handoff' : 'caller');
    if (prepared.held) return { ...outcomeOf<O>(prepared.state), flow: prepared.held } as RunOutcome<O>;
    if (prepared.replayed) {
      // The first call's run: its outcome once it has one (the first caller may still be running it).
      const { state } = prepared;
      const settled = isTerminal(state.status) || background ? state : await this.waiters.until(state.runId);
      return { ...outcomeOf<O>(settled), replayed: true };
    }
    const handedOff = prepared.state.handoff?.mode === 'all'; // waiting for its turn on an ordered lock
    if (prepared.state.status === 'failed' || prepared.state.status === 'halted' || background || handedOff) {
      return outcomeOf<O>(prepared.state);
    }
    return (await this.executions.execute(
      def,
      prepared.state,
      prepared.lease!,
      'caller',
      false,
      prepared.holding,
    )) as RunOutcome<O>;
  }

  /** Store the run and hand it to a worker; resolves once it is stored. */
  async start<I, O>(
    target: ReactorDefinition<I, O> | string,
    input: I,
    options: RunOptions,
    retryOf?: RetryOf,
  ): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    // A retry of a gathered run starts with that run's inputs (a batch's `{ items }`), gathered once already.
    if (this.flow?.gathers(def) && !retryOf) return this.gathered<O>(def, input, options);
    const prepared = await this.prepare(def, input, options, 'handoff', retryOf);
    const outcome = outcomeOf<O>(prepared.state);
    if (prepared.held) return { ...outcome, flow: prepared.held } as RunOutcome<O>;
    return prepared.replayed ? { ...outcome, replayed: true } : outcome;
  }

  /**
   * A start of a debounced or batched reactor: it joins its key's gather, whose run (stored
   * `pending` by the start that finds it missing) a worker starts when the gather is due. Invalid
   * inputs of a debounced start fail a run of their own, as any start's do.
   */
  private async gathered<O>(def: ReactorDefinition, input: unknown, options: RunOptions): Promise<RunOutcome<O>> {
    const { storage } = this.parts;
    if (options.tags !== undefined) checkTags(`Reactor '${def.name}': option tags`, options.tags);
    // Starts that are gathered share one run: a given `runId` or `idempotencyKey` cannot name it,
    // so either one dedupes the start instead (an event delivered twice, a schedule's tick handled
    // twice): the same token again replays the first start, answering the gather's run id.
    const token =
      options.idempotencyKey !== undefined
        ? `key:${String(options.idempotencyKey)}`
        : options.runId !== undefined
          ? `runId:${String(options.runId)}`
          : undefined;
    if (options.runId !== undefined)
      checkRunId(options.runId, `Reactor '${def.name}': option runId`, 'Omit runId for a new one.');
    const startId = this.newRunId();
    if (token !== undefined) {
      const bound = await this.runIdFor(def, { runId: startId, idempotencyKey: token });
      if (bound !== startId) {
        // A replay: the run its first start joined (stored by then, or about to be).
        const found = await storage.load(bound);
        const shell = {
          runId: bound,
          reactorName: def.name,
          results: {},
          trace: [],
          attempts: {},
          status: 'dispatched' as const,
        };
        return { ...(found ? outcomeOf<O>(found) : shell), replayed: true } as RunOutcome<O>;
      }
    }
    try {
      return await this.gather<O>(def, input, startId, token, options.tags);
    } catch (error) {
      // Refused before it joined a gather (a key function that throws, an input JSON cannot hold):
      // the token is not the start's.
      if (token !== undefined) await this.unbind(def, startId, { idempotencyKey: token }, error);
      throw error;
    }
  }

  private async gather<O>(
    def: ReactorDefinition,
    input: unknown,
    startId: string,
    token: string | undefined,
    tags: Readonly<Record<string, string>> | undefined,
  ): Promise<RunOutcome<O>> {
    const flow = this.flow!;
    const { clock, storage, idempotencyWindowMs } = this.parts;
    let inputs: Record<string, unknown> = {};
    if (def.flow?.debounce) {
      const validated = await validateReactorInputs(def.inputs, input, { fresh: true });
      if (Object.keys(validated.errors).length > 0) {
        const failed = newRunState(def, startId, validated.inputs, clock.now());
        failInputs(def, failed, validated.errors);
        await this.create(def, failed, undefined);
        return outcomeOf<O>(failed);
      }
      inputs = validated.inputs;
    } else {
      const problem = jsonProblem(input);
      if (problem !== undefined) {
        throw new InputValidationError(
          `Reactor '${def.name}': a batched start's input cannot be stored as it is: ${problem} (use JSON-compatible values)`,
          { input: [`cannot be stored as it is: ${problem}`] },
          def.name,
        );
      }
    }
    const gathered = await flow.gather(def, startId, inputs, input);
    if (
      token !== undefined &&
      gathered.runId !== startId &&
      storage.releaseIdempotencyKey &&
      storage.claimIdempotencyKey
    ) {
      // The start joined an open gather: its token names the gather's run from now on (a duplicate
      // arriving between these two writes is not recognized: it joins the gather again).
      await storage.releaseIdempotencyKey(def.name, token, startId);
      await storage.claimIdempotencyKey(def.name, token, gathered.runId, idempotencyWindowMs);
    }
    const state = newRunState(
      def,
      gathered.runId,
      def.flow?.debounce ? inputs : { items: [input ?? null] },
      clock.now(),
    );
    state.status = 'pending';
    state.flow = {
      wait: gathered.handle.state as 'debounced' | 'batched',
      key: gathered.handle.key,
      at: gathered.handle.startAt,
    };
    // The gather's run carries the tags of the start that stores it (the first one).
    if (tags !== undefined && Object.keys(tags).length > 0) state.tags = { ...tags };
    // The first start to find the gather's run missing stores it and wakes it when it is due.
    const created = await storage.save(state, { createOnly: true });
    if (created || gathered.full)
      await this.dispatch.resume(gathered.runId, def.name, gathered.full ? 0 : gathered.dueInMs);
    return { ...outcomeOf<O>(state), flow: gathered.handle } as RunOutcome<O>;
  }

  /**
   * The run id of a new run: `options.runId`, else a new one; with an idempotency key, the id the
   * key is bound to (this one, when the key is new).
   */
  private async runIdFor(def: ReactorDefinition, options: RunOptions): Promise<string> {
    const runId = options.runId === undefined ? this.newRunId() : options.runId;
    checkRunId(runId, `Reactor '${def.name}': option runId`, 'Omit runId for a new one.');
    const key = options.idempotencyKey;
    if (key === undefined) return runId;
    if (typeof key !== 'string' || key.length === 0 || key.length > 512) {
      throw new ConfigurationError(
        `Reactor '${def.name}': idempotencyKey must be a non-empty string of at most 512 characters.`,
      );
    }
    if (!isWellFormed(key)) {
      // Its UTF-8 form (a storage key) would not be its own: two keys could name one request.
      throw new ConfigurationError(
        `Reactor '${def.name}': idempotencyKey must be well-formed Unicode (it holds a lone surrogate). Build it from whole characters.`,
      );
    }
    const { storage, idempotencyWindowMs } = this.parts;
    if (!storage.claimIdempotencyKey) {
      throw new ConfigurationError(`Reactor '${def.name}': this storage adapter does not support idempotency keys.`);
    }
    return storage.claimIdempotencyKey(def.name, key, runId, idempotencyWindowMs);
  }

  /** The stored run with this id, to return instead of a second one; refused for another reactor's run. */
  private async existing(def: ReactorDefinition, runId: string): Promise<RunState | undefined> {
    const state = await this.parts.storage.load(runId);
    if (state && state.reactorName !== def.name) {
      throw new InvalidRunStateError(
        `A run with id '${runId}' exists for reactor '${state.reactorName}', not '${def.name}'; run ids must be unique.`,
        runId,
        'exists',
      );
    }
    return state;
  }

  private resolveTarget(target: ReactorDefinition | string): ReactorDefinition {
    if (typeof target === 'string') return this.registry.get(target);
    this.registry.register(target);
    return target;
  }

  /**
   * Store the new run (taking its lease in the same write when the caller executes it). Inputs
   * JSON cannot hold (a BigInt, a cycle, nesting too deep) fail the run as invalid inputs, naming
   * the field, instead of escaping as a bare error.
   */
  private async create(def: ReactorDefinition, state: RunState, lease: Lease | undefined): Promise<boolean> {
    const { storage, leaseTtlMs } = this.parts;
    const save = () =>
      storage.save(state, {
        createOnly: true,
        lease,
        leaseTtlMs: lease ? leaseTtlMs : undefined,
        acquireLease: lease !== undefined,
      });
    try {
      return await save();
    } catch (error) {
      if (!(error instanceof UnstorableValueError) || error.stepName !== undefined) throw error;
      const fieldErrors: FieldErrors = {};
      const inputs: Record<string, unknown> = {};
      for (const [field, value] of Object.entries(state.inputs)) {
        const problem = jsonProblem(value);
        if (problem) {
          fieldErrors[field] = [`cannot be stored as it is: ${problem}`];
          continue;
        }
        try {
          JSON.stringify(value);
          inputs[field] = value;
        } catch (cause) {
          fieldErrors[field] = [`cannot be stored: ${errorMessage(cause)} (use JSON-compatible values)`];
        }
      }
      if (Object.keys(fieldErrors).length === 0) throw error;
      state.inputs = inputs;
      delete state.handoff;
      failInputs(def, state, fieldErrors);
      lease = undefined;
      return save();
    }
  }

  /** Validate inputs and store the new run: failed when inputs are invalid, else running. */
  private async prepare<I>(
    def: ReactorDefinition,
    input: I,
    options: RunOptions,
    mode: 'caller' | 'handoff',
    retryOf?: RetryOf,
  ): Promise<{ state: RunState; lease?: Lease; replayed?: boolean; holding?: Holding; held?: FlowHandle }> {
    // Tags are checked before a key is bound (a refused start binds nothing).
    if (options.tags !== undefined) checkTags(`Reactor '${def.name}': option tags`, options.tags);
    // A key bound by an earlier call, or a given id, may name a run that exists: the create
    // (createOnly) says so, and that run is returned, without a read before every create.
    const runId = await this.runIdFor(def, options);
    try {
      const prepared = await this.prepareRun(def, runId, input, options, mode, retryOf);
      // A run that never started (its inputs were refused) gives its idempotency key back.
      if (!prepared.replayed && prepared.state.failure?.code === 'INPUT_VALIDATION')
        await this.unbind(def, runId, options);
      return prepared;
    } catch (error) {
      // The key is bound to another call's run, which keeps it.
      if (error instanceof IdempotencyConflictError) throw error;
      // Refused before it was stored (coordination, a failed create): the key is not the run's.
      await this.unbind(def, runId, options, error);
      throw error;
    }
  }

  /**
   * Give back the idempotency key this call bound to `runId`, for a run that never started, so the
   * next call with the key runs instead of replaying a run that never was. A key bound to another
   * run, or to a run that exists under a given `runId`, is left alone. Never throws: a key that
   * could not be given back stays bound until its window ends (logged).
   */
  private async unbind(def: ReactorDefinition, runId: string, options: RunOptions, thrown?: unknown): Promise<void> {
    const key = options.idempotencyKey;
    const { storage, logger } = this.parts;
    if (key === undefined || !storage.releaseIdempotencyKey) return;
    try {
      // With a given run id an earlier call may have bound the key to it for a run that exists.
      if (thrown !== undefined && options.runId !== undefined) {
        const existing = await storage.load(runId).catch(() => undefined);
        if (existing?.reactorName === def.name) return;
      }
      await storage.releaseIdempotencyKey(def.name, key, runId);
    } catch (error) {
      logger.warn(
        `Reactor '${def.name}': could not give back idempotency key '${key}' of run '${runId}', which never started: ${errorMessage(error)}. It stays bound until idempotencyWindowMs ends.`,
      );
    }
  }

  /**
   * The run an earlier call stored under this key or id, replayed: its inputs must be this call's
   * (runs stored before the hash existed are replayed as before).
   * @throws IdempotencyConflictError when the key's run was started with other inputs.
   */
  private replayOf(
    def: ReactorDefinition,
    found: RunState,
    options: RunOptions,
    hash: string | undefined,
  ): { state: RunState; replayed: true } {
    const key = options.idempotencyKey;
    if (key !== undefined && found.inputsHash !== undefined && found.inputsHash !== hash) {
      throw new IdempotencyConflictError(def.name, key, found.runId);
    }
    return { state: found, replayed: true };
  }

  private async prepareRun<I>(
    def: ReactorDefinition,
    runId: string,
    input: I,
    options: RunOptions,
    mode: 'caller' | 'handoff',
    retryOf?: RetryOf,
  ): Promise<{ state: RunState; lease?: Lease; replayed?: boolean; holding?: Holding; held?: FlowHandle }> {
    const { clock } = this.parts;
    const { inputs, errors } = await validateReactorInputs(def.inputs, input, { fresh: true });
    const state = newRunState(def, runId, inputs, clock.now());
    if (options.tags !== undefined && Object.keys(options.tags).length > 0) state.tags = { ...options.tags };
    if (retryOf) {
      state.retriedFrom = retryOf.runId;
      state.retryCount = retryOf.count;
      retryOf.seed?.(state);
    }
    // A key's run keeps a hash of its inputs, so that a later call with other inputs is refused.
    const hash = options.idempotencyKey === undefined ? undefined : inputsHash(runId, inputs);
    if (hash !== undefined) state.inputsHash = hash;
    let lease: Lease | undefined;
    if (Object.keys(errors).length > 0) {
      failInputs(def, state, errors);
    } else {
      state.status = 'running';
      if (mode === 'handoff') state.handoff = { mode: 'all' };
      // The caller executes the run: take its lease in the same write that creates it.
      else lease = this.leases.newLease(runLeaseKey(runId));
    }
    const coordination = this.executions.coordination;
    // A run that exists (a replay by key or id) is returned before this call takes any of the
    // reactor's coordination: a replay is not a run that starts (no rate charged, no turn taken on
    // an ordered lock, no lock contended with its own run). One read, for such calls only.
    const mayExist = options.idempotencyKey !== undefined || options.runId !== undefined;
    if (state.status === 'running' && ((def.coordination && coordination) || def.flow) && mayExist) {
      const found = await this.existing(def, runId);
      if (found) return this.replayOf(def, found, options, hash);
    }
    // Flow control (throttle, then concurrency): a run held back is stored `pending`, with no
    // lease and no coordination taken; a delayed one is woken when its window comes, a queued one
    // when a run of its key gives its slot back.
    if (state.status === 'running' && def.flow && this.flow) {
      const held = await this.flow.enter(def, state);
      if (held) {
        delete state.handoff;
        if (!(await this.create(def, state, undefined))) {
          await this.flow.release(state);
          const found = await this.existing(def, runId);
          if (found) return this.replayOf(def, found, options, hash);
          throw new InvalidRunStateError(
            `A run with id '${runId}' already exists; run ids must be unique.`,
            runId,
            'exists',
          );
        }
        if (held.handle.state === 'delayed') {
          await this.dispatch.resume(runId, def.name, Math.max(1, (held.handle.startAt ?? 0) - clock.now()));
        }
        return { state, held: held.handle };
      }
    }
    try {
      return await this.stored(def, state, lease, options, mode, hash);
    } catch (error) {
      // Not started: the slot it took goes to the next run of its key.
      await this.flow?.release(state);
      throw error;
    }
  }

  /** Take the reactor's coordination (a caller) and store the new run; hand it off when it is the worker's. */
  private async stored(
    def: ReactorDefinition,
    state: RunState,
    lease: Lease | undefined,
    options: RunOptions,
    mode: 'caller' | 'handoff',
    hash: string | undefined,
  ): Promise<{ state: RunState; lease?: Lease; replayed?: boolean; holding?: Holding }> {
    const { clock, middleware } = this.parts;
    const runId = state.runId;
    const coordination = this.executions.coordination;
    // A caller takes the reactor's coordination before the run exists: a contended lock, semaphore
    // or rate limit throws to the caller and stores nothing; a used period stores the run halted.
    let holding: Holding | undefined;
    if (state.status === 'running' && def.coordination && coordination) {
      // Its place on an ordered lock is taken at start, in every mode.
      await coordination.assignOrder(def, state);
      if (mode === 'caller') {
        try {
          const taken = await coordination.enter(def, state, 'caller');
          if (taken && 'halt' in taken) {
            state.status = 'halted';
            state.halt = { step: '(coordination)', reason: taken.halt.reason, details: taken.halt.details };
            state.finishedAt = state.createdAt;
            lease = undefined;
          } else {
            holding = taken;
          }
        } catch (error) {
          if (!(error instanceof CoordinationContendedError) || error.code !== 'ORDER_WAIT') {
            // Refused to the caller: the run will not exist, so its turn goes to the next.
            await coordination.abandonOrder(def, state);
            throw error;
          }
          // Not its turn yet: the run waits for it in a worker (`run` resolves `dispatched`).
          mode = 'handoff';
          state.handoff = { mode: 'all' };
          lease = undefined;
        }
      }
    }
    let created: boolean;
    try {
      created = await this.create(def, state, lease);
    } catch (error) {
      await holding?.leave(state);
      if (!(error instanceof LeaseLostError)) throw error;
      // Not created (the id is executing): its place on an ordered lock goes to the next run.
      if (def.coordination && coordination) await coordination.abandonOrder(def, state);
      throw new InvalidRunStateError(
        `A run with id '${runId}' is executing; run ids must be unique.`,
        runId,
        'running',
      );
    }
    if (!created) {
      await holding?.leave(state);
      await this.flow?.release(state);
      // A replay (or a refused key): this call's place on an ordered lock is given up at once, or
      // the next run would wait the poison pill for a run that never comes.
      if (def.coordination && coordination) await coordination.abandonOrder(def, state);
      // Created by an earlier or a concurrent call with the same key or id.
      const found = await this.existing(def, runId);
      if (found) return this.replayOf(def, found, options, hash);
      throw new InvalidRunStateError(
        `A run with id '${runId}' already exists; run ids must be unique.`,
        runId,
        'exists',
      );
    }
    if (state.status === 'failed') {
      await middleware.emit({
        type: 'reactor.fail',
        runId,
        reactorName: def.name,
        at: clock.now(),
        failure: state.failure!,
      });
    } else if (mode === 'handoff') {
      await this.dispatch.resume(runId, def.name);
    }
    return { state, lease, holding };
  }
}

/** Mark a new run failed because of its inputs: `INPUT_VALIDATION`, naming every field at fault. */
export function failInputs(def: ReactorDefinition, state: RunState, fieldErrors: FieldErrors): void {
  const error = new InputValidationError(
    `Reactor '${def.name}': input validation failed: ${describeFieldErrors(fieldErrors)}`,
    fieldErrors,
    def.name,
  );
  state.status = 'failed';
  state.finishedAt = state.createdAt;
  state.failure = runFailure({
    message: error.message,
    code: error.code,
    reactorName: def.name,
    exceptionClass: 'InputValidationError',
    errorMessage: error.message,
    inputs: redactInputs(def, state.inputs, state.redactedInputs),
    fieldErrors,
  });
}
