import { Controller, Logger, Module, UseGuards, type DynamicModule } from '@nestjs/common';
import { messages } from '../config';
import { DashboardActionGuard } from './dashboard-action.guard';
import { DashboardAssets } from './dashboard-assets';
import { DashboardController } from './dashboard.controller';
import { DASHBOARD_OPTIONS, resolveDashboardOptions, type ReactorDashboardOptions } from './dashboard.options';
import { DashboardService } from './dashboard.service';

/**
 * The reactor dashboard: a page (runs table with live counts, each run's DAG, trace, maps and
 * children, and the actions) and its JSON API, mounted into your Nest app at `path`, behind your
 * guard. Needs `ReactorModule` (global by default; otherwise pass it in `imports`).
 *
 * ```ts
 * import { ReactorDashboardModule } from 'nest-reactor/dashboard';
 *
 * @Module({
 *   imports: [
 *     ReactorModule.forRoot({ redis: { url } }),
 *     ReactorDashboardModule.forRoot({ path: 'admin/reactor', guard: AdminGuard }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 *
 * Without a guard it refuses to mount (a `ConfigurationError`) unless `NODE_ENV` is `development`.
 * Every route goes through the guard; actions are POSTs with a JSON body and the header
 * `x-reactor-dashboard: 1`, whose browser `Origin` must be the dashboard's (scheme, host and port:
 * the request's own, or `publicOrigin`; forwarding headers only with `trustProxy`), so a page on
 * another site cannot forge them, even when the app grants CORS.
 */
@Module({})
export class ReactorDashboardModule {
  /** Mount the dashboard at `options.path` (default `reactor`). */
  static forRoot(options: ReactorDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    if (!resolved.guard) new Logger('ReactorDashboard').warn(messages.dashboardUnguardedInDevelopment(resolved.path));
    // A controller class of its own per mount: its path and guard are this call's.
    class MountedDashboardController extends DashboardController {}
    Controller(resolved.path)(MountedDashboardController);
    if (resolved.guard) UseGuards(resolved.guard)(MountedDashboardController);
    return {
      module: ReactorDashboardModule,
      imports: resolved.imports,
      controllers: [MountedDashboardController],
      providers: [
        { provide: DASHBOARD_OPTIONS, useValue: resolved },
        { provide: DashboardAssets, useFactory: () => new DashboardAssets() },
        DashboardService,
        DashboardActionGuard,
      ],
    };
  }
}
