/**
 * Ports of schedules (runs started by cron or by an interval): where their definitions are kept
 * ({@link ScheduleStore}) and what fires their ticks ({@link ScheduleTicker}). The embedded runtime
 * keeps both in memory with timers on its clock; the Redis runtime keeps definitions in one Redis
 * hash and fires ticks with BullMQ job schedulers.
 */

/** What a schedule does while the previous run it started is still live. */
export type ScheduleOverlap = 'skip' | 'allow';

/** When a schedule ticks: a cron pattern (with an optional IANA time zone) or a fixed interval. */
export interface ScheduleTiming {
  /** A cron pattern (5 fields, or 6 with seconds first), read in {@link tz}. */
  readonly cron?: string;
  /** An interval in milliseconds (the first tick comes at once, as with BullMQ's `every`). */
  readonly everyMs?: number;
  /** IANA time zone of {@link cron}. @default UTC */
  readonly tz?: string;
}

/** A schedule as stored: what to start, when, and how. */
export interface ScheduleDefinition extends ScheduleTiming {
  /** The schedule's id, unique per module (prefix). */
  readonly id: string;
  /** The reactor each tick starts. */
  readonly reactor: string;
  /** The input of every run it starts (JSON). */
  readonly input: unknown;
  readonly overlap: ScheduleOverlap;
  /** A paused schedule keeps its definition and fires no tick until resumed. */
  readonly paused: boolean;
  /** Declared with `@Reactor(name, { schedule })` (kept in step with the code at boot) rather than upserted. */
  readonly declared: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** The last tick a schedule handled. */
export interface ScheduleLastTick {
  /** The tick's time (when it was due; the time of the call for a manual trigger). */
  readonly at: number;
  /** The run it started (or found started by an earlier delivery of the tick). */
  readonly runId?: string;
  /** Set when the tick started nothing, with why. */
  readonly skipped?: 'overlap' | 'paused';
}

/** A stored schedule with what it last did. */
export interface ScheduleRecord {
  readonly definition: ScheduleDefinition;
  /** The last tick handled. */
  readonly lastTick?: ScheduleLastTick;
  /** The last run it started (kept when later ticks are skipped): overlap `skip` checks its status. */
  readonly lastRun?: { readonly runId: string; readonly at: number };
}

/** Where schedules are kept. Every write is of one schedule; no write reads another. */
export interface ScheduleStore {
  /** Store `definition` (replacing the one with its id), keeping what it last did. */
  put(definition: ScheduleDefinition): Promise<void>;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /** Every schedule, by id. */
  list(): Promise<ScheduleRecord[]>;
  /** Forget the schedule and what it did; false when there was none. */
  remove(id: string): Promise<boolean>;
  /** Record a handled tick (and, when it started one, the schedule's last run). */
  recordTick(id: string, tick: ScheduleLastTick): Promise<void>;
}

/** A tick to handle: schedule `scheduleId` was due at `at`. */
export interface ScheduleTick {
  readonly scheduleId: string;
  readonly at: number;
}

/**
 * Fires the ticks of armed schedules. At most one tick per due time is handled across every
 * process (the Redis ticker's BullMQ job schedulers give each due time one job); a tick delivered
 * twice (a worker that died holding it) is made harmless by the handler (the run id is derived
 * from the schedule and the due time).
 */
export interface ScheduleTicker {
  /** Start (or reschedule) the ticks of `definition`; replaces its timing. */
  arm(definition: ScheduleDefinition): Promise<void>;
  /** Stop the ticks of schedule `id` (a tick already being handled finishes). */
  disarm(id: string): Promise<void>;
  /** When each armed schedule ticks next, by id. */
  nextTicks(): Promise<Map<string, number>>;
  /**
   * The first due time of `timing` after `from`, computed as the ticker does; throws an `Error`
   * saying what is wrong with a cron pattern or time zone it cannot read.
   */
  nextAfter(timing: ScheduleTiming, from: number): number;
  /** Hand every tick from now on to `handler` (in a process that runs workers). */
  start(handler: (tick: ScheduleTick) => Promise<unknown>): void | Promise<void>;
  /** Stop handling ticks (ticks in hand finish) and let go of what the ticker opened. Idempotent. */
  stop(): Promise<void>;
}

/** The schedule adapters of a runtime. */
export interface ScheduleBackend {
  readonly store: ScheduleStore;
  readonly ticker: ScheduleTicker;
}
