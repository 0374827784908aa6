import { randomUUID } from 'node:crypto';
import type { ReactorDefinition } from '../definition/definition';
import { redactInputs } from '../definition/redaction';
import { InputValidationError } from '../errors/input-validation.error';
import { InvalidRunStateError, LeaseLostError } from '../errors/run-state.error';
import { UnstorableValueError } from '../errors/unstorable-value.error';
import { errorMessage, runFailure, type FieldErrors } from '../model/failure';
import { jsonProblem } from '../model/json-values';
import { runLeaseKey } from '../model/keys';
import { checkRunId } from './run-id';
import { newRunState, type RunState } from '../model/run-state';
import type { Lease } from '../ports/lock-manager.port';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import type { Dispatch } from './dispatch';
import type { EngineParts, RunOptions } from './engine-options';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';

/** Starting runs: validate inputs, store the new run, then execute it here or hand it to a worker. */
export class RunStarter {
  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
    private readonly newRunId: () => string = randomUUID,
  ) {}

  /** Run in this process until done or a hand-off (the outcome is then `dispatched`). */
  async run<I, O>(target: ReactorDefinition<I, O> | string, input: I, options: RunOptions): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    const background = def.background !== undefined && 'all' in def.background;
    const prepared = await this.prepare(def, input, options, background ? 'handoff' : 'caller');
    if (prepared.state.status === 'failed' || background) return outcomeOf<O>(prepared.state);
    return (await this.executions.execute(def, prepared.state, prepared.lease!, 'caller', false)) as RunOutcome<O>;
  }

  /** Store the run and hand it to a worker; resolves once it is stored. */
  async start<I, O>(target: ReactorDefinition<I, O> | string, input: I, options: RunOptions): Promise<RunOutcome<O>> {
    const def = this.resolveTarget(target);
    const prepared = await this.prepare(def, input, options, 'handoff');
    return outcomeOf<O>(prepared.state);
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
  ): Promise<{ state: RunState; lease?: Lease }> {
    const { clock, middleware } = this.parts;
    const runId = options.runId ?? this.newRunId();
    checkRunId(runId);
    const { inputs, errors } = await validateReactorInputs(def.inputs, input);
    const state = newRunState(def, runId, inputs, clock.now());
    let lease: Lease | undefined;
    if (Object.keys(errors).length > 0) {
      failInputs(def, state, errors);
    } else {
      state.status = 'running';
      if (mode === 'handoff') state.handoff = { mode: 'all' };
      // The caller executes the run: take its lease in the same write that creates it.
      else lease = this.leases.newLease(runLeaseKey(runId));
    }
    let created: boolean;
    try {
      created = await this.create(def, state, lease);
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
    return { state, lease };
  }
}

/** Mark a new run failed because of its inputs: `INPUT_VALIDATION`, naming every field at fault. */
function failInputs(def: ReactorDefinition, state: RunState, fieldErrors: FieldErrors): void {
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
