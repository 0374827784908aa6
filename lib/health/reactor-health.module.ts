import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ReactorHealthIndicator } from './reactor-health.indicator';
import { ReactorQueuesAccessor } from './reactor-queues.accessor';

/**
 * Provides {@link ReactorHealthIndicator} for `@nestjs/terminus` health checks. Import it beside
 * `ReactorModule` (global, the default) and terminus's `TerminusModule`, which gives your
 * controller the `HealthCheckService`:
 *
 * ```ts
 * import { ReactorHealthModule } from 'nest-reactor/health';
 *
 * @Module({
 *   imports: [ReactorModule.forRoot({ redis: { url } }), TerminusModule, ReactorHealthModule],
 *   controllers: [HealthController],
 * })
 * export class AppModule {}
 * ```
 *
 * NOTE: it provides terminus's `HealthIndicatorService` (a stateless helper) itself rather than
 * importing `TerminusModule`: the application's own `TerminusModule` (plain, `forRoot` or
 * `forRootAsync`) keeps its options, and no second copy of terminus's services is created.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [HealthIndicatorService, ReactorQueuesAccessor, ReactorHealthIndicator],
  exports: [ReactorHealthIndicator],
})
export class ReactorHealthModule {}
