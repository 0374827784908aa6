import { randomUUID } from 'node:crypto';
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ConfigurationError } from '../core';
import { reactorQueueImports } from '../queue/reactor-queue.imports';
import { RunProcessor } from '../queue/run.processor';
import { ReactorQueues } from '../queue/reactor-queues';
import { reactorRuntimeProviders } from '../runtime/reactor-runtime.providers';
import { ReactorSweeper } from '../sweepers/reactor.sweeper';
import { SweeperScheduler } from '../sweepers/sweeper.scheduler';
import {
  type ReactorModuleAsyncOptions,
  type ReactorModuleOptions,
  type ReactorRuntimeKind,
  REACTOR_CLOCK,
  REACTOR_DISPATCHER,
  REACTOR_LOCKS,
  REACTOR_MODULE_ID,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  messages,
} from '../config';
import { resolveReactorModuleOptions, resolveRuntimeKind, runtimeKindOf } from './reactor-module.options';
import { reactorEngineProvider } from './reactor-engine.provider';
import { REACTOR_ASYNC_OPTIONS, ReactorAsyncOptionsBuilder } from './reactor-module.definition';
import { ReactorClient } from './reactor.client';
import { ReactorExplorer } from './reactor.explorer';
import { ReactorListeners } from './reactor-listeners';
import { ReactorLifecycle } from './reactor.lifecycle';
import { ReactorRegistry } from './reactor.registry';
import { ReactorSchedules } from './reactor-schedules';

const EXPORTS = [
  ReactorClient,
  ReactorSchedules,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  REACTOR_LOCKS,
  REACTOR_DISPATCHER,
  REACTOR_CLOCK,
  ReactorQueues,
  ReactorListeners,
];

/**
 * Provides `REACTOR_OPTIONS` (from `forRoot` options, or the `forRootAsync` factory with its
 * imports). Imported by the inner module and by the BullMQ configuration.
 * @internal
 */
@Module({})
export class ReactorOptionsModule {}

/**
 * Holds the module's providers and lifecycle hooks. It is never global, so Nest runs its hooks
 * after every global module's bootstrap and before their shutdown (see `ReactorLifecycle`).
 * @internal
 */
@Module({})
export class ReactorCoreModule {}

/**
 * Durable saga orchestration for Nest. Import it once, in the root module:
 *
 * ```ts
 * @Module({
 *   imports: [ReactorModule.forRoot()],                 // embedded: in-memory, not durable
 *   providers: [ReserveInventory, ChargePayment, CheckoutReactor, InventoryService, PaymentsService],
 * })
 * export class AppModule {}
 * ```
 *
 * Durable, on Redis and BullMQ (the app imports `ScheduleModule` once, for the recovery sweeper):
 *
 * ```ts
 * @Module({
 *   imports: [
 *     ScheduleModule.forRoot(),
 *     ReactorModule.forRoot({ redis: { url: process.env.REDIS_URL! }, prefix: 'orders' }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 *
 * At boot the module discovers every `@Step` and `@Reactor` provider, builds and validates the
 * reactor definitions (a bad one fails `app.init()`), then starts its workers and schedules its
 * sweeper at bootstrap. Inject {@link ReactorClient} to run reactors. The module is global unless
 * `global: false`.
 *
 * With Redis, the module registers its BullMQ queue (`nest-reactor`) and worker through
 * `@nestjs/bullmq` under its own config key, so the application's `BullModule.forRoot()` is left
 * alone.
 */
@Module({})
export class ReactorModule {
  /** Configure the module with static options (validated here, at import time). */
  static forRoot(options: ReactorModuleOptions = {}): DynamicModule {
    const resolved = resolveReactorModuleOptions(options);
    // NOTE: a factory, not `useValue`: Nest hashes a dynamic module's metadata to identify it,
    // and options may hold a live connection (slow to hash, and its state changes meanwhile).
    return ReactorModule.assemble(
      resolved.global,
      runtimeKindOf(resolved),
      [],
      [{ provide: REACTOR_OPTIONS, useFactory: () => resolved }],
    );
  }

  /**
   * Configure the module asynchronously, with Nest's `ConfigurableModuleBuilder` conventions:
   * `useFactory` (with `inject`), `useClass` or `useExisting` (a {@link ReactorOptionsFactory},
   * whose `createReactorOptions()` returns the options), and `imports`. `global` and `runtime`
   * change the module's shape, so they are given here, beside the factory; `runtime: 'redis'` is
   * required when the options hold `redis` (a boot error says so when it is missing). What the
   * factory returns is validated like `forRoot` options when the module is instantiated.
   *
   * ```ts
   * ReactorModule.forRootAsync({
   *   runtime: 'redis',
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ redis: { url: config.getOrThrow('REDIS_URL') } }),
   * })
   * ```
   */
  static forRootAsync(options: ReactorModuleAsyncOptions): DynamicModule {
    const given = (['useFactory', 'useClass', 'useExisting'] as const).filter((key) => options?.[key] !== undefined);
    if (given.length !== 1 || (options.useFactory !== undefined && typeof options.useFactory !== 'function'))
      throw new ConfigurationError(messages.asyncOptionsWithoutFactory(given), given[0] ?? 'useFactory');
    const { global } = resolveReactorModuleOptions({ global: options.global });
    const runtime = resolveRuntimeKind(options.runtime);
    const generated = ReactorAsyncOptionsBuilder.forRootAsync(
      options as Parameters<typeof ReactorAsyncOptionsBuilder.forRootAsync>[0],
    );
    return ReactorModule.assemble(global, runtime, generated.imports ?? [], [
      ...(generated.providers ?? []),
      {
        provide: REACTOR_OPTIONS,
        useFactory: (raw: ReactorModuleOptions) => {
          if (raw !== null && typeof raw === 'object' && 'global' in raw)
            throw new ConfigurationError(messages.asyncFactoryReturnedGlobal(), 'global');
          if (raw !== null && typeof raw === 'object' && 'runtime' in raw)
            throw new ConfigurationError(messages.asyncFactoryReturnedRuntime(), 'runtime');
          const resolved = resolveReactorModuleOptions(raw);
          if (runtimeKindOf(resolved) !== runtime)
            throw new ConfigurationError(messages.runtimeMismatch(runtime), 'runtime');
          return resolved;
        },
        inject: [REACTOR_ASYNC_OPTIONS],
      },
    ]);
  }

  /**
   * The module tree: this (global unless `global: false`) imports and re-exports the inner module,
   * which holds every provider; the options live in their own module so that the BullMQ
   * configuration can read them too.
   */
  private static assemble(
    global: boolean,
    runtime: ReactorRuntimeKind,
    imports: NonNullable<DynamicModule['imports']>,
    optionsProviders: Provider[],
  ): DynamicModule {
    const optionsModule: DynamicModule = {
      module: ReactorOptionsModule,
      imports,
      // The id makes each forRoot/forRootAsync call a distinct module (see the note in forRoot).
      providers: [...optionsProviders, { provide: REACTOR_MODULE_ID, useValue: randomUUID() }],
      exports: [REACTOR_OPTIONS],
    };
    const redis = runtime === 'redis';
    const core: DynamicModule = {
      module: ReactorCoreModule,
      imports: [DiscoveryModule, optionsModule, ...(redis ? reactorQueueImports(optionsModule) : [])],
      providers: [
        ...reactorRuntimeProviders(runtime),
        ReactorRegistry,
        reactorEngineProvider,
        ReactorListeners,
        ReactorExplorer,
        ReactorSweeper,
        ...(redis ? [RunProcessor, SweeperScheduler] : []),
        ReactorSchedules,
        ReactorLifecycle,
        ReactorClient,
      ],
      exports: [...EXPORTS, optionsModule],
    };
    return { module: ReactorModule, global, imports: [core], exports: [core] };
  }
}
