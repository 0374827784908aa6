/**
 * The Nest layer of nest-reactor: the module, decorators, client, options and tokens.
 *
 * ```ts
 * @Module({ imports: [ReactorModule.forRoot()], providers: [ChargeCard, CheckoutReactor] })
 * export class AppModule {}
 *
 * // durable: Redis and BullMQ, with the recovery sweeper driven by @nestjs/schedule
 * @Module({
 *   imports: [ScheduleModule.forRoot(), ReactorModule.forRoot({ redis: { url: process.env.REDIS_URL! } })],
 *   providers: [ChargeCard, CheckoutReactor],
 * })
 * export class AppModule {}
 * ```
 */
export { Step } from './step.decorator';
export { Reactor } from './reactor.decorator';
export { ReactorModule } from './reactor.module';
export { ReactorClient, type WaitOptions } from './reactor.client';
export type {
  ReactorModuleOptions,
  ReactorModuleAsyncOptions,
  ReactorRedisOptions,
  ReactorSweeperOptions,
  ReactorRuntimeKind,
  ResolvedReactorModuleOptions,
} from './reactor-module-options.interface';
export { REACTOR_MODULE_DEFAULTS, resolveReactorModuleOptions } from './reactor-module.options';
export type { ReactorRuntime } from './reactor-runtime.interface';
export { EmbeddedReactorRuntime } from './embedded.runtime';
export {
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  REACTOR_LOCKS,
  REACTOR_DISPATCHER,
  REACTOR_CLOCK,
} from './reactor.constants';
