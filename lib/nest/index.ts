/**
 * The Nest layer of nest-reactor: the module, decorators, client and option validation. The options'
 * types and the injection tokens are in `../config`, the runtimes in `../runtime`.
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
export { OnReactorEvent, type OnReactorEventOptions } from './on-reactor-event.decorator';
export { ReactorModule } from './reactor.module';
export { ReactorClient, type WaitOptions } from './reactor.client';
export { ReactorSchedules, type ScheduleUpsertOptions } from './reactor-schedules';
export { REACTOR_MODULE_DEFAULTS, resolveReactorModuleOptions } from './reactor-module.options';
