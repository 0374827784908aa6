/**
 * Resuming runs paused at interrupts: `continue` by run id or correlation id, applying claims under
 * the run's lease, and what a pause leaves for later (a wake-up at its timeout, a resume that
 * raced it).
 *
 * A resume is applied exactly once: it is first *claimed* in the {@link InterruptStore} (first
 * wins, never changed), then whoever holds the run's lease copies the claims into the run's state
 * and runs it (`prepare`). A claim that cannot be applied now (the run is busy, or has not reached
 * the interrupt yet) is already durable: a job, the run itself on arrival, or the sweeper applies it.
 */
import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import type { InterruptSpec } from '../definition/interrupt-spec';
import {
  AlreadyResumedError,
  InterruptTimedOutError,
  NotPausedError,
  PayloadValidationError,
  UnknownCorrelationIdError,
  UnknownInterruptError,
} from '../errors/interrupt.error';
import { ConfigurationError } from '../errors/configuration.error';
import { CoordinationContendedError } from '../errors/coordination.error';
import { DefinitionChangedError, RunNotFoundError } from '../errors/run-state.error';
import { waitingInterrupts, type InterruptRecord, type ResumeClaim, type WaitingInterrupt } from '../model/interrupt';
import { jsonProblem, withoutUndefinedProperties } from '../model/json-values';
import { runLeaseKey } from '../model/keys';
import { isTerminal, type RunState } from '../model/run-state';
import type { InterruptStore } from '../ports/interrupt-store.port';
import type { RunOutcome } from '../results/run-outcome';
import { describeFieldErrors, validateContract } from '../validation/validate';
import type { Dispatch } from './dispatch';
import type { EngineParts } from './engine-options';
import type { Executions } from './executions';
import type { LeaseKeeper } from './lease-keeper';
import type { DefinitionRegistry } from './registry';

/** Options of `continue` and `continueByCorrelationId`. */
export interface ContinueOptions {
  /**
   * Where the resumed run goes on: `inline` in this call (the result is `applied` with the
   * outcome), or `background` in a worker (`deferred`). @default 'background' for a reactor with
   * a `background` option, else 'inline'
   */
  execute?: 'inline' | 'background';
  /**
   * A resume for an interrupt the run has not reached yet (or a correlation id no live run holds):
   * `queue` keeps it up to `earlyResumeTtlMs` and applies it when the run gets there; `refuse`
   * throws `RUN_NOT_PAUSED` / `CORRELATION_ID_NOT_FOUND`. @default 'queue'
   */
  ifNotReached?: 'queue' | 'refuse';
  /**
   * Wait for the run's next outcome when the answer is not applied in this call (`deferred` to a
   * worker, or `queued` for a run that has not reached the interrupt): the result then carries it
   * as `outcome` (completed, failed, paused again at another interrupt, ...), as `applied` does. A
   * `queued` answer for a correlation id no run holds yet has no run to wait for. @default false
   */
  wait?: boolean;
  /** Bound of that wait (then `WAIT_TIMEOUT`). @default the engine's wait timeout (30 s) */
  timeoutMs?: number;
}

/** What a resume did. */
export type ContinueResult<O = unknown> =
  /** Applied in this call: the run went on to this outcome (possibly paused again at another interrupt). */
  | { accepted: 'applied'; runId: string; outcome: RunOutcome<O> }
  /**
   * Claimed; a worker applies it (the run was busy, or goes on in the background): `wait(runId)`,
   * or `{ wait: true }` for its next `outcome` here.
   */
  | { accepted: 'deferred'; runId: string; reason: 'busy' | 'background'; outcome?: RunOutcome<O> }
  /**
   * Kept until `expiresAt` for a run that has not reached the interrupt (or a correlation id not
   * bound yet); with `{ wait: true }` and a run, its next `outcome`.
   */
  | { accepted: 'queued'; runId?: string; correlationId?: string; expiresAt: number; outcome?: RunOutcome<O> };

/** An interrupt of a reactor, found by its path. */
interface Target {
  path: string;
  segments: string[];
  step: StepDefinition & { handler: { kind: 'interrupt'; interrupt: InterruptSpec } };
  /** The definition that declares it (a composed child's, for a nested path). */
  def: ReactorDefinition;
}

/** `continue`, `continueByCorrelationId`, and applying claims under a run's lease. */
export class Resumes {
  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly leases: LeaseKeeper,
    private readonly executions: Executions,
    private readonly dispatch: Dispatch,
  ) {}

  /** Resume run `runId` at interrupt `path` with `payload`. */
  async continue(
    runId: string,
    path: string | readonly string[],
    payload: unknown,
    options: ContinueOptions = {},
  ): Promise<ContinueResult> {
    const state = await this.parts.storage.load(runId);
    if (!state) throw new RunNotFoundError(runId);
    const def = this.definitionOf(state);
    const target = this.resolve(def, path);
    return this.resume(state, def, target, payload, options);
  }

  /** Resume the run of `reactorName` bound to `correlationId` at interrupt `path` with `payload`. */
  async continueByCorrelationId(
    reactorName: string,
    path: string | readonly string[],
    correlationId: string,
    payload: unknown,
    options: ContinueOptions = {},
  ): Promise<ContinueResult> {
    const store = this.store();
    const def = this.registry.get(reactorName);
    const target = this.resolve(def, path);
    if (typeof correlationId !== 'string' || correlationId.length === 0 || correlationId.length > 512) {
      throw new UnknownCorrelationIdError(def.name, String(correlationId).slice(0, 64));
    }
    const now = this.parts.clock.now();
    let stale: string | undefined;
    const boundTo = await store.findCorrelationId(def.name, correlationId);
    if (boundTo !== undefined) {
      // A live run: resumed like `continue` (an invalid payload counts as one of its attempts).
      const state = await this.parts.storage.load(boundTo);
      if (state && !isTerminal(state.status)) {
        this.definitionOf(state);
        return this.resume(state, def, target, payload, options);
      }
      // A finished run that reached this interrupt still holds the id: a late answer is its, and is
      // refused; kept for a later run with the same id, it would answer a question nobody saw.
      const level = state ? levelOf(state, target.segments) : undefined;
      if (state && level?.completed.includes(target.step.name)) {
        throw new AlreadyResumedError(state.runId, target.path, 'result');
      }
      if (state && (level?.interrupts?.[target.step.name] || options.ifNotReached === 'refuse')) {
        throw new NotPausedError(state.runId, target.path, state.status, state.cancellation?.reason);
      }
      stale = boundTo;
    }
    if (options.ifNotReached === 'refuse') throw new UnknownCorrelationIdError(def.name, correlationId);
    // A mailed payload is always a valid one: invalid ones are refused before anything is kept.
    await this.validate(target, payload, { reactor: def.name, path: target.path });
    const claim: ResumeClaim = { kind: 'payload', payload: withoutUndefinedProperties(payload), at: now };
    const mailed = await store.mailResume(def.name, correlationId, target.path, claim, {
      now,
      ttlMs: this.parts.earlyResumeTtlMs,
      ignoreBoundTo: stale,
    });
    if (mailed.kind === 'exists') throw new AlreadyResumedError(correlationId, target.path, 'payload');
    if (mailed.kind === 'queued') return { accepted: 'queued', correlationId, expiresAt: mailed.expiresAt };
    // Bound between the lookup and the mail (the run paused just now): resume that run.
    const state = await this.parts.storage.load(mailed.runId);
    if (!state) throw new UnknownCorrelationIdError(def.name, correlationId);
    return this.resume(state, def, target, payload, options);
  }

  /**
   * Copy the claims made for the interrupts `state` waits at into their records, and claim the
   * timeouts that are due. Call it holding the run's lease, before executing the run: the
   * interrupts settle with what they were given. Returns whether anything was applied.
   */
  async prepare(state: RunState): Promise<boolean> {
    const store = this.parts.interrupts;
    const waiting = waitingInterrupts(state);
    if (!store || waiting.length === 0) return false;
    const now = this.parts.clock.now();
    const claims = await this.claimsOf(state, waiting, 'take', now);
    let applied = false;
    for (const { path, record } of waiting) {
      let claim: ResumeClaim | undefined = claims[path];
      if (!claim && record.timeoutAt !== undefined && record.timeoutAt <= now) {
        const timeout: ResumeClaim = { kind: 'timeout', at: now };
        const reply = await store.claim(state.runId, path, timeout, this.claimOptions(now));
        claim = reply.won ? timeout : reply.existing;
      }
      if (!claim) continue;
      record.applied = claim;
      applied = true;
    }
    return applied;
  }

  /**
   * After a run paused: resume it now if a claim arrived while it was running (after its interrupt
   * looked for one), and wake it at its earliest active timeout.
   */
  async afterPause(state: RunState): Promise<void> {
    if (!this.parts.interrupts || !this.dispatch.available) return;
    const waiting = waitingInterrupts(state);
    const now = this.parts.clock.now();
    if (Object.keys(await this.claimsOf(state, waiting, 'peek', now)).length > 0) {
      await this.dispatch.resume(state.runId, state.reactorName, 0);
      return;
    }
    const due = this.activeDeadline(state, waiting);
    if (due !== undefined) await this.dispatch.resume(state.runId, state.reactorName, Math.max(0, due - now));
  }

  /** Whether a paused run has something to apply: a claim, or an active timeout that is due (for the sweeper). */
  async due(state: RunState): Promise<boolean> {
    const waiting = waitingInterrupts(state);
    const now = this.parts.clock.now();
    const deadline = this.activeDeadline(state, waiting);
    if (deadline !== undefined && deadline <= now) return true;
    return Object.keys(await this.claimsOf(state, waiting, 'peek', now)).length > 0;
  }

  /** The claims made for the interrupts a run waits at (no round trip when it waits at none). */
  private async claimsOf(
    state: RunState,
    waiting: readonly WaitingInterrupt[],
    mode: 'take' | 'peek',
    now: number,
  ): Promise<Record<string, ResumeClaim>> {
    const store = this.parts.interrupts;
    if (!store || waiting.length === 0) return {};
    return store.claims(
      state.runId,
      waiting.map((w) => w.path),
      mode,
      now,
    );
  }

  /** The earliest timeout of an `active` interrupt the run waits at. */
  private activeDeadline(state: RunState, waiting = waitingInterrupts(state)): number | undefined {
    let earliest: number | undefined;
    for (const { record, path } of waiting) {
      if (record.timeoutAt === undefined) continue;
      const target = this.tryResolve(state, path);
      if (target && target.step.handler.interrupt.timeoutStrategy !== 'active') continue;
      earliest = earliest === undefined ? record.timeoutAt : Math.min(earliest, record.timeoutAt);
    }
    return earliest;
  }

  private tryResolve(state: RunState, path: string): Target | undefined {
    try {
      return this.resolve(this.registry.forRun(state) ?? this.registry.get(state.reactorName), path);
    } catch {
      return undefined;
    }
  }

  private async resume(
    state: RunState,
    def: ReactorDefinition,
    target: Target,
    payload: unknown,
    options: ContinueOptions,
  ): Promise<ContinueResult> {
    const store = this.store();
    const { runId } = state;
    const { path } = target;
    const level = levelOf(state, target.segments);
    const stepName = target.step.name;
    if (level?.completed.includes(stepName)) throw new AlreadyResumedError(runId, path, 'result');
    if (isTerminal(state.status) || state.status === 'rolling_back') {
      throw new NotPausedError(runId, path, state.status, state.cancellation?.reason);
    }
    const record: InterruptRecord | undefined = level?.interrupts?.[stepName];
    const now = this.parts.clock.now();
    if (record?.timeoutAt !== undefined && record.timeoutAt <= now) {
      // Lazy timeout: a resume that arrives late times the interrupt out (if nothing else claimed it first).
      const reply = await store.claim(runId, path, { kind: 'timeout', at: now }, this.claimOptions(now));
      if (reply.won || reply.existing?.kind === 'timeout') {
        await this.drive(runId, def, { ...options, execute: 'background' });
        throw new InterruptTimedOutError(runId, path, record.timeoutAt);
      }
      throw alreadyResumed(runId, path, reply.existing);
    }
    const spec = target.step.handler.interrupt;
    const reachedNow = state.status === 'paused' && record !== undefined;
    // Before the run reaches the interrupt an invalid payload is refused, never counted: attempts
    // are the paused run's to spend (as by correlation id).
    const invalid = await this.validate(target, payload, { reactor: def.name, path }, !reachedNow);
    if (invalid) {
      const reply = await store.reject(runId, path, {
        fieldErrors: invalid,
        now,
        maxAttempts: spec.maxAttempts,
        retentionMs: this.parts.interruptRetentionMs,
      });
      if (!reply.counted) {
        if ('existing' in reply) throw alreadyResumed(runId, path, reply.existing);
        throw new NotPausedError(runId, path, reply.status ?? 'gone');
      }
      // The last attempt fails the run (with rollback): applied like any claim.
      if (reply.final && state.status === 'paused' && record) await this.drive(runId, def, options);
      const left = reply.final ? 0 : spec.maxAttempts === 0 ? Infinity : spec.maxAttempts - reply.attempts;
      throw new PayloadValidationError(
        `Reactor '${target.def.name}' interrupt '${path}' of run '${runId}': invalid payload: ${describeFieldErrors(invalid)}` +
          (left === 0 ? '. That was the last attempt: the run fails and rolls back.' : ` (${left} attempt(s) left).`),
        invalid,
        target.def.name,
        stepName,
        reply.attempts,
        left,
        runId,
      );
    }
    const reached = state.status === 'paused' && record !== undefined;
    if (!reached && options.ifNotReached === 'refuse') {
      throw new NotPausedError(runId, path, state.status, 'it has not reached this interrupt yet');
    }
    const expiresAt = now + this.parts.earlyResumeTtlMs;
    const reply = await store.claim(
      runId,
      path,
      { kind: 'payload', payload: withoutUndefinedProperties(payload), at: now },
      { ...this.claimOptions(now), ...(reached ? {} : { expiresAt }) },
    );
    if (!reply.won) {
      if (reply.existing) throw alreadyResumed(runId, path, reply.existing);
      throw new NotPausedError(runId, path, reply.status ?? 'gone');
    }
    if (!reached) return { accepted: 'queued', runId, expiresAt };
    return this.drive(runId, def, options);
  }

  /** Apply the claims of a paused run: here, holding its lease, or by a worker. */
  private async drive(runId: string, def: ReactorDefinition, options: ContinueOptions): Promise<ContinueResult> {
    const background = (options.execute ?? (def.background ? 'background' : 'inline')) === 'background';
    if (background && this.dispatch.available) {
      await this.dispatch.resume(runId, def.name, 0);
      return { accepted: 'deferred', runId, reason: 'background' };
    }
    const lease = this.leases.newLease(runLeaseKey(runId));
    const claim = await this.parts.storage.acquireAndLoad(runId, lease, this.parts.leaseTtlMs);
    const busy = async (): Promise<ContinueResult> => {
      // The claim is stored: the run's holder (or the job) applies it; never lost.
      if (this.dispatch.available) await this.dispatch.resume(runId, def.name, 0);
      return { accepted: 'deferred', runId, reason: 'busy' };
    };
    if (!claim.acquired) return busy();
    const state = claim.state;
    const current = state ? this.registry.forRun(state) : undefined;
    if (!state || state.status !== 'paused' || !current || current.hash !== state.definitionHash) {
      await this.leases.releaseQuietly(lease);
      return busy();
    }
    if (!(await this.prepare(state))) {
      await this.leases.releaseQuietly(lease);
      return busy();
    }
    try {
      const outcome = await this.executions.execute(current, state, lease, 'caller', true);
      return { accepted: 'applied', runId, outcome };
    } catch (error) {
      if (!(error instanceof CoordinationContendedError)) throw error;
      // Its lock, semaphore or rate limit is taken: the claim stays; a worker applies it later.
      if (this.dispatch.available) await this.dispatch.resume(runId, def.name, error.retryAfterMs);
      return { accepted: 'deferred', runId, reason: 'busy' };
    }
  }

  /**
   * The payload's field errors, or undefined when it is valid. A value that cannot be stored is
   * refused at once (`throwUnstorable`), never counted as an attempt.
   */
  private async validate(
    target: Target,
    payload: unknown,
    where: { reactor: string; path: string },
    throwInvalid = true,
  ): Promise<Record<string, string[]> | undefined> {
    let problem = payload === undefined ? 'is missing' : jsonProblem(payload);
    if (!problem) {
      try {
        JSON.stringify(payload);
      } catch (error) {
        problem = `cannot be written as JSON (${(error as Error)?.message ?? String(error)})`;
      }
    }
    if (problem) {
      throw new PayloadValidationError(
        `Reactor '${where.reactor}' interrupt '${where.path}': the payload ${problem} (it must be JSON).`,
        { '(payload)': [problem] },
        target.def.name,
        target.step.name,
        0,
        Infinity,
      );
    }
    const contract = target.step.handler.interrupt.payload;
    if (!contract) return undefined;
    const errors = await validateContract(contract, payload);
    if (Object.keys(errors).length === 0) return undefined;
    if (throwInvalid) {
      throw new PayloadValidationError(
        `Reactor '${where.reactor}' interrupt '${where.path}': invalid payload: ${describeFieldErrors(errors)}`,
        errors,
        target.def.name,
        target.step.name,
        0,
        Infinity,
      );
    }
    return errors;
  }

  /**
   * The definition a paused run goes on under. A run started under another shape of its reactor
   * cannot take an answer here (it would fail as changed): refused before anything is claimed.
   */
  private definitionOf(state: RunState): ReactorDefinition {
    const def = this.registry.forRun(state);
    if (def && def.hash === state.definitionHash) return def;
    throw new DefinitionChangedError(
      state.runId,
      state.reactorName,
      state.reactorVersion ?? '1',
      this.registry.has(state.reactorName) ? this.registry.versionsOf(state.reactorName) : [],
    );
  }

  /** The interrupt `path` names in `def`: `approve`, or `child.approve` (also `['child', 'approve']`). */
  private resolve(root: ReactorDefinition, path: string | readonly string[]): Target {
    const segments = typeof path === 'string' ? path.split('.') : [...path];
    let def = root;
    for (let i = 0; i < segments.length; i++) {
      const step = def.stepsByName.get(segments[i]);
      const last = i === segments.length - 1;
      if (last && step?.handler.kind === 'interrupt') {
        return { path: segments.join('.'), segments, step: step as Target['step'], def };
      }
      if (last || step?.handler.kind !== 'compose') break;
      def = this.registry.get(step.handler.reactorName);
    }
    throw new UnknownInterruptError(root.name, segments.join('.'), this.interruptPaths(root));
  }

  /** Every interrupt path of `def`, its composed children's included. */
  private interruptPaths(def: ReactorDefinition, prefix = '', seen = new Set<string>()): string[] {
    if (seen.has(def.name)) return [];
    seen.add(def.name);
    const out: string[] = [];
    for (const step of def.steps) {
      if (step.handler.kind === 'interrupt') out.push(prefix + step.name);
      if (step.handler.kind === 'compose' && this.registry.has(step.handler.reactorName)) {
        out.push(...this.interruptPaths(this.registry.get(step.handler.reactorName), `${prefix}${step.name}.`, seen));
      }
    }
    return out;
  }

  private claimOptions(now: number) {
    return { now, retentionMs: this.parts.interruptRetentionMs };
  }

  private store(): InterruptStore {
    if (this.parts.interrupts) return this.parts.interrupts;
    throw new ConfigurationError(
      "Resuming an interrupt needs an interrupt store (the engine's `interrupts` option).",
      'interrupts',
    );
  }
}

/** The state (the run or a composed child) that holds the interrupt at `segments`, if it exists yet. */
function levelOf(state: RunState, segments: readonly string[]): RunState | undefined {
  let level: RunState | undefined = state;
  for (const segment of segments.slice(0, -1)) level = level?.children[segment];
  return level;
}

function alreadyResumed(runId: string, path: string, existing: ResumeClaim | undefined): AlreadyResumedError {
  return new AlreadyResumedError(runId, path, existing?.kind ?? 'payload');
}
