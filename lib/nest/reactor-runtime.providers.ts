import { Logger, type Provider } from '@nestjs/common';
import type { Clock } from '../core/ports/clock.port';
import { EmbeddedReactorRuntime } from './embedded.runtime';
import type { ResolvedReactorModuleOptions } from './reactor-module-options.interface';
import type { ReactorRuntime } from './reactor-runtime.interface';
import {
  REACTOR_CLOCK,
  REACTOR_DISPATCHER,
  REACTOR_LOCKS,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
} from './reactor.constants';
import { messages } from './reactor.messages';

/**
 * Build the runtime the options ask for. Without `redis`, the embedded runtime (and one warning
 * saying it is not durable).
 */
export function createReactorRuntime(options: ResolvedReactorModuleOptions, clock: Clock): ReactorRuntime {
  // NOTE: the Redis runtime plugs in here; everything downstream depends only on the tokens.
  if (options.redis) throw new Error(messages.redisNotAvailableYet());
  const logger = new Logger(REACTOR_LOGGER_CONTEXT);
  logger.warn(messages.embeddedRuntimeWarning());
  return new EmbeddedReactorRuntime(clock, logger);
}

/** The runtime and its adapters, each under its own token. Every one derives from `REACTOR_OPTIONS`. */
export const reactorRuntimeProviders: Provider[] = [
  {
    provide: REACTOR_CLOCK,
    useFactory: (options: ResolvedReactorModuleOptions): Clock => options.clock,
    inject: [REACTOR_OPTIONS],
  },
  { provide: REACTOR_RUNTIME, useFactory: createReactorRuntime, inject: [REACTOR_OPTIONS, REACTOR_CLOCK] },
  { provide: REACTOR_STORAGE, useFactory: (runtime: ReactorRuntime) => runtime.storage, inject: [REACTOR_RUNTIME] },
  { provide: REACTOR_LOCKS, useFactory: (runtime: ReactorRuntime) => runtime.locks, inject: [REACTOR_RUNTIME] },
  {
    provide: REACTOR_DISPATCHER,
    useFactory: (runtime: ReactorRuntime) => runtime.dispatcher,
    inject: [REACTOR_RUNTIME],
  },
];
