export { ReactorSweeper, SWEEP_LIMIT, type SweepResult, type LastSweep } from './reactor.sweeper';
export { SweeperScheduler } from './sweeper.scheduler';
export {
  REACTOR_SWEEPER_CRON,
  VALID_SWEEP_INTERVALS_MS,
  describeValidSweepIntervals,
  sweepCronExpression,
  sweepWindow,
} from './sweep-schedule';
