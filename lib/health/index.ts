/**
 * nest-reactor/health: a `@nestjs/terminus` health indicator for the ReactorModule. A separate
 * entry point, so that `nest-reactor` itself never loads `@nestjs/terminus` (an optional peer
 * dependency): only an application that imports this entry needs it.
 *
 * ```ts
 * import { ReactorHealthIndicator, ReactorHealthModule } from 'nest-reactor/health';
 *
 * @Controller('health')
 * export class HealthController {
 *   constructor(
 *     private readonly health: HealthCheckService,
 *     private readonly reactor: ReactorHealthIndicator,
 *   ) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.reactor.isHealthy('reactor', { maxBacklog: 1_000 })]);
 *   }
 * }
 * ```
 *
 * @packageDocumentation
 */
export { ReactorHealthModule } from './reactor-health.module';
export { ReactorHealthIndicator } from './reactor-health.indicator';
export type {
  ReactorHealthOptions,
  ReactorHealthDetails,
  ReactorRedisHealth,
  ReactorWorkersHealth,
  ReactorSweeperHealth,
  ReactorBacklogHealth,
} from './reactor-health.indicator';
export type { ReactorWorkerView } from './reactor-queues.accessor';
