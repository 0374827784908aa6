import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type { ReactorModuleAsyncOptions, ReactorModuleOptions } from './reactor-module-options.interface';
import { resolveReactorModuleOptions } from './reactor-module.options';
import { reactorEngineProvider } from './reactor-engine.provider';
import { reactorRuntimeProviders } from './reactor-runtime.providers';
import { ReactorClient } from './reactor.client';
import {
  REACTOR_CLOCK,
  REACTOR_DISPATCHER,
  REACTOR_LOCKS,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
} from './reactor.constants';
import { ReactorExplorer } from './reactor.explorer';
import { ReactorLifecycle } from './reactor.lifecycle';
import { ReactorRegistry } from './reactor.registry';
import { messages } from './reactor.messages';

const EXPORTS = [
  ReactorClient,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  REACTOR_LOCKS,
  REACTOR_DISPATCHER,
  REACTOR_CLOCK,
];

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
 * At boot the module discovers every `@Step` and `@Reactor` provider, builds and validates the
 * reactor definitions (a bad one fails `app.init()`), then starts its workers at application
 * bootstrap. Inject {@link ReactorClient} to run reactors. The module is global unless
 * `global: false`.
 */
@Module({})
export class ReactorModule {
  /** Configure the module with static options (validated here, at import time). */
  static forRoot(options: ReactorModuleOptions = {}): DynamicModule {
    const resolved = resolveReactorModuleOptions(options);
    return ReactorModule.assemble(resolved.global, [], { provide: REACTOR_OPTIONS, useValue: resolved });
  }

  /**
   * Configure the module from a factory that may inject providers. `global` changes the module's
   * shape, so it is given here, beside the factory. The factory's result is validated like
   * `forRoot` options when the module is instantiated.
   */
  static forRootAsync(options: ReactorModuleAsyncOptions): DynamicModule {
    if (!options || typeof options.useFactory !== 'function') throw new Error(messages.asyncOptionsWithoutFactory());
    const { global } = resolveReactorModuleOptions({ global: options.global });
    const useFactory = options.useFactory as (
      ...deps: unknown[]
    ) => ReturnType<ReactorModuleAsyncOptions['useFactory']>;
    return ReactorModule.assemble(global, options.imports ?? [], {
      provide: REACTOR_OPTIONS,
      useFactory: async (...deps: unknown[]) => {
        const raw: ReactorModuleOptions = await useFactory(...deps);
        if (raw !== null && typeof raw === 'object' && 'global' in raw)
          throw new Error(messages.asyncFactoryReturnedGlobal());
        return resolveReactorModuleOptions(raw);
      },
      inject: options.inject ?? [],
    });
  }

  private static assemble(
    global: boolean,
    imports: NonNullable<DynamicModule['imports']>,
    optionsProvider: Provider,
  ): DynamicModule {
    return {
      module: ReactorModule,
      global,
      imports: [DiscoveryModule, ...imports],
      providers: [
        optionsProvider,
        ...reactorRuntimeProviders,
        ReactorRegistry,
        reactorEngineProvider,
        ReactorExplorer,
        ReactorLifecycle,
        ReactorClient,
      ],
      exports: EXPORTS,
    };
  }
}
