import { Injectable } from '@nestjs/common';
import {
  type RunOnOtherDefinition,
  type ReactorClass,
  type ReactorInputOf,
  type ReactorOutputOf,
  getReactorMetadata,
  ReactorEngine,
  type RunOptions,
  type RunRetryOptions,
  type UndoOptions,
  type ListQuery,
  type RunList,
  type RunView,
  ReactorError,
  ConfigurationError,
  type RunOutcome,
  type ContinueOptions,
  type ContinueResult,
} from '../core';
import { ReactorSweeper, type SweepResult } from '../sweepers/reactor.sweeper';
import { ReactorRegistry } from './reactor.registry';
import { messages } from '../config';

/** Options of {@link ReactorClient.wait}. */
export interface WaitOptions {
  /** Give up (with `WaitTimeoutError`) after this long. @default 30000 */
  timeoutMs?: number;
  /** Poll storage this often when the run finishes in another process. @default 100 */
  pollMs?: number;
}

/**
 * Starts, inspects and undoes runs. Inject it anywhere (the module is global by default).
 *
 * ```ts
 * const outcome = await client.run(CheckoutReactor, { order });
 * switch (outcome.status) {
 *   case 'completed': return outcome.value;
 *   case 'failed': throw new BadRequestException(outcome.failure.message);
 *   case 'dispatched': return { runId: outcome.runId };   // finishing in a worker
 * }
 * ```
 *
 * Reactors are named by their `@Reactor` class (typed input and result) or by their name.
 */
@Injectable()
export class ReactorClient {
  constructor(
    private readonly engine: ReactorEngine,
    private readonly registry: ReactorRegistry,
    private readonly sweeper: ReactorSweeper,
  ) {}

  /**
   * Run a reactor: validate the input, then execute in this process until the run completes,
   * fails (after compensation and undo), halts, or reaches a background hand-off (`dispatched`).
   * Invalid input resolves to a `failed` outcome; it does not throw.
   */
  run<C extends ReactorClass>(
    reactor: C,
    input: ReactorInputOf<C>,
    options?: RunOptions,
  ): Promise<RunOutcome<ReactorOutputOf<C>>>;
  /** Run a reactor by name. */
  run<O = unknown>(reactorName: string, input: unknown, options?: RunOptions): Promise<RunOutcome<O>>;
  async run(reactor: ReactorClass | string, input: unknown, options?: RunOptions): Promise<RunOutcome> {
    return this.engine.run(this.nameOf('run', reactor), input, options);
  }

  /**
   * Start a reactor in the background, whatever its options: resolves once the run is stored and
   * handed to a worker (`dispatched`, or `failed` for invalid input). Follow it with
   * {@link get} or {@link wait}.
   */
  start<C extends ReactorClass>(
    reactor: C,
    input: ReactorInputOf<C>,
    options?: RunOptions,
  ): Promise<RunOutcome<ReactorOutputOf<C>>>;
  /** Start a reactor by name in the background. */
  start<O = unknown>(reactorName: string, input: unknown, options?: RunOptions): Promise<RunOutcome<O>>;
  async start(reactor: ReactorClass | string, input: unknown, options?: RunOptions): Promise<RunOutcome> {
    return this.engine.start(this.nameOf('start', reactor), input, options);
  }

  /** The run as shown to people (redacted inputs and arguments), or undefined when there is none. */
  async get(runId: string): Promise<RunView | undefined> {
    this.assertExplored('get');
    return this.engine.get(runId);
  }

  /**
   * Resolve to the run's outcome once it is terminal or paused. Throws `RunNotFoundError` for an
   * unknown run and `WaitTimeoutError` after `timeoutMs`.
   */
  async wait<O = unknown>(runId: string, options: WaitOptions = {}): Promise<RunOutcome<O>> {
    return this.engine.wait<O>(runId, options);
  }

  /**
   * Undo a finished run: every completed step is undone, newest completion first, and the run
   * becomes `cancelled`. Undos that fail are listed in the outcome's `rollbackFailures`.
   * Refused while the run is executing or rolling back. A fan-out map's elements are undone by
   * worker jobs; `undo` waits for them (up to `options.timeoutMs`, default 30 s), so it resolves
   * `cancelled` on every runtime; `{ wait: false }` returns at once (`dispatched`; `wait(runId)`).
   */
  async undo(runId: string, options?: UndoOptions): Promise<RunOutcome> {
    this.assertExplored('undo');
    return this.engine.undo(runId, options);
  }

  /**
   * The runs of a reactor, newest first, filtered by `status` and `since` (creation time), a page
   * of `limit` (default 50) at a time; pass the returned `cursor` for the next page. Reads an index
   * written when each run is created, never a key scan.
   */
  async list(query: ListQuery): Promise<RunList> {
    this.assertExplored('list');
    return this.engine.list(query);
  }

  /**
   * Retry a failed run. One that was rolled back starts again as a new run with the same inputs,
   * handed to a worker and linked to the first (`get(newRunId).retriedFrom`, `retryCount`); one
   * that stopped without a rollback (its job's retries ran out, `JOB_RETRIES_EXHAUSTED`) resumes
   * from its failed step with its completed steps kept. Refused for a run that is not failed.
   * Resolves `dispatched`, with the run id to `wait` for. Idempotent per source run: calling it
   * again (in a row, while the retry runs, or concurrently) returns the first retry's run, marked
   * `replayed`; `retry(runId, { new: true })` starts another new run.
   */
  async retry(runId: string, options?: RunRetryOptions): Promise<RunOutcome> {
    this.assertExplored('retry');
    return this.engine.retry(runId, options);
  }

  /**
   * Answer interrupt `step` of a paused run with `payload` (a path such as `'payment.approve'` for
   * an interrupt inside compose step `payment`). The payload is validated against the interrupt's
   * contract first; an invalid one throws `PayloadValidationError` (`PAYLOAD_INVALID`) and the run
   * stays paused while attempts remain, the last one fails the run with rollback. Applied exactly
   * once: of concurrent resumes one wins, the others throw `AlreadyResumedError`
   * (`ALREADY_RESUMED`). Resolves:
   * - `applied`: the run went on here, to `outcome` (`paused` again if it waits at another interrupt);
   * - `deferred`: it goes on in a worker (it was busy, or `execute: 'background'`): `wait(runId)`;
   * - `queued`: the run has not reached the interrupt yet; it gets the payload when it does.
   *
   * `{ wait: true, timeoutMs? }`: a `deferred` (or `queued`) answer resolves once the run has its
   * next outcome, carried as `outcome`. An invalid payload's error carries the run's `runId`.
   */
  async continue<O = unknown>(
    runId: string,
    step: string | readonly string[],
    payload: unknown,
    options?: ContinueOptions,
  ): Promise<ContinueResult<O>> {
    this.assertExplored('continue');
    return (await this.engine.continue(runId, step, payload, options)) as ContinueResult<O>;
  }

  /**
   * {@link continue} the run of `reactor` whose interrupt `step` declared `correlationId` (a
   * webhook's order id, an approval's request id). A resume for an id no run holds yet is kept for
   * `earlyResumeTtlMs` and applied when a run reaches the interrupt with that id (`queued`), unless
   * `ifNotReached: 'refuse'` (then `CORRELATION_ID_NOT_FOUND`).
   */
  continueByCorrelationId<C extends ReactorClass>(
    reactor: C,
    step: string | readonly string[],
    correlationId: string,
    payload: unknown,
    options?: ContinueOptions,
  ): Promise<ContinueResult<ReactorOutputOf<C>>>;
  /** {@link continueByCorrelationId} of a reactor named by its name. */
  continueByCorrelationId<O = unknown>(
    reactorName: string,
    step: string | readonly string[],
    correlationId: string,
    payload: unknown,
    options?: ContinueOptions,
  ): Promise<ContinueResult<O>>;
  async continueByCorrelationId(
    reactor: ReactorClass | string,
    step: string | readonly string[],
    correlationId: string,
    payload: unknown,
    options?: ContinueOptions,
  ): Promise<ContinueResult> {
    return this.engine.continueByCorrelationId(
      this.nameOf('continueByCorrelationId', reactor),
      step,
      correlationId,
      payload,
      options,
    );
  }

  /**
   * Cancel a run that has not finished (running, waiting or paused): it stops at its next step
   * boundary (a step in flight finishes), its completed steps are undone newest first, and it ends
   * `cancelled` with `reason`. Refused with `InvalidRunStateError` for a finished run (use
   * {@link undo}). Returns the outcome as it is now; a run executing in another process is
   * cancelled there, so `wait(runId)` for the end.
   */
  async cancel(runId: string, reason = 'cancelled'): Promise<RunOutcome> {
    this.assertExplored('cancel');
    return this.engine.cancel(runId, reason);
  }

  /**
   * Run one recovery sweep now and return how many jobs it added: runs that are `running` or
   * `rolling_back` with no live lease and no update for the lease TTL (their executor died) go
   * back to a worker; a run whose recovery job is still pending (from an earlier sweep) gets no
   * other and is not counted. No guard: every call sweeps. For hosts that schedule recovery themselves
   * (`sweeper: { enabled: false }` and an external cron); idempotent, safe next to the built-in
   * sweeper.
   */
  async sweepOnce(): Promise<SweepResult> {
    this.assertExplored('sweepOnce');
    return this.sweeper.sweepOnce();
  }

  /**
   * A pre-deploy check, run with the build about to be deployed: the live runs that no reactor
   * definition of this process can carry on (their reactor, its version or its shape is not here).
   * Deploy when it lists none, keep the old versions registered beside the new ones
   * (`@Reactor(name, { version })`), or let those runs finish first.
   */
  async runsOnOtherDefinitions(limit?: number): Promise<RunOnOtherDefinition[]> {
    this.assertExplored('runsOnOtherDefinitions');
    return this.engine.runsOnOtherDefinitions(limit);
  }

  private nameOf(method: string, reactor: ReactorClass | string): string {
    this.assertExplored(method);
    if (typeof reactor === 'string') return reactor;
    if (typeof reactor !== 'function')
      throw new ReactorError('UNKNOWN_REACTOR', messages.reactorArgumentInvalid(method, reactor));
    const name = this.registry.reactorNameOf(reactor);
    if (name !== undefined) return name;
    const metadata = getReactorMetadata(reactor);
    throw new ReactorError(
      'UNKNOWN_REACTOR',
      metadata
        ? messages.reactorClassNotRegistered(reactor, metadata.name)
        : messages.reactorClassNotDecorated(reactor),
    );
  }

  private assertExplored(method: string): void {
    if (!this.registry.isExplored) throw new ConfigurationError(messages.clientUsedBeforeInit(method));
  }
}
