import { ReactorError } from './reactor.error';

/** `pause`, `resume`, `remove` or `trigger` named a schedule that does not exist. */
export class ScheduleNotFoundError extends ReactorError {
  constructor(
    /** The schedule id asked for. */
    readonly scheduleId: string,
  ) {
    super('SCHEDULE_NOT_FOUND', `Schedule '${scheduleId}' does not exist (see client.schedules.list()).`);
  }
}
