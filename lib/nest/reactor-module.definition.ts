import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { ReactorAsyncModuleOptions, ReactorRuntimeKind } from '../config';

/**
 * Nest's `ConfigurableModuleBuilder` for the module's async options: it turns `useFactory` (with
 * `inject`), `useClass` and `useExisting` into the provider of {@link REACTOR_ASYNC_OPTIONS} the
 * way every Nest module does (the factory method of a `useClass`/`useExisting` provider is
 * `createReactorOptions`). `ReactorModule.forRootAsync` takes the providers and imports it
 * generates and validates what they produce; `global` and `runtime` are extras, read before any
 * provider runs because they decide the module's shape.
 * @internal
 */
export const { ConfigurableModuleClass: ReactorAsyncOptionsBuilder, MODULE_OPTIONS_TOKEN: REACTOR_ASYNC_OPTIONS } =
  new ConfigurableModuleBuilder<ReactorAsyncModuleOptions>({ moduleName: 'Reactor' })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createReactorOptions')
    .setExtras<{ global?: boolean; runtime?: ReactorRuntimeKind }>({}, (definition) => definition)
    .build();
