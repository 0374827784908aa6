import { Logger, type LoggerService, type Provider } from '@nestjs/common';
import {
  ReactorEngine,
  type EngineLogger,
  type Clock,
  type JobDispatcher,
  type LockManager,
  type ReactorStorage,
} from '../core';
import {
  type ResolvedReactorModuleOptions,
  REACTOR_CLOCK,
  REACTOR_DISPATCHER,
  REACTOR_LOCKS,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  type ReactorRuntime,
} from '../config';
import { ReactorRegistry } from './reactor.registry';
import { LiveEventsMiddleware } from '../live/live-events.middleware';

/** The engine's logger, over a Nest logger. */
export function nestEngineLogger(logger: LoggerService): EngineLogger {
  return {
    log: (message) => logger.log(message),
    warn: (message) => logger.warn(message),
    error: (message) => logger.error(message),
  };
}

/** Build the engine from the runtime's adapters, the options and the registry (its step resolver). */
export function createReactorEngine(
  options: ResolvedReactorModuleOptions,
  storage: ReactorStorage,
  locks: LockManager,
  dispatcher: JobDispatcher,
  clock: Clock,
  registry: ReactorRegistry,
  runtime: ReactorRuntime,
): ReactorEngine {
  const logger = nestEngineLogger(new Logger(REACTOR_LOGGER_CONTEXT));
  const engine = new ReactorEngine({
    storage,
    locks,
    maps: runtime.maps,
    interrupts: runtime.interrupts,
    coordination: runtime.coordination,
    flow: runtime.flow,
    interruptRetentionMs: options.contextTtlMs,
    earlyResumeTtlMs: options.earlyResumeTtlMs,
    asyncWaitTimeoutMs: options.asyncWaitTimeoutMs,
    asyncParkTimeoutMs: options.asyncParkTimeoutMs,
    rateLimits: options.rateLimits,
    lockSnoozeMaxAttempts: options.lockSnoozeMaxAttempts,
    dispatcher,
    clock,
    resolver: registry,
    middleware: [...options.middleware],
    leaseTtlMs: options.leaseTtlMs,
    checkpointMinIntervalMs: options.checkpointMinIntervalMs,
    maxContextBytes: options.maxContextBytes,
    unknownReactorRetries: options.unknownReactorRetries,
    unknownReactorDelayMs: options.unknownReactorDelayMs,
    idempotencyWindowMs: options.idempotencyWindowMs,
    snoozeDelayMs: options.snoozeDelayMs,
    tracing: options.tracing,
    logger,
  });
  // Live runs: `wait` wakes on the runtime's bus; with `liveEvents`, every lifecycle event is logged for `watch`.
  if (runtime.runEvents) {
    engine.useRunEvents(runtime.runEvents, { logSettles: options.liveEvents });
    if (options.liveEvents) engine.addMiddleware(new LiveEventsMiddleware(runtime.runEvents, logger));
  }
  return engine;
}

/** The `ReactorEngine` of the module (injected by class). */
export const reactorEngineProvider: Provider = {
  provide: ReactorEngine,
  useFactory: createReactorEngine,
  inject: [
    REACTOR_OPTIONS,
    REACTOR_STORAGE,
    REACTOR_LOCKS,
    REACTOR_DISPATCHER,
    REACTOR_CLOCK,
    ReactorRegistry,
    REACTOR_RUNTIME,
  ],
};
