import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { Cron, SchedulerRegistry } from '@nestjs/schedule';
import type { Clock, LockManager } from '../core';
import {
  type ResolvedReactorModuleOptions,
  REACTOR_CLOCK,
  REACTOR_LOCKS,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  messages,
} from '../config';
import { ReactorSweeper, type SweepResult } from './reactor.sweeper';
import { REACTOR_SWEEPER_CRON, sweepCronExpression, sweepWindow } from './sweep-schedule';

type CronJobRef = ReturnType<SchedulerRegistry['getCronJob']>;
type CronTimeClass = new (source: string, timeZone?: string) => CronJobRef['cronTime'];

/**
 * Drives the recovery sweeper from `@nestjs/schedule` (Redis runtime).
 *
 * {@link tick} is a `@Cron` method declared disabled with a placeholder schedule: a decorator's
 * expression cannot read `forRootAsync` options. At application bootstrap {@link schedule} finds
 * its job in the `SchedulerRegistry`, replaces the schedule with the one derived from
 * `sweeper.intervalMs` (see `sweepCronExpression`, in UTC) and starts it. The application imports
 * `ScheduleModule.forRoot()` itself, once; without it the sweeper is not scheduled and a warning
 * at boot says how to fix it.
 *
 * Each tick first claims the sweep window (the nearest multiple of the interval) with a lease
 * that is never released and expires after one interval: every replica's cron fires at the same
 * instants, so one replica sweeps per tick, and a cron that fires twice (`ScheduleModule` imported
 * twice) sweeps once.
 */
@Injectable()
export class SweeperScheduler {
  private readonly logger = new Logger(REACTOR_LOGGER_CONTEXT);
  private job?: CronJobRef;
  private scheduledSince?: number;
  private lastTick?: number;
  private stopped = false;
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly sweeper: ReactorSweeper,
    @Inject(REACTOR_LOCKS) private readonly locks: LockManager,
    @Inject(REACTOR_OPTIONS) private readonly options: ResolvedReactorModuleOptions,
    @Inject(REACTOR_CLOCK) private readonly clock: Clock,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {}

  /**
   * One scheduled sweep: claim this tick's window, then sweep. Resolves to what was re-enqueued,
   * or `undefined` when another replica (or another firing of this cron) has the window, or the
   * scheduler is stopped. Never throws (a failed sweep is logged; the next tick tries again).
   */
  @Cron('*/30 * * * * *', { name: REACTOR_SWEEPER_CRON, disabled: true, waitForCompletion: true, timeZone: 'UTC' })
  tick(): Promise<SweepResult | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    const sweep = this.claimAndSweep();
    this.running.add(sweep);
    void sweep.finally(() => this.running.delete(sweep));
    return sweep;
  }

  /** Schedule {@link tick} from the options; called once at application bootstrap. */
  schedule(): void {
    const { enabled, intervalMs } = this.options.sweeper;
    if (!enabled || this.stopped || this.job) return;
    if (!this.registry) {
      this.logger.warn(messages.sweeperNoScheduleModule());
      return;
    }
    if (!this.registry.doesExist('cron', REACTOR_SWEEPER_CRON)) {
      this.logger.warn(messages.sweeperCronMissing(REACTOR_SWEEPER_CRON));
      return;
    }
    const job = this.registry.getCronJob(REACTOR_SWEEPER_CRON);
    const expression = sweepCronExpression(intervalMs)!;
    // NOTE: the job's own CronTime class: `setTime` checks `instanceof` against the copy of the
    // `cron` package @nestjs/schedule uses, which need not be the one this package would import.
    const CronTime = job.cronTime.constructor as CronTimeClass;
    job.setTime(new CronTime(expression, 'UTC'));
    job.start();
    this.job = job;
    this.scheduledSince = this.clock.now();
    this.logger.log(messages.sweeperScheduled(expression, intervalMs));
  }

  /**
   * Where the schedule stands, for the health indicator: when {@link schedule} started the cron job
   * (`undefined` if it did not: sweeper disabled, no `ScheduleModule`, not bootstrapped yet), and
   * when the last tick settled its window: it swept, or another replica (or another firing of
   * this cron) had the window. A tick whose sweep threw does not count. Times are the module clock's.
   */
  get status(): { scheduledAt?: number; lastTickAt?: number; stopped: boolean } {
    return { scheduledAt: this.scheduledSince, lastTickAt: this.lastTick, stopped: this.stopped };
  }

  /** Stop scheduling and wait for a sweep in progress. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    try {
      await this.job?.stop();
    } catch (error) {
      this.logger.warn(messages.cleanupFailed('stop the sweeper cron job', error));
    }
    await Promise.allSettled([...this.running]);
  }

  private async claimAndSweep(): Promise<SweepResult | undefined> {
    try {
      const { intervalMs } = this.options.sweeper;
      const window = sweepWindow(this.clock.now(), intervalMs);
      const claimed = await this.locks.acquire(`sweep:reactors:${window}`, intervalMs);
      if (!claimed) {
        this.lastTick = this.clock.now();
        return undefined;
      }
      const result = await this.sweeper.sweepOnce();
      this.lastTick = this.clock.now();
      if (result.reactors > 0) this.logger.log(messages.sweepRecovered(result.reactors));
      return result;
    } catch (error) {
      this.logger.error(messages.sweepFailed(error));
      return undefined;
    }
  }
}
