import type { ScheduleOverlap } from '../ports/schedule.port';

/**
 * A schedule declared on a reactor: `@Reactor('nightly-report', { schedule: { cron: '0 2 * * *',
 * tz: 'Europe/Paris', input: { scope: 'all' } } })` starts a run at each tick, on every runtime. Its
 * schedule id is the reactor's name; it is created, updated or removed at boot to match the code
 * (a schedule paused with `client.schedules.pause` stays paused across deploys).
 */
export interface ReactorScheduleOption {
  /** A cron pattern (5 fields, or 6 with seconds first). Give this or {@link everyMs}. */
  cron?: string;
  /** An interval in milliseconds instead of a cron pattern (the first tick comes at boot). */
  everyMs?: number;
  /** IANA time zone the cron pattern is read in. @default UTC */
  tz?: string;
  /** The input of every run (JSON). @default {} */
  input?: unknown;
  /**
   * `skip` (the default): a tick is dropped while the schedule's previous run is still live
   * (running, waiting, paused, rolling back); `allow`: every tick starts a run.
   */
  overlap?: ScheduleOverlap;
}
