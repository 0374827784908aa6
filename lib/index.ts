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
export { Step, Reactor, ReactorModule, ReactorClient } from './nest';
export type { WaitOptions } from './nest';
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
  ReactorRedisOptions,
  ReactorSweeperOptions,
  ReactorRuntime,
  ReactorRuntimeKind,
} from './config';
export type { SweepResult } from './sweepers';

// Definitions
export { defineReactor, ReactorBuilder } from './core/definition/builder';
export type {
  StepUseOptions,
  ComposeOptions,
  StepImplementation,
  ComposeTarget,
  MapOptions,
  MapElement,
  MapSource,
} from './core/definition/builder';
export type { MapResults, ElementOutcome } from './core/map/map-results';
export { Ref } from './core/definition/ref';
export type { ArgRefs, Path, PathValue } from './core/definition/ref';
export type { ReactorDefinition, ReactorOptions, BackgroundOption } from './core/definition/definition';
export type {
  ReactorBlueprint,
  ReactorClass,
  ReactorInputOf,
  ReactorOutputOf,
} from './core/definition/reactor-blueprint';
export type { StepHandler, StepContext, StepOptions, InlineStep, StepClass, DtoClass } from './core/definition/step';
export type { InputOptions, InputSpec, InputType } from './core/definition/input-spec';
export type { RetryOptions } from './core/definition/retry-policy';

// Step outcomes and signals
export { success, skipped, halt, failure, Success, Skipped, Halt, Failure } from './core/results/step-outcome';
export type { StepOutcome } from './core/results/step-outcome';
export { succeedStep, failStep, haltStep, skipStep, isStepSignal } from './core/results/step-signal';

// Run outcomes and state
export type {
  RunOutcome,
  CompletedOutcome,
  FailedOutcome,
  HaltedOutcome,
  DispatchedOutcome,
  PausedOutcome,
  CancelledOutcome,
  RunFailure,
  RollbackFailure,
  RollbackFailureReason,
} from './core/results/run-outcome';
export type { RunStatus, TraceEntry } from './core/model/run-state';
export type { RunView, RunOptions } from './core/engine';

// Middleware
export type { ReactorMiddleware, ReactorEvent, ReactorEventType } from './core/middleware/events';

// Errors
export {
  ReactorError,
  DefinitionError,
  InputValidationError,
  ArgumentResolutionError,
  UnexpectedResultError,
  RunNotFoundError,
  InvalidRunStateError,
  UnknownReactorError,
  LeaseLostError,
  ContextTooLargeError,
  CorruptRecordError,
  DefinitionChangedError,
  WaitTimeoutError,
} from './core/errors';
export type { ReactorErrorCode, FieldErrors, SerializedError } from './core/errors';

// Engine and ports, for use without Nest and for custom adapters
export { ReactorEngine } from './core/engine';
export type { ReactorEngineOptions, EngineLogger } from './core/engine';
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
  ElementClaim,
  ElementSettled,
} from './core/ports';
export type { MapMeta, MapProgress, ElementRecord, MapRollbackProgress } from './core/model';
export { systemClock } from './core/ports';

// Adapters, for wiring the engine without Nest (workers, scripts) or testing custom ones
export { RedisKeys, RedisReactorStorage, RedisLockManager, RedisMapStore } from './storage/redis';
export type {
  RedisKeysOptions,
  RedisReactorStorageOptions,
  RedisLockManagerOptions,
  RedisMapStoreOptions,
} from './storage/redis';
export { BullMqJobDispatcher, JOB_RETRIES_EXHAUSTED } from './queue';
export type { BullMqJobDispatcherOptions } from './queue';
