/**
 * nest-reactor/dashboard: a web dashboard for the ReactorModule's runs, mounted into your Nest app
 * behind your guard. A page that needs no build step (its files ship in the package) and a JSON
 * API: runs with filters and counts, a run in full with its DAG, and the actions (retry, undo,
 * cancel, answer an interrupt).
 *
 * ```ts
 * import { ReactorDashboardModule } from 'nest-reactor/dashboard';
 *
 * @Module({
 *   imports: [ReactorModule.forRoot(), ReactorDashboardModule.forRoot({ path: 'reactor', guard: AdminGuard })],
 * })
 * export class AppModule {}
 * ```
 *
 * @packageDocumentation
 */
export { ReactorDashboardModule } from './reactor-dashboard.module';
export type { ReactorDashboardOptions } from './dashboard.options';
export { DASHBOARD_ACTION_HEADER } from './dashboard-action.guard';
export type { DashboardActionResult, DashboardBulkResult } from './dashboard.controller';
export type { DashboardSchedule } from './dashboard-schedules';
export type {
  DashboardRunRow,
  DashboardRunList,
  DashboardRunQuery,
  DashboardCounts,
  DashboardRun,
  DashboardActions,
  DashboardMap,
  DashboardMapElement,
  DashboardMapElements,
  DashboardPendingInterrupt,
  DashboardFlowQueues,
} from './dashboard.service';
export type {
  DashboardReactor,
  DashboardStep,
  DashboardStepKind,
  DashboardStepState,
  DashboardStepStatus,
  DashboardPayloadField,
} from './dashboard-dag';
