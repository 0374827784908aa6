import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ConfigurationError,
  getReactorMetadata,
  ReactorEngine,
  ReactorError,
  Schedules,
  checkOptions,
  type Clock,
  type ReactorClass,
  type ReactorScheduleOption,
  type ScheduleOptions,
  type ScheduleTriggerResult,
  type ScheduleView,
} from '../core';
import { REACTOR_CLOCK, REACTOR_LOGGER_CONTEXT, REACTOR_RUNTIME, messages, type ReactorRuntime } from '../config';
import { nestEngineLogger } from './reactor-engine.provider';
import { ReactorRegistry } from './reactor.registry';

/** The argument of {@link ReactorSchedules.upsert}: {@link ScheduleOptions} with the reactor as a class or a name. */
export interface ScheduleUpsertOptions extends Omit<ScheduleOptions, 'reactor'> {
  /** The reactor each tick starts: its `@Reactor` class or its name. */
  reactor: ReactorClass | string;
}

/**
 * Runs started by a cron pattern or an interval: `client.schedules`. A schedule is stored (Redis
 * runtime: in Redis, so every replica sees it) and ticks with a BullMQ job scheduler; each due time
 * starts one run across any number of replicas, with run id `<schedule id>@<due ms>` (a tick
 * delivered twice starts nothing twice). The embedded runtime keeps schedules in memory and ticks
 * on its clock.
 *
 * ```ts
 * // one schedule per tenant, from code
 * await client.schedules.upsert({
 *   id: `billing:${tenant.id}`,
 *   reactor: MonthlyBillingReactor,
 *   cron: '0 6 1 * *',
 *   tz: tenant.timeZone,
 *   input: { tenantId: tenant.id },
 * });
 * await client.schedules.pause(`billing:${tenant.id}`);
 * await client.schedules.trigger(`billing:${tenant.id}`); // a run now
 * ```
 *
 * Declared schedules (`@Reactor(name, { schedule: { cron, tz?, input?, overlap? } })`) are
 * listed, paused, resumed and triggered here too, under the reactor's name.
 */
@Injectable()
export class ReactorSchedules {
  private readonly schedules?: Schedules;
  private readonly logger = new Logger(REACTOR_LOGGER_CONTEXT);

  constructor(
    private readonly engine: ReactorEngine,
    private readonly registry: ReactorRegistry,
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    @Inject(REACTOR_CLOCK) clock: Clock,
  ) {
    const backend = runtime.schedules;
    if (!backend) return;
    this.schedules = new Schedules({
      backend,
      clock,
      logger: nestEngineLogger(this.logger),
      reactorNames: () => engine.reactorNames(),
      start: (reactor, input, runId) => engine.start(reactor, input, { runId }),
      runStatus: async (runId) => (await engine.get(runId))?.status,
    });
  }

  /**
   * Create or replace schedule `options.id`: `reactor` (a class or a name), `cron` (with `tz`) or
   * `everyMs`, `input` (JSON, the same for every run), `overlap` (`skip` by default: a tick is
   * dropped while the schedule's previous run is live; `allow`). A paused schedule stays paused.
   */
  async upsert(options: ScheduleUpsertOptions): Promise<ScheduleView> {
    const schedules = this.require('schedules.upsert');
    const checked = checkOptions('schedules.upsert', options);
    return schedules.upsert({ ...checked, reactor: this.nameOf(checked.reactor) });
  }

  /** Every schedule, by id, with its next tick (absent while paused) and its last run (with its status). */
  list(): Promise<ScheduleView[]> {
    return this.require('schedules.list').list();
  }

  /** Schedule `id`, or undefined. */
  get(id: string): Promise<ScheduleView | undefined> {
    return this.require('schedules.get').get(id);
  }

  /** Stop the ticks of schedule `id`, keeping it (and its last run). @throws ScheduleNotFoundError */
  pause(id: string): Promise<ScheduleView> {
    return this.require('schedules.pause').pause(id);
  }

  /** Tick schedule `id` again from its next due time on (missed ticks are not made up). @throws ScheduleNotFoundError */
  resume(id: string): Promise<ScheduleView> {
    return this.require('schedules.resume').resume(id);
  }

  /** Delete schedule `id` (its runs stay); false when there was none. A declared schedule is refused. */
  remove(id: string): Promise<boolean> {
    return this.require('schedules.remove').remove(id);
  }

  /**
   * Start a run of schedule `id` now (paused or not), under its overlap rule:
   * `{ status: 'started', runId }`, or `{ status: 'skipped', reason: 'overlap', runId }` naming the
   * live run. @throws ScheduleNotFoundError
   */
  trigger(id: string): Promise<ScheduleTriggerResult> {
    return this.require('schedules.trigger').trigger(id);
  }

  /**
   * At application bootstrap (before the workers start): make the declared schedules what the code
   * says, then hand ticks to this process when it runs workers. A declaration it cannot apply fails
   * the bootstrap, with the ticker stopped. @internal
   */
  async start(handleTicks: boolean): Promise<void> {
    const schedules = this.schedules;
    const backend = this.runtime.schedules;
    if (!schedules || !backend) return;
    try {
      await schedules.syncDeclared(this.declared());
    } catch (error) {
      await backend.ticker.stop().catch(() => undefined);
      throw error;
    }
    if (handleTicks) await backend.ticker.start((tick) => schedules.tick(tick));
  }

  /** Before shutdown: stop handling ticks (those in hand finish). @internal */
  async stop(): Promise<void> {
    await this.runtime.schedules?.ticker.stop();
  }

  /** The schedules of the `@Reactor` classes registered here (of each reactor's current version). */
  private declared(): Array<{ reactor: string; schedule: ReactorScheduleOption }> {
    const declared = new Map<string, ReactorScheduleOption>();
    for (const reactorClass of this.registry.reactorClasses()) {
      const metadata = getReactorMetadata(reactorClass);
      if (!metadata?.schedule || !this.engine.reactorNames().includes(metadata.name)) continue;
      if (this.engine.definition(metadata.name).version !== String(metadata.version ?? '1')) continue;
      declared.set(metadata.name, metadata.schedule);
    }
    return [...declared].map(([reactor, schedule]) => ({ reactor, schedule }));
  }

  private nameOf(reactor: ReactorClass | string): string {
    if (typeof reactor === 'string') return reactor;
    const name = typeof reactor === 'function' ? this.registry.reactorNameOf(reactor) : undefined;
    if (name !== undefined) return name;
    throw new ReactorError('UNKNOWN_REACTOR', messages.reactorArgumentInvalid('schedules.upsert', reactor));
  }

  private require(method: string): Schedules {
    if (!this.registry.isExplored) throw new ConfigurationError(messages.clientUsedBeforeInit(method));
    if (!this.schedules) throw new ConfigurationError(`ReactorClient.${method}(): this runtime keeps no schedules.`);
    return this.schedules;
  }
}
