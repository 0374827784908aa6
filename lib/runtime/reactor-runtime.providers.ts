import { getQueueToken } from '@nestjs/bullmq';
import { Logger, type Provider } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ConfigurationError, type Clock } from '../core';
import { REACTOR_QUEUE_NAME } from '../queue/queue.constants';
import { ReactorQueues } from '../queue/reactor-queues';
import { RedisReactorRuntime } from './redis.runtime';
import { EmbeddedReactorRuntime } from './embedded.runtime';
import {
  type ReactorRuntimeKind,
  type ResolvedReactorModuleOptions,
  type ReactorRuntime,
  REACTOR_CLOCK,
  REACTOR_DISPATCHER,
  REACTOR_LOCKS,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  messages,
} from '../config';

/**
 * Build the runtime the options ask for: with `redis`, the Redis runtime on the module's BullMQ
 * `queue` (it logs that the durable runtime is on); without, the embedded runtime (and one
 * warning saying it is not durable).
 */
export function createReactorRuntime(
  options: ResolvedReactorModuleOptions,
  clock: Clock,
  queue?: Queue,
): ReactorRuntime {
  const logger = new Logger(REACTOR_LOGGER_CONTEXT);
  if (options.redis) {
    // The module only has the queue when it was declared with the Redis runtime (forRoot with
    // `redis`, or forRootAsync with runtime: 'redis'); the options factory checks they agree.
    if (!queue) throw new ConfigurationError(messages.runtimeMismatch('embedded'), 'runtime');
    return new RedisReactorRuntime(options, queue, logger);
  }
  logger.warn(messages.embeddedRuntimeWarning());
  return new EmbeddedReactorRuntime(clock, logger, {
    maxContextBytes: options.maxContextBytes,
    inputCipher: options.inputCipher,
    // With `retention`, records expire as on Redis (on the module's clock); without, they are kept
    // until the application stops, as they always were.
    ...(Object.keys(options.retention).length > 0
      ? { contextTtlMs: options.contextTtlMs, retention: options.retention }
      : {}),
  });
}

/**
 * The runtime and its adapters, each under its own token. Every one derives from `REACTOR_OPTIONS`;
 * the Redis runtime also takes the BullMQ queue `@nestjs/bullmq` registers for the module.
 */
export function reactorRuntimeProviders(kind: ReactorRuntimeKind): Provider[] {
  return [
    {
      provide: REACTOR_CLOCK,
      useFactory: (options: ResolvedReactorModuleOptions): Clock => options.clock,
      inject: [REACTOR_OPTIONS],
    },
    {
      provide: REACTOR_RUNTIME,
      useFactory: createReactorRuntime,
      inject:
        kind === 'redis'
          ? [REACTOR_OPTIONS, REACTOR_CLOCK, getQueueToken(REACTOR_QUEUE_NAME)]
          : [REACTOR_OPTIONS, REACTOR_CLOCK],
    },
    { provide: REACTOR_STORAGE, useFactory: (runtime: ReactorRuntime) => runtime.storage, inject: [REACTOR_RUNTIME] },
    { provide: REACTOR_LOCKS, useFactory: (runtime: ReactorRuntime) => runtime.locks, inject: [REACTOR_RUNTIME] },
    {
      // The module's BullMQ queues (none on the embedded runtime), for Bull Board and metrics.
      provide: ReactorQueues,
      useFactory: (runtime: ReactorRuntime) =>
        runtime instanceof RedisReactorRuntime ? runtime.queues : new ReactorQueues(),
      inject: [REACTOR_RUNTIME],
    },
    {
      provide: REACTOR_DISPATCHER,
      useFactory: (runtime: ReactorRuntime) => runtime.dispatcher,
      inject: [REACTOR_RUNTIME],
    },
  ];
}
