import { Inject, Injectable, Optional } from '@nestjs/common';
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
  RunNotFoundError,
  type RunOutcome,
  type ContinueOptions,
  type ContinueResult,
  checkBoolean,
  checkInteger,
  checkMs,
  checkOneOf,
  checkOptions,
  checkStepPath,
  checkText,
  InvalidArgumentError,
  eventNameProblem,
  type EmitOptions,
  type EmitResult,
  type FlowQueues,
  type InterruptCallback,
  type PausedOutcome,
  type ReactorDefinition,
  type RunWatchEvent,
  type RunWatchOptions,
} from '../core';
import type { RetryManyQuery, RetryManyResult } from '../core/engine/run-control';
import { ReactorSweeper, type SweepResult } from '../sweepers/reactor.sweeper';
import { ReactorRegistry } from './reactor.registry';
import { ReactorSchedules } from './reactor-schedules';
import { messages } from '../config';

/**
 * What `ReactorCallbackModule` plugs into the client (provided under {@link REACTOR_CALLBACK_ISSUER}):
 * the callback tokens of the interrupts a paused run waits at. The client knows no secret.
 * @internal
 */
export interface ReactorCallbackIssuer {
  /** `outcome` with `callback` on each interrupt it waits at that declares `token`. */
  decorate(outcome: PausedOutcome, definitionOf: (name: string) => ReactorDefinition): PausedOutcome;
  /** The callback of interrupt `path` of the run whose outcome this is; throws when it has none to hand out. */
  callbackOf(outcome: RunOutcome, path: string, definitionOf: (name: string) => ReactorDefinition): InterruptCallback;
}

/** Injection token of the {@link ReactorCallbackIssuer}. @internal */
export const REACTOR_CALLBACK_ISSUER = Symbol('nest-reactor:callback-issuer');

/** Options of {@link ReactorClient.wait}. */
export interface WaitOptions {
  /** Give up (with `WaitTimeoutError`) after this long. @default 30000 */
  timeoutMs?: number;
  /**
   * Read storage this often when the run settles in another process. The module's runtimes wake
   * `wait` at once when the run settles anywhere, so this is only a fallback there. @default 1000
   * (100 without a runtime that wakes waiters)
   */
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
    @Optional() private readonly scheduleApi?: ReactorSchedules,
    @Optional() @Inject(REACTOR_CALLBACK_ISSUER) private readonly callbacks?: ReactorCallbackIssuer,
  ) {}

  /** Runs started by cron or an interval: `upsert`, `list`, `pause`, `resume`, `remove`, `trigger` (see {@link ReactorSchedules}). */
  get schedules(): ReactorSchedules {
    return this.scheduleApi!;
  }

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
    const name = this.nameOf('run', reactor);
    return this.withCallback(await this.engine.run(name, input, checkOptions('run', options)));
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
    const name = this.nameOf('start', reactor);
    return this.engine.start(name, input, checkOptions('start', options));
  }

  /** The run as shown to people (redacted inputs and arguments), or undefined when there is none. */
  async get(runId: string): Promise<RunView | undefined> {
    this.assertExplored('get');
    const view = await this.engine.get(runId);
    return view && this.callbacks ? { ...view, outcome: this.withCallback(view.outcome) } : view;
  }

  /**
   * Resolve to the run's outcome once it is terminal or paused. Throws `RunNotFoundError` for an
   * unknown run and `WaitTimeoutError` after `timeoutMs`.
   */
  async wait<O = unknown>(runId: string, options?: WaitOptions): Promise<RunOutcome<O>> {
    const checked = checkOptions('wait', options);
    checkMs('wait', 'options.timeoutMs', checked.timeoutMs);
    checkMs('wait', 'options.pollMs', checked.pollMs, 1);
    return this.withCallback(await this.engine.wait<O>(runId, checked));
  }

  /**
   * The run's events as they happen, for an app's own UI: `for await (const e of client.watch(id))`.
   * Replays what the run's log keeps first (only what came after `options.after`, the `id` of an
   * event seen before), then follows the run live; ends after `run.finished`, when
   * `options.signal` aborts, or at `break`. With the module's `liveEvents: true` every step
   * started / completed / failed / retrying, pause, resume and the end; without it, `run.paused`
   * and `run.finished` only (read from storage when the run settles). The first `next()` rejects
   * with `RunNotFoundError` for an unknown run. For a Nest `@Sse()` route, see `runEventsSse`.
   */
  watch(runId: string, options?: RunWatchOptions): AsyncIterableIterator<RunWatchEvent> {
    const checked = checkOptions('watch', options);
    checkMs('watch', 'options.pollMs', checked.pollMs, 1);
    if (checked.signal !== undefined && !(checked.signal instanceof AbortSignal)) {
      throw new InvalidArgumentError('watch', 'options.signal', 'an AbortSignal', checked.signal);
    }
    return this.engine.watch(runId, checked);
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
    const checked = checkOptions('undo', options);
    checkBoolean('undo', 'options.wait', checked.wait);
    checkMs('undo', 'options.timeoutMs', checked.timeoutMs);
    return this.engine.undo(runId, checked);
  }

  /**
   * The runs of a reactor, newest first, filtered by `status` and `since` (creation time), a page
   * of `limit` (default 50) at a time; pass the returned `cursor` for the next page. Reads an index
   * written when each run is created, never a key scan. Search (issue 25): `tag` (`'key=value'` or
   * `{ key, value }`) reads the tag's index instead; `runId` or `correlationId` (an interrupt's)
   * returns that one run when it is the reactor's and matches the other filters.
   */
  async list(query: ListQuery): Promise<RunList> {
    this.assertExplored('list');
    if (typeof query !== 'object' || query === null || Array.isArray(query)) {
      throw new InvalidArgumentError(
        'list',
        'query',
        'an object ({ reactor, status?, since?, cursor?, limit?, tag?, runId?, correlationId? })',
        query,
      );
    }
    checkMs('list', 'query.since', query.since);
    if (query.cursor !== undefined) checkText('list', 'query.cursor', query.cursor, 4096);
    if (query.runId !== undefined) checkText('list', 'query.runId', query.runId);
    if (query.correlationId !== undefined) checkText('list', 'query.correlationId', query.correlationId);
    return this.engine.list(query);
  }

  /**
   * The concurrency queues of a reactor that declares `concurrency: { key?, limit }`: per key (a
   * tenant, an account; `''` without a key function), the runs holding one of its `limit` slots
   * with when each was admitted (`live[].since`, ms), how many runs wait (`queued`), and the first
   * `peek` waiting run ids, next first (`next`). At most `options.limit` keys (default 100, at most
   * 1000), least recently active first; `options.peek` waiting ids per key (default 10, at most
   * 1000). Resolves `undefined` for a reactor that declares no concurrency; throws
   * `UnknownReactorError` for one that is not registered, `InvalidArgumentError` for bad options.
   *
   * ```ts
   * const queues = await client.flowQueues(ExportReactor, { peek: 5 });
   * for (const { key, live, queued } of queues?.keys ?? []) console.log(key, live.length, queues!.limit, queued);
   * ```
   */
  async flowQueues(
    reactor: ReactorClass | string,
    options?: { limit?: number; peek?: number },
  ): Promise<FlowQueues | undefined> {
    const name = this.nameOf('flowQueues', reactor);
    const checked = checkOptions('flowQueues', options);
    checkInteger('flowQueues', 'options.limit', checked.limit, 1, 1_000);
    checkInteger('flowQueues', 'options.peek', checked.peek, 0, 1_000);
    return this.engine.flowQueues(name, checked);
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
    const checked = checkOptions('retry', options);
    checkBoolean('retry', 'options.new', checked.new);
    if (checked.fromStep !== undefined) checkText('retry', 'options.fromStep', checked.fromStep);
    if (checked.inputs !== undefined) checkOptions('retry', checked.inputs, 'options.inputs');
    return this.engine.retry(runId, checked);
  }

  /**
   * Retry many runs of a reactor: those of `status` (default `failed`) created in [`since`,
   * `until`], newest first, at most `limit` (default 100, at most 1000), each as {@link retry}
   * (with `fromStep` when given). Refusals are collected in `refused`, not thrown; a second call
   * finds the first's runs (`replayed`), it does not retry twice. `dryRun: true` lists in
   * `retried` the runs it would retry (no `newRunId`) and retries none.
   */
  async retryMany(
    query: Omit<RetryManyQuery, 'reactor'> & { reactor: ReactorClass | string },
  ): Promise<RetryManyResult> {
    if (typeof query !== 'object' || query === null || Array.isArray(query)) {
      throw new InvalidArgumentError(
        'retryMany',
        'query',
        'an object ({ reactor, status?, since?, until?, limit?, dryRun?, fromStep? })',
        query,
      );
    }
    const reactor = this.nameOf('retryMany', query.reactor);
    checkOneOf('retryMany', 'query.status', query.status, ['failed', 'completed', 'halted', 'cancelled']);
    checkMs('retryMany', 'query.since', query.since);
    checkMs('retryMany', 'query.until', query.until);
    checkInteger('retryMany', 'query.limit', query.limit, 1, 1_000);
    checkBoolean('retryMany', 'query.dryRun', query.dryRun);
    if (query.fromStep !== undefined) checkText('retryMany', 'query.fromStep', query.fromStep);
    return this.engine.retryMany({ ...query, reactor });
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
    checkStepPath('continue', step);
    const checked = checkContinueOptions('continue', options);
    return this.withCallbacks(await this.engine.continue(runId, step, payload, checked)) as ContinueResult<O>;
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
    const name = this.nameOf('continueByCorrelationId', reactor);
    checkStepPath('continueByCorrelationId', step);
    checkText('continueByCorrelationId', 'correlationId', correlationId);
    const checked = checkContinueOptions('continueByCorrelationId', options);
    return this.withCallbacks(await this.engine.continueByCorrelationId(name, step, correlationId, payload, checked));
  }

  /**
   * The callback token of interrupt `step` (a path such as `'payment.approve'`) that the paused run
   * `runId` waits at, as `waitingFor[].callback` carries it: `{ token, expiresAt, url? }`. POST the
   * payload to `url` (or `<path>/<token>` of `ReactorCallbackModule`) until `expiresAt`; the token
   * answers that pause once. The same pause always gives the same token. Throws
   * `ConfigurationError` without `ReactorCallbackModule`, `RunNotFoundError`, `RUN_NOT_PAUSED` when
   * the run does not wait there, and `INVALID_ARGUMENT` when the interrupt declares no `token`.
   */
  async callbackToken(runId: string, step: string | readonly string[]): Promise<InterruptCallback> {
    this.assertExplored('callbackToken');
    checkStepPath('callbackToken', step);
    if (!this.callbacks)
      throw new ConfigurationError(
        "client.callbackToken needs ReactorCallbackModule.forRoot({ secret }) in the app's imports: it signs the tokens.",
        'secret',
      );
    const view = await this.engine.get(runId);
    if (!view) throw new RunNotFoundError(runId);
    const path = typeof step === 'string' ? step : step.join('.');
    return this.callbacks.callbackOf(view.outcome, path, this.definitionOf);
  }

  /**
   * Emit event `name` with `payload`: start every reactor declared
   * `@Reactor(r, { on: { event: name, input?, match? } })` (in the background, like {@link start};
   * an invalid input gives a failed run), and answer every interrupt declared
   * `r.interrupt(step, { event: name, match })` that waits for it (the payload validated like a
   * {@link continue}'s). With `{ id }`, emitting the same event again (a retry, another producer,
   * concurrently) starts no run twice and answers no interrupt twice. Resolves to what it did:
   * `{ started: [{ reactor, runId }], answered: [{ runId, step }], mailed, rejected }`.
   *
   * ```ts
   * await client.emit('order.paid', { orderId, amountCents }, { id: webhook.eventId });
   * ```
   */
  async emit(name: string, payload: unknown, options?: EmitOptions): Promise<EmitResult> {
    this.assertExplored('emit');
    const problem = eventNameProblem(name);
    if (problem) throw new InvalidArgumentError('emit', 'name', `an event name that ${problem}`, name);
    const checked = checkOptions('emit', options);
    if (checked.id !== undefined) checkText('emit', 'options.id', checked.id, 256);
    return this.engine.emit(name, payload, checked);
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
    if (typeof reason !== 'string')
      throw new InvalidArgumentError('cancel', 'reason', 'a string (or left out)', reason);
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
    checkInteger('runsOnOtherDefinitions', 'limit', limit, 1, 100_000);
    return this.engine.runsOnOtherDefinitions(limit);
  }

  private readonly definitionOf = (name: string): ReactorDefinition => this.engine.definition(name);

  /** A paused outcome with the callback tokens of its interrupts, when `ReactorCallbackModule` is configured. */
  private withCallback<T extends RunOutcome>(outcome: T): T {
    if (!this.callbacks || outcome.status !== 'paused') return outcome;
    return this.callbacks.decorate(outcome, this.definitionOf) as T;
  }

  private withCallbacks(result: ContinueResult): ContinueResult {
    return result.outcome ? { ...result, outcome: this.withCallback(result.outcome) } : result;
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

/** The options of `continue` and `continueByCorrelationId`, checked. */
function checkContinueOptions(method: string, options: ContinueOptions | undefined): ContinueOptions {
  const checked = checkOptions(method, options);
  checkOneOf(method, 'options.execute', checked.execute, ['inline', 'background']);
  checkOneOf(method, 'options.ifNotReached', checked.ifNotReached, ['queue', 'refuse']);
  checkBoolean(method, 'options.wait', checked.wait);
  checkMs(method, 'options.timeoutMs', checked.timeoutMs);
  return checked;
}
