/**
 * nest-reactor: durable saga orchestration for NestJS.
 *
 * Declare reactors (DAGs of steps) with `@Reactor`, make injectable services into steps with
 * `@Step` (`run` / `compensate` / `undo`), import `ReactorModule.forRoot()`, and inject
 * `ReactorClient` to run them. When a step fails it is compensated and every completed step is
 * undone, newest first.
 *
 * ```ts
 * @Step('charge-card', { retries: { maxAttempts: 3, backoff: 'exponential', baseDelayMs: 200 } })
 * export class ChargeCard implements StepHandler<{ amount: number }, { chargeId: string }> {
 *   constructor(private readonly payments: PaymentsService) {}
 *   async run({ amount }: { amount: number }) {
 *     return success({ chargeId: await this.payments.charge(amount) });
 *   }
 *   async undo({ chargeId }: { chargeId: string }) {
 *     await this.payments.refund(chargeId);
 *   }
 * }
 *
 * @Reactor('checkout')
 * export class CheckoutReactor implements ReactorBlueprint<{ order: OrderDto }> {
 *   build(r: ReactorBuilder<{ order: OrderDto }>) {
 *     const order = r.input('order', OrderDto);
 *     return r.step('charge', ChargeCard, { amount: order.path('total') });
 *   }
 * }
 *
 * const outcome = await client.run(CheckoutReactor, { order });
 * ```
 *
 * @packageDocumentation
 */

// Nest integration
export { Step, Reactor, ReactorModule, ReactorClient, OnReactorEvent } from './nest';
export type { WaitOptions, OnReactorEventOptions } from './nest';
export {
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  REACTOR_LOCKS,
  REACTOR_DISPATCHER,
  REACTOR_CLOCK,
} from './config';
export type {
  ReactorModuleOptions,
  ReactorModuleAsyncOptions,
  ReactorAsyncModuleOptions,
  ReactorOptionsFactory,
  ReactorRedisOptions,
  ReactorBullMqOptions,
  ReactorJobOptions,
  ReactorWorkerOptions,
  ReactorSweeperOptions,
  ReactorRetentionOptions,
  ReactorRuntime,
  ReactorRuntimeKind,
} from './config';
export type { SweepResult } from './sweepers';

// Definitions
export { defineReactor, ReactorBuilder } from './core';
export type {
  StepUseOptions,
  ComposeOptions,
  StepImplementation,
  ComposeTarget,
  MapOptions,
  MapElement,
  MapSource,
} from './core';
export type { MapResults, ElementOutcome } from './core';
export { Ref } from './core';
export type { ArgRefs, Path, PathValue } from './core';
export type { ReactorDefinition, ReactorOptions, ReactorMiddlewareEntry, BackgroundOption } from './core';
export type { ReactorBlueprint, ReactorClass, ReactorInputOf, ReactorOutputOf } from './core';
export type { StepHandler, StepContext, StepOptions, InlineStep, StepClass, DtoClass } from './core';
export type { InputOptions, InputSpec, InputType } from './core';
/**
 * Step contracts: a DTO class, a record of short forms (`{ amount: { type: 'number', min: 1 } }`),
 * or, for an output, one short form for a scalar value (`{ type: 'number', min: 0 }`).
 */
export type {
  InputContract,
  OutputContract,
  ContractFields,
  ContractRule,
  ContractRuleResult,
  ContractViolation,
} from './core';
export type { RetryOptions } from './core';
export type { InterruptOptions, InterruptContext } from './core';
export type {
  LockOptions,
  SemaphoreOptions,
  RateLimitOptions,
  RateLimits,
  PeriodOptions,
  OrderedLockOptions,
  StepCoordinationOptions,
} from './core';
export type {
  FlowKey,
  FlowConcurrencyOptions,
  ThrottleOptions,
  DebounceOptions,
  BatchOptions,
  FlowHandle,
} from './core';

// Step outcomes and signals
export { success, skipped, halt, failure, Success, Skipped, Halt, Failure } from './core';
export type { StepOutcome } from './core';
export { succeedStep, failStep, haltStep, skipStep, isStepSignal } from './core';

// Run outcomes and state
export type {
  RunOutcome,
  CompletedOutcome,
  FailedOutcome,
  HaltedOutcome,
  DispatchedOutcome,
  PausedOutcome,
  PendingInterrupt,
  CancelledOutcome,
  RunFailure,
  RollbackFailure,
  RollbackFailureReason,
} from './core';
export type { RunStatus, TraceEntry } from './core';
export type {
  RunView,
  RunOptions,
  RunRetryOptions,
  RetryManyQuery,
  RetryManyResult,
  UndoOptions,
  ListQuery,
  RunList,
  RunSummary,
} from './core';
export type { FlowQueues } from './core';
export type { ContinueOptions, ContinueResult, ResumeClaim, InterruptRecord, AsyncUnitView } from './core';
/** Durable sleep: `r.sleep(name, { ms } | { until })`, its value, and where a run sleeps (`RunView.sleeping`). */
export type { SleepOptions, SleepResult, SleepingStep } from './core';
/** Events: `client.emit(name, payload, { id })`, `@Reactor(name, { on })` and `r.interrupt(name, { event, match })`. */
export type { EmitOptions, EmitResult, ReactorEventTrigger, EventWaitingRun } from './core';
/**
 * Schedules: `client.schedules.upsert({ id, reactor, cron | everyMs, tz, input, overlap })`, `list`,
 * `pause`, `resume`, `remove`, `trigger`, and `@Reactor(name, { schedule })`.
 */
export { ReactorSchedules } from './nest';
export type { ScheduleUpsertOptions } from './nest';
export { scheduledRunId } from './core';
export type {
  ScheduleView,
  ScheduleTriggerResult,
  ScheduleOverlap,
  ScheduleLastTick,
  ReactorScheduleOption,
} from './core';

// Middleware
export type { ReactorMiddleware, ReactorEvent, ReactorEventType } from './core';

// Errors
export {
  ReactorError,
  DefinitionError,
  InputValidationError,
  ArgumentResolutionError,
  UnexpectedResultError,
  RunNotFoundError,
  InvalidRunStateError,
  IdempotencyConflictError,
  UnknownReactorError,
  LeaseLostError,
  ContextTooLargeError,
  CorruptRecordError,
  DefinitionChangedError,
  WaitTimeoutError,
  ConfigurationError,
  InternalError,
  AlreadyResumedError,
  PayloadValidationError,
  NotPausedError,
  UnknownInterruptError,
  InterruptTimedOutError,
  UnknownCorrelationIdError,
  CorrelationIdTakenError,
  InterruptNotSupportedError,
  AsyncWaitTimeoutError,
  AsyncUnitFailedError,
  CoordinationContendedError,
  FlowQueueFullError,
  CoordinationLostError,
  AsyncDeadlockError,
  StepAbortedError,
  isStepAborted,
  ScheduleNotFoundError,
  InvalidArgumentError,
  StorageUnavailableError,
} from './core';
export type { ReactorErrorCode, FieldErrors, SerializedError } from './core';
export type { StepAbortCause, StepAbortSite } from './core';

// Engine and ports, for use without Nest and for custom adapters
export { ReactorEngine } from './core';
export type { ReactorEngineOptions, EngineLogger, RunOnOtherDefinition } from './core';
export type { DrainResult } from './core';
export type {
  ReactorStorage,
  SaveOptions,
  BrokenReason,
  LockManager,
  Lease,
  JobDispatcher,
  ReactorJob,
  JobKind,
  JobHandler,
  Clock,
  StepResolver,
  ClaimResult,
  MapStore,
  InterruptStore,
  CoordinationStore,
  FlowStore,
  FlowKeyView,
  ScheduleBackend,
  ScheduleStore,
  ScheduleTicker,
  ScheduleDefinition,
  LockReply,
  SemaphoreReply,
  RateReply,
  RateWindow,
  OrderTurn,
  ClaimReply,
  RejectReply,
  MailReply,
  ElementClaim,
  ElementSettled,
} from './core';
export type { MapMeta, MapProgress, ElementRecord, MapRollbackProgress } from './core';
export { systemClock } from './core';

// Adapters, for wiring the engine without Nest (workers, scripts) or testing custom ones
export {
  RedisKeys,
  RedisReactorStorage,
  RedisLockManager,
  RedisMapStore,
  RedisInterruptStore,
  RedisCoordinationStore,
  RedisFlowStore,
} from './storage/redis';
export type {
  RedisKeysOptions,
  RedisReactorStorageOptions,
  RedisLockManagerOptions,
  RedisMapStoreOptions,
  RedisInterruptStoreOptions,
  RedisCoordinationStoreOptions,
  RedisFlowStoreOptions,
} from './storage/redis';
export { createAesGcmInputCipher } from './storage/aes-gcm-input.cipher';
export type { AesGcmInputCipherOptions } from './storage/aes-gcm-input.cipher';
export type { InputCipher, CipherContext } from './core';
export { BullMqJobDispatcher, JOB_RETRIES_EXHAUSTED, REACTOR_QUEUE_NAME, reactorQueueToken } from './queue';
export { ReactorQueues } from './queue';
export type { BullMqJobDispatcherOptions } from './queue';

// OpenTelemetry: the instrumentation scope, span attribute and event names (docs/observability.md)
export { REACTOR_TRACER_NAME, ReactorTraceAttributes, ReactorTraceEvents } from './core';
export type { ReactorTracingOptions, TracingOption } from './core';
// A worker of the app's own that hands BullMQ jobs to the engine: the job id and attempt of its spans
export { withDelivery } from './core';
export type { JobDelivery, JobMessaging } from './core';

/** Callback tokens: `r.interrupt(name, { token: { expiresInMs } })`, `ReactorCallbackModule`, `client.callbackToken`. */
export { ReactorCallbackModule, CallbackTokens } from './callback';
export type { ReactorCallbackOptions, CallbackAnswer, CallbackTokenClaim, CallbackTokenCheck } from './callback';
export type { InterruptCallback, InterruptTokenOptions } from './core';

/** Live runs: `client.watch(runId)`, `wait()` woken by the run's event bus, `runEventsSse` for a Nest `@Sse()` route. */
export type {
  RunEventBus,
  RunEventEntry,
  RunLiveEvent,
  RunLiveEventType,
  RunWakeUp,
  RunWatchEvent,
  RunWatchOptions,
} from './core';
export { runEventsSse, LiveEventsMiddleware, toLiveEvent, type RunEventMessage, type RunWatcher } from './live';
export { RedisRunEventBus, type RedisRunEventBusOptions } from './storage/redis/redis-run-events';

/** Search: run tags (`tags` on start, `ctx.tag` from a step) and their limits. */
export type { TagFilter } from './core/validation/run-tags';
export { TAG_KEY_PATTERN, MAX_TAG_VALUE_LENGTH, MAX_TAGS_PER_RUN } from './core/validation/run-tags';
