/**
 * nest-reactor/metrics: Prometheus metrics of the ReactorModule through prom-client. A separate
 * entry point, so that `nest-reactor` itself never loads `prom-client` (an optional peer
 * dependency): only an application that imports this entry needs it.
 *
 * ```ts
 * import { ReactorMetricsModule } from 'nest-reactor/metrics';
 *
 * @Module({
 *   imports: [ReactorModule.forRoot({ redis: { url } }), ReactorMetricsModule.forRoot({ controller: true })],
 * })
 * export class AppModule {}
 * ```
 *
 * @packageDocumentation
 */
export { ReactorMetricsModule } from './reactor-metrics.module';
export { ReactorMetrics } from './reactor-metrics';
export { ReactorMetricsController } from './reactor-metrics.controller';
export type { ReactorMetricsOptions, MetricsRegistry } from './metrics.options';
