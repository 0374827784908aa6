import { randomUUID } from 'node:crypto';
import type { ReactorScheduleOption } from '../definition/schedule-spec';
import { ConfigurationError } from '../errors/configuration.error';
import { InvalidArgumentError } from '../errors/invalid-argument.error';
import { ReactorError } from '../errors/reactor.error';
import { ScheduleNotFoundError } from '../errors/schedule.error';
import { jsonProblem } from '../model/json-values';
import { isTerminal, type RunStatus } from '../model/run-state';
import type { Clock } from '../ports/clock.port';
import type {
  ScheduleBackend,
  ScheduleDefinition,
  ScheduleLastTick,
  ScheduleOverlap,
  ScheduleRecord,
  ScheduleTick,
} from '../ports/schedule.port';
import { checkOneOf, checkOptions, checkText, isWellFormed } from '../validation/arguments';
import type { EngineLogger } from './engine-options';

/** The argument of `schedules.upsert`: a schedule created, or replaced, under its `id`. */
export interface ScheduleOptions {
  /** The schedule's id (per module prefix): `billing:acme`, `nightly-report`, ... At most 200 characters. */
  id: string;
  /** The name of the reactor each tick starts (registered in this process). */
  reactor: string;
  /** A cron pattern (5 fields, or 6 with seconds first). Give this or {@link everyMs}. */
  cron?: string;
  /** An interval in milliseconds (at least 10); the first tick comes at once. */
  everyMs?: number;
  /** IANA time zone of {@link cron}. @default UTC */
  tz?: string;
  /** The input of every run (JSON). @default {} */
  input?: unknown;
  /** What a tick does while the previous run of the schedule is live. @default 'skip' */
  overlap?: ScheduleOverlap;
}

/** A schedule as `list` and `get` show it. */
export interface ScheduleView {
  id: string;
  reactor: string;
  cron?: string;
  everyMs?: number;
  tz?: string;
  input: unknown;
  overlap: ScheduleOverlap;
  paused: boolean;
  /** Declared with `@Reactor(name, { schedule })` (its id is the reactor's name). */
  declared: boolean;
  createdAt: number;
  updatedAt: number;
  /** When it ticks next (epoch ms); absent while paused. */
  nextTickAt?: number;
  /** The last tick it handled: the run it started, or why it started none. */
  lastTick?: ScheduleLastTick;
  /** The last run it started and that run's status now (absent once the run is gone). */
  lastRun?: { runId: string; at: number; status?: RunStatus };
}

/** What a tick or `trigger` did. */
export type ScheduleTriggerResult =
  | {
      status: 'started';
      runId: string;
      /** The tick's run existed already (a tick delivered twice): nothing was started. */
      replayed: boolean;
    }
  | {
      status: 'skipped';
      /** `overlap`: the previous run (`runId`) is live; `paused`; `removed`: no such schedule any more. */
      reason: 'overlap' | 'paused' | 'removed';
      runId?: string;
    };

/** What {@link Schedules} needs of the engine. */
export interface SchedulesParts {
  readonly backend: ScheduleBackend;
  readonly clock: Clock;
  readonly logger: EngineLogger;
  /** The registered reactor names. */
  reactorNames(): string[];
  /** Start a run in the background with this run id (an existing run with the id is returned). */
  start(reactor: string, input: unknown, runId: string): Promise<{ runId: string; replayed?: boolean }>;
  /** The status of a run, or undefined when there is none. */
  runStatus(runId: string): Promise<RunStatus | undefined>;
}

/** The shortest interval of a schedule. */
const MIN_EVERY_MS = 10;
/** The longest schedule id (it is part of run ids and BullMQ keys). */
const MAX_ID_LENGTH = 200;

/**
 * The run id of schedule `id`'s tick due at `at`: `<id, URI-encoded>@<at>`. Every delivery of a
 * tick derives the same id, so a tick handled twice (a worker that died holding it, a tick job
 * retried) finds its run stored and starts nothing: the id is the tick's idempotency key, for as
 * long as the run is kept.
 */
export function scheduledRunId(id: string, at: number): string {
  return `${encodeURIComponent(id)}@${at}`;
}

/**
 * Schedules: runs started by a cron pattern or an interval, kept by a {@link ScheduleBackend}
 * (definitions in its store, ticks fired by its ticker). Nest-free; `ReactorClient.schedules`
 * checks the caller's arguments and reactor classes and calls it.
 */
export class Schedules {
  constructor(private readonly parts: SchedulesParts) {}

  private get store() {
    return this.parts.backend.store;
  }

  private get ticker() {
    return this.parts.backend.ticker;
  }

  /**
   * Create or replace schedule `options.id`. A paused schedule stays paused (its new definition
   * applies when it resumes); an active one is rescheduled on its new timing.
   * @throws InvalidArgumentError for an option it cannot use (naming it), `UNKNOWN_REACTOR`, or
   *   `INVALID_ARGUMENT` for the id of a declared schedule
   */
  async upsert(options: ScheduleOptions): Promise<ScheduleView> {
    const checked = this.check('schedules.upsert', options);
    const existing = await this.store.get(checked.id);
    if (existing?.definition.declared) {
      throw new InvalidArgumentError(
        'schedules.upsert',
        'options.id',
        `the id of no schedule declared with @Reactor (schedule '${checked.id}' is @Reactor('${existing.definition.reactor}')'s: change it there)`,
        checked.id,
      );
    }
    return this.save(checked, existing, false);
  }

  /** The schedule `id`, or undefined when there is none. */
  async get(id: string): Promise<ScheduleView | undefined> {
    checkText('schedules.get', 'id', id, MAX_ID_LENGTH);
    const record = await this.store.get(id);
    if (!record) return undefined;
    const next = await this.ticker.nextTicks();
    return this.view(record, next);
  }

  /** Every schedule, by id, with its next tick and its last run. */
  async list(): Promise<ScheduleView[]> {
    const [records, next] = await Promise.all([this.store.list(), this.ticker.nextTicks()]);
    records.sort((a, b) => (a.definition.id < b.definition.id ? -1 : a.definition.id > b.definition.id ? 1 : 0));
    return Promise.all(records.map((record) => this.view(record, next)));
  }

  /** Stop the ticks of schedule `id`, keeping it; idempotent. @throws ScheduleNotFoundError */
  async pause(id: string): Promise<ScheduleView> {
    const record = await this.require('schedules.pause', id);
    const now = this.parts.clock.now();
    // Stored paused first: a tick fired before the ticker lets go of the schedule starts nothing.
    if (!record.definition.paused) await this.store.put({ ...record.definition, paused: true, updatedAt: now });
    await this.ticker.disarm(id);
    return (await this.get(id))!;
  }

  /** Tick schedule `id` again from its next due time on; idempotent. @throws ScheduleNotFoundError */
  async resume(id: string): Promise<ScheduleView> {
    const record = await this.require('schedules.resume', id);
    const definition: ScheduleDefinition = { ...record.definition, paused: false, updatedAt: this.parts.clock.now() };
    if (record.definition.paused) await this.store.put(definition);
    await this.ticker.arm(definition);
    return (await this.get(id))!;
  }

  /**
   * Delete schedule `id` (its runs stay). False when there was none. A declared schedule is
   * refused: it would come back at the next boot (pause it, or remove `schedule` from its `@Reactor`).
   */
  async remove(id: string): Promise<boolean> {
    checkText('schedules.remove', 'id', id, MAX_ID_LENGTH);
    const record = await this.store.get(id);
    if (!record) return false;
    if (record.definition.declared) {
      throw new InvalidArgumentError(
        'schedules.remove',
        'id',
        `the id of a schedule not declared with @Reactor (pause it, or remove the schedule option of @Reactor('${record.definition.reactor}'))`,
        id,
      );
    }
    await this.ticker.disarm(id);
    return this.store.remove(id);
  }

  /**
   * Start a run of schedule `id` now, paused or not, with its input, under its `overlap` rule
   * (`skip`: nothing starts while its last run is live). Every call is a tick of its own.
   * @throws ScheduleNotFoundError
   */
  async trigger(id: string): Promise<ScheduleTriggerResult> {
    const record = await this.require('schedules.trigger', id);
    const at = this.parts.clock.now();
    return this.fire(record, at, `${scheduledRunId(id, at)}-${randomUUID().slice(0, 8)}`);
  }

  /**
   * Handle a tick the ticker fired: start the schedule's run for that due time (run id
   * {@link scheduledRunId}), unless the schedule is gone or paused, or its last run is live and it
   * does not allow overlap. A tick handled twice starts nothing the second time.
   */
  async tick(tick: ScheduleTick): Promise<ScheduleTriggerResult> {
    const record = await this.store.get(tick.scheduleId);
    if (!record) return { status: 'skipped', reason: 'removed' };
    if (record.definition.paused) return { status: 'skipped', reason: 'paused' };
    return this.fire(record, tick.at, scheduledRunId(tick.scheduleId, tick.at));
  }

  /**
   * Make the declared schedules (`@Reactor(name, { schedule })`, id = the reactor's name) what the
   * code says, at boot: create or update each (a paused one stays paused), arm it when it is not,
   * and delete the declared schedules of reactors that no longer declare one.
   * @throws ConfigurationError for an option it cannot use (naming the reactor), or when a
   *   schedule created with `upsert` has a declared schedule's id
   */
  async syncDeclared(declared: ReadonlyArray<{ reactor: string; schedule: ReactorScheduleOption }>): Promise<void> {
    const wanted = new Map<string, ScheduleOptions>();
    for (const { reactor, schedule } of declared) {
      let checked: ScheduleOptions;
      try {
        checked = this.check(`@Reactor('${reactor}', { schedule })`, { ...schedule, id: reactor, reactor });
      } catch (error) {
        throw new ConfigurationError(
          `@Reactor('${reactor}'): option schedule is invalid: ${(error as Error).message}`,
          'schedule',
        );
      }
      wanted.set(reactor, checked);
    }
    const records = await this.store.list();
    // Nothing declared, now or before: the ticker is not asked (on Redis it would open its queue).
    if (wanted.size === 0 && !records.some((record) => record.definition.declared)) return;
    const armed = await this.ticker.nextTicks();
    const byId = new Map(records.map((record) => [record.definition.id, record]));
    for (const [id, options] of wanted) {
      const existing = byId.get(id);
      if (existing && !existing.definition.declared) {
        throw new ConfigurationError(
          `@Reactor('${id}', { schedule }): a schedule created with client.schedules.upsert has the id '${id}', which a declared schedule takes; remove it (client.schedules.remove('${id}')) or rename it.`,
          'schedule',
        );
      }
      if (existing && sameSchedule(existing.definition, options)) {
        if (!existing.definition.paused && !armed.has(id)) await this.ticker.arm(existing.definition);
        continue;
      }
      await this.save(options, existing, true);
    }
    for (const record of records) {
      if (record.definition.declared && !wanted.has(record.definition.id)) {
        await this.ticker.disarm(record.definition.id);
        await this.store.remove(record.definition.id);
      }
    }
  }

  private async save(
    options: ScheduleOptions,
    existing: ScheduleRecord | undefined,
    declared: boolean,
  ): Promise<ScheduleView> {
    const now = this.parts.clock.now();
    const definition: ScheduleDefinition = {
      id: options.id,
      reactor: options.reactor,
      ...(options.cron !== undefined ? { cron: options.cron } : {}),
      ...(options.everyMs !== undefined ? { everyMs: options.everyMs } : {}),
      ...(options.tz !== undefined ? { tz: options.tz } : {}),
      input: options.input === undefined ? {} : options.input,
      overlap: options.overlap ?? 'skip',
      paused: existing?.definition.paused ?? false,
      declared,
      createdAt: existing?.definition.createdAt ?? now,
      updatedAt: now,
    };
    await this.store.put(definition);
    if (!definition.paused) await this.ticker.arm(definition);
    return (await this.get(definition.id))!;
  }

  /** Start the tick's run, or skip it (overlap), and record what happened. */
  private async fire(record: ScheduleRecord, at: number, runId: string): Promise<ScheduleTriggerResult> {
    const { id, reactor, input, overlap } = record.definition;
    const last = record.lastRun;
    // The tick's own run (an earlier delivery of it) is no overlap: it is replayed below.
    if (overlap === 'skip' && last && last.runId !== runId) {
      const status = await this.parts.runStatus(last.runId);
      if (status !== undefined && !isTerminal(status)) {
        await this.store.recordTick(id, { at, skipped: 'overlap', runId: last.runId });
        return { status: 'skipped', reason: 'overlap', runId: last.runId };
      }
    }
    const outcome = await this.parts.start(reactor, input, runId);
    await this.store.recordTick(id, { at, runId: outcome.runId });
    return { status: 'started', runId: outcome.runId, replayed: outcome.replayed === true };
  }

  private async require(method: string, id: string): Promise<ScheduleRecord> {
    checkText(method, 'id', id, MAX_ID_LENGTH);
    const record = await this.store.get(id);
    if (!record) throw new ScheduleNotFoundError(id);
    return record;
  }

  private async view(record: ScheduleRecord, next: ReadonlyMap<string, number>): Promise<ScheduleView> {
    const { definition, lastTick, lastRun } = record;
    const { id, reactor, cron, everyMs, tz, input, overlap, paused, declared, createdAt, updatedAt } = definition;
    const view: ScheduleView = {
      id,
      reactor,
      ...(cron !== undefined ? { cron } : {}),
      ...(everyMs !== undefined ? { everyMs } : {}),
      ...(tz !== undefined ? { tz } : {}),
      input,
      overlap,
      paused,
      declared,
      createdAt,
      updatedAt,
    };
    const nextTickAt = paused ? undefined : next.get(id);
    if (nextTickAt !== undefined) view.nextTickAt = nextTickAt;
    if (lastTick) view.lastTick = { ...lastTick };
    if (lastRun) {
      const status = await this.parts.runStatus(lastRun.runId).catch(() => undefined);
      view.lastRun = { ...lastRun, ...(status !== undefined ? { status } : {}) };
    }
    return view;
  }

  /** `options` checked, naming the option at fault. */
  private check(method: string, options: ScheduleOptions): ScheduleOptions {
    const o = checkOptions(method, options as ScheduleOptions | undefined);
    if (options === undefined) throw new InvalidArgumentError(method, 'options', 'an object', options);
    checkText(method, 'options.id', o.id, MAX_ID_LENGTH);
    checkText(method, 'options.reactor', o.reactor);
    const known = this.parts.reactorNames();
    if (!known.includes(o.reactor)) {
      throw new ReactorError(
        'UNKNOWN_REACTOR',
        `${method}: reactor '${o.reactor}' is not registered in this process. Known reactors: ${known.length ? known.join(', ') : '(none)'}.`,
      );
    }
    if ((o.cron === undefined) === (o.everyMs === undefined)) {
      throw new InvalidArgumentError(
        method,
        'options.cron',
        'a cron pattern, or left out when everyMs is given (one of the two)',
        o.cron,
      );
    }
    if (o.everyMs !== undefined) {
      if (typeof o.everyMs !== 'number' || !Number.isInteger(o.everyMs) || o.everyMs < MIN_EVERY_MS) {
        throw new InvalidArgumentError(
          method,
          'options.everyMs',
          `an integer number of milliseconds >= ${MIN_EVERY_MS}`,
          o.everyMs,
        );
      }
      if (o.tz !== undefined) {
        throw new InvalidArgumentError(
          method,
          'options.tz',
          'left out with everyMs (a time zone applies to cron)',
          o.tz,
        );
      }
    }
    if (o.cron !== undefined) checkText(method, 'options.cron', o.cron, 256);
    if (o.tz !== undefined) {
      checkText(method, 'options.tz', o.tz, 64);
      if (!isTimeZone(o.tz))
        throw new InvalidArgumentError(method, 'options.tz', 'an IANA time zone (Europe/Paris, UTC)', o.tz);
    }
    checkOneOf(method, 'options.overlap', o.overlap, ['skip', 'allow']);
    const problem = o.input === undefined ? undefined : jsonProblem(o.input, 'options.input');
    if (problem) throw new InvalidArgumentError(method, 'options.input', `JSON (${problem})`, o.input);
    if (!isWellFormed(o.id)) throw new InvalidArgumentError(method, 'options.id', 'well-formed Unicode', o.id);
    try {
      this.parts.backend.ticker.nextAfter(o, this.parts.clock.now());
    } catch (error) {
      throw new InvalidArgumentError(
        method,
        'options.cron',
        `a cron pattern the scheduler reads (${(error as Error).message})`,
        o.cron,
      );
    }
    return {
      id: o.id,
      reactor: o.reactor,
      ...(o.cron !== undefined ? { cron: o.cron } : {}),
      ...(o.everyMs !== undefined ? { everyMs: o.everyMs } : {}),
      ...(o.tz !== undefined ? { tz: o.tz } : {}),
      ...(o.input !== undefined ? { input: JSON.parse(JSON.stringify(o.input)) as unknown } : {}),
      ...(o.overlap !== undefined ? { overlap: o.overlap } : {}),
    };
  }
}

/** Whether `tz` names a time zone this runtime knows. */
function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Whether a stored definition is what `options` declares (timing, input, overlap, reactor). */
function sameSchedule(stored: ScheduleDefinition, options: ScheduleOptions): boolean {
  return (
    stored.reactor === options.reactor &&
    stored.cron === options.cron &&
    stored.everyMs === options.everyMs &&
    stored.tz === options.tz &&
    stored.overlap === (options.overlap ?? 'skip') &&
    JSON.stringify(stored.input) === JSON.stringify(options.input === undefined ? {} : options.input)
  );
}
