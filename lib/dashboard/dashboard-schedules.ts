import type { ScheduleLastTick, ScheduleOverlap, ScheduleView, RunStatus } from '../core';

/**
 * A schedule as the dashboard lists it (`api/schedules`): its timing, state, next tick and last
 * run. Its input is left out (the page shows no value the runs' redaction has not seen).
 */
export interface DashboardSchedule {
  id: string;
  reactor: string;
  cron?: string;
  everyMs?: number;
  tz?: string;
  overlap: ScheduleOverlap;
  paused: boolean;
  declared: boolean;
  /** When it ticks next (ms since the epoch); absent while paused. */
  nextTickAt?: number;
  /** The last run it started, with its status now. */
  lastRun?: { runId: string; at: number; status?: RunStatus };
  /** The last tick it handled (with why it started nothing, when it did not). */
  lastTick?: ScheduleLastTick;
}

/** The dashboard's view of `client.schedules.list()`. */
export function dashboardSchedules(views: readonly ScheduleView[]): { schedules: DashboardSchedule[] } {
  return {
    schedules: views.map(({ input: _input, createdAt: _created, updatedAt: _updated, ...shown }) => shown),
  };
}
