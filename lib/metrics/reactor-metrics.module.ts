import { Controller, Module, type DynamicModule } from '@nestjs/common';
import { ReactorMetrics } from './reactor-metrics';
import { ReactorMetricsController } from './reactor-metrics.controller';
import { METRICS_OPTIONS, resolveMetricsOptions, type ReactorMetricsOptions } from './metrics.options';

/**
 * Prometheus metrics of the ReactorModule, through prom-client: runs started and finished, step
 * durations, retries, compensations, undos and lease losses (from the lifecycle events of the runs
 * this process executes), and, read at each scrape, the jobs and the oldest waiting job's age of
 * each BullMQ queue and the recovery sweeper's results. Needs `ReactorModule` (global by default;
 * otherwise pass it in `imports`).
 *
 * ```ts
 * @Module({
 *   imports: [
 *     ReactorModule.forRoot({ redis: { url } }),
 *     ReactorMetricsModule.forRoot({ controller: true }), // GET /metrics
 *   ],
 * })
 * export class AppModule {}
 * ```
 *
 * Refuses to boot (a `ConfigurationError`) when the registry already holds a metric of one of its
 * names: give a second module on the same registry another `prefix`.
 */
@Module({})
export class ReactorMetricsModule {
  /** Register the metrics on `options.registry` (default: prom-client's global registry). */
  static forRoot(options: ReactorMetricsOptions = {}): DynamicModule {
    const resolved = resolveMetricsOptions(options);
    const controllers = [];
    if (resolved.controller) {
      // A controller class of its own per mount: its path is this call's.
      class MountedMetricsController extends ReactorMetricsController {}
      Controller(resolved.path)(MountedMetricsController);
      controllers.push(MountedMetricsController);
    }
    return {
      module: ReactorMetricsModule,
      imports: resolved.imports,
      controllers,
      providers: [{ provide: METRICS_OPTIONS, useValue: resolved }, ReactorMetrics],
      exports: [ReactorMetrics],
    };
  }
}
