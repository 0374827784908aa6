import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { ConfigurationError, type Clock } from '../core';
import {
  type ReactorRuntime,
  type ResolvedReactorModuleOptions,
  REACTOR_CLOCK,
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  messages,
} from '../config';
import type { RedisReactorRuntime } from '../runtime/redis.runtime';
import { ReactorSweeper } from '../sweepers/reactor.sweeper';
import { SweeperScheduler } from '../sweepers/sweeper.scheduler';
import { answerWithin } from './answer-within';
import { ReactorQueuesAccessor, type ReactorWorkerView } from './reactor-queues.accessor';

/** Thresholds of {@link ReactorHealthIndicator.isHealthy}. */
export interface ReactorHealthOptions {
  /**
   * Down when the recovery sweeper has shown no progress for longer than this: no scheduled tick
   * settled its window (this process swept, or another replica had the window), or, with
   * `sweeper: { enabled: false }`, no `ReactorClient.sweepOnce()` finished in this process.
   * Measured from when the sweeper started (or the indicator, for `sweepOnce()`) until the first.
   * @default 3 × `sweeper.intervalMs` when the module schedules its sweeper; not checked otherwise
   */
  maxSweepAgeMs?: number;
  /**
   * Down when more jobs than this wait for a worker (waiting, paused or prioritized in the
   * module's queues). Delayed jobs (snoozes, retry backoffs) are reported, not counted.
   * @default not checked
   */
  maxBacklog?: number;
  /** How long to wait for Redis to answer a PING, and for the queues to report their counts. @default 1000 */
  timeoutMs?: number;
  /**
   * Down when Redis's `maxmemory-policy` is not `noeviction` (else that is a warning, in
   * `warnings`). Not checked when Redis refuses `INFO` (`evictionPolicy: null`).
   * @default ReactorModule option `redis.requireNoEviction` (false)
   */
  requireNoEviction?: boolean;
}

/**
 * Redis: whether the storage connection answered a PING in time, and how fast; and its
 * `maxmemory-policy` (`null` when Redis did not say: `INFO` refused, or not answered in time).
 */
export type ReactorRedisHealth = { reachable: boolean; latencyMs?: number; evictionPolicy?: string | null };

/** The module's BullMQ workers in this process. */
export type ReactorWorkersHealth = {
  /** `false` with `workers: false` (a producer-only process): nothing is checked. */
  enabled: boolean;
  /** Whether every worker is fetching jobs. */
  running: boolean;
  list: ReactorWorkerView[];
};

/** The recovery sweeper, as this process sees it. */
export type ReactorSweeperHealth = {
  /** Whether the module schedules the sweeper (`sweeper.enabled`). */
  enabled: boolean;
  /** Whether its cron job runs (false without `ScheduleModule`, or before bootstrap). */
  scheduled: boolean;
  /** When this process last finished a sweep (ISO 8601), or `null`. */
  lastSweepAt: string | null;
  /** Time since the sweeper last showed progress (see {@link ReactorHealthOptions.maxSweepAgeMs}). */
  ageMs: number | null;
  /** The threshold applied, or `null` when the age is not checked. */
  maxAgeMs: number | null;
};

/** Jobs in the module's queues, summed over them; `null` fields when the queues did not answer. */
export type ReactorBacklogHealth = {
  /** Jobs ready for a worker and not taken yet (waiting, paused, prioritized). */
  waiting: number | null;
  /** Jobs scheduled for later (snoozes, retry backoffs, timeouts). */
  delayed: number | null;
  /** Jobs being processed. */
  active: number | null;
  /** The threshold applied to `waiting`, or `null` when it is not checked. */
  maxBacklog: number | null;
};

/**
 * What the indicator reports under its key (beside terminus's `status`). With the embedded
 * runtime only `runtime` and `message`; with Redis every section. `problems` lists, when the
 * status is `down`, each reason as a sentence that says what to do (`message` joins them).
 * `warnings` lists what does not make the module down but should be fixed (an eviction policy
 * other than `noeviction`, unless `requireNoEviction`).
 */
export type ReactorHealthDetails = {
  runtime: ReactorRuntime['kind'];
  message?: string;
  problems?: string[];
  warnings?: string[];
  redis?: ReactorRedisHealth;
  workers?: ReactorWorkersHealth;
  sweeper?: ReactorSweeperHealth;
  backlog?: ReactorBacklogHealth;
};

type JobCounts = { waiting: number; delayed: number; active: number };

const DEFAULT_TIMEOUT_MS = 1_000;
const SCHEDULED_SWEEP_AGE_INTERVALS = 3;

/**
 * A `@nestjs/terminus` health indicator for the ReactorModule. With the Redis runtime it is `down`
 * when any of these fails, and says which in its details:
 *
 * - Redis answers a PING on the module's storage connection within `timeoutMs`;
 * - Redis's `maxmemory-policy` is `noeviction`, with `requireNoEviction` (else another policy is
 *   listed in `warnings` and the status stays `up`);
 * - every BullMQ worker of the module in this process is running (unless `workers: false`);
 * - the recovery sweeper is scheduled and has made progress within `maxSweepAgeMs`;
 * - no more than `maxBacklog` jobs wait for a worker (when given).
 *
 * With the embedded runtime it is `up`, and says that runs live in memory.
 *
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.reactor.isHealthy('reactor', { maxBacklog: 1_000 })]);
 * }
 * ```
 */
@Injectable()
export class ReactorHealthIndicator {
  private readonly startedAt: number;

  constructor(
    private readonly health: HealthIndicatorService,
    private readonly queues: ReactorQueuesAccessor,
    private readonly moduleRef: ModuleRef,
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    @Inject(REACTOR_OPTIONS) private readonly options: ResolvedReactorModuleOptions,
    @Inject(REACTOR_CLOCK) private readonly clock: Clock,
  ) {
    this.startedAt = clock.now();
  }

  /**
   * Check the module now. Resolves to terminus's result under `key` (`up` or `down`, with
   * {@link ReactorHealthDetails}); never rejects for an unhealthy module, and waits at most about
   * `timeoutMs`. Throws a `ConfigurationError` for an invalid option.
   */
  async isHealthy<Key extends string = 'reactor'>(
    key: Key = 'reactor' as Key,
    options: ReactorHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const { timeoutMs, maxBacklog, maxSweepAgeMs } = checkedOptions(options);
    const requireNoEviction = options?.requireNoEviction ?? this.options.redis?.requireNoEviction === true;
    const indicator = this.health.check(key);
    if (this.runtime.kind !== 'redis') {
      return indicator.up({ runtime: this.runtime.kind, message: messages.healthEmbedded() });
    }
    const problems: string[] = [];
    const warnings: string[] = [];
    const [redis, counts] = await Promise.all([
      this.checkRedis(timeoutMs, problems, requireNoEviction ? problems : warnings, requireNoEviction),
      this.countJobs(timeoutMs),
    ]);
    const backlog: ReactorBacklogHealth = {
      waiting: null,
      delayed: null,
      active: null,
      maxBacklog: maxBacklog ?? null,
    };
    if ('error' in counts) {
      // With Redis down the queues cannot answer either: one problem is enough.
      if (redis.reachable) problems.push(messages.healthQueueUnanswered(timeoutMs, counts.error));
    } else {
      Object.assign(backlog, counts);
      if (maxBacklog !== undefined && counts.waiting > maxBacklog) {
        problems.push(messages.healthBacklog(counts.waiting, maxBacklog));
      }
    }
    const details: ReactorHealthDetails = {
      runtime: this.runtime.kind,
      redis,
      workers: this.checkWorkers(problems),
      sweeper: this.checkSweeper(maxSweepAgeMs, problems),
      backlog,
      ...(warnings.length > 0 ? { warnings } : {}),
    };
    if (problems.length === 0) return indicator.up(details);
    return indicator.down({ ...details, message: problems.join(' '), problems });
  }

  private async checkRedis(
    timeoutMs: number,
    problems: string[],
    evictionProblems: string[],
    requireNoEviction: boolean,
  ): Promise<ReactorRedisHealth> {
    const runtime = this.runtime as RedisReactorRuntime;
    const [answer, eviction] = await Promise.all([
      answerWithin(() => runtime.redis.ping(), timeoutMs),
      answerWithin(() => runtime.evictionPolicy(), timeoutMs),
    ]);
    if (!answer.ok || answer.value !== 'PONG') {
      problems.push(messages.healthRedisUnreachable(timeoutMs, answer.ok ? `answered ${answer.value}` : answer.error));
      return { reachable: false };
    }
    // INFO refused (some managed services) or slow: not known, not a problem.
    const evictionPolicy = eviction.ok ? eviction.value.policy : null;
    if (evictionPolicy !== null && evictionPolicy !== 'noeviction') {
      evictionProblems.push(messages.healthEvictionPolicy(evictionPolicy, requireNoEviction));
    }
    return { reachable: true, latencyMs: answer.ms, evictionPolicy };
  }

  /** Jobs in the module's queues, summed over them. */
  private async countJobs(timeoutMs: number): Promise<JobCounts | { error: unknown }> {
    const queues = this.queues.queues();
    const answer = await answerWithin(
      () =>
        Promise.all(queues.map((queue) => queue.getJobCounts('waiting', 'paused', 'prioritized', 'delayed', 'active'))),
      timeoutMs,
    );
    if (!answer.ok) return { error: answer.error };
    const sum = { waiting: 0, delayed: 0, active: 0 };
    for (const counts of answer.value) {
      sum.waiting += (counts.waiting ?? 0) + (counts.paused ?? 0) + (counts.prioritized ?? 0);
      sum.delayed += counts.delayed ?? 0;
      sum.active += counts.active ?? 0;
    }
    return sum;
  }

  private checkWorkers(problems: string[]): ReactorWorkersHealth {
    if (!this.options.workers) return { enabled: false, running: false, list: [] };
    const list = this.queues.workers();
    const stopped = list.filter((worker) => !worker.running);
    if (list.length === 0) problems.push(messages.workerNotRegistered());
    else if (stopped.length > 0)
      problems.push(messages.healthWorkersNotRunning(stopped.map((w) => `${w.queue}: ${w.state}`).join(', ')));
    return { enabled: true, running: list.length > 0 && stopped.length === 0, list };
  }

  private checkSweeper(maxSweepAgeMs: number | undefined, problems: string[]): ReactorSweeperHealth {
    const { enabled, intervalMs } = this.options.sweeper;
    const now = this.clock.now();
    const last = this.find(ReactorSweeper)?.lastSweep;
    const lastSweepAt = last ? new Date(last.finishedAt).toISOString() : null;
    if (enabled) {
      const status = this.find(SweeperScheduler)?.status;
      const maxAgeMs = maxSweepAgeMs ?? SCHEDULED_SWEEP_AGE_INTERVALS * intervalMs;
      if (status?.scheduledAt === undefined) {
        problems.push(messages.healthSweeperNotScheduled());
        return { enabled, scheduled: false, lastSweepAt, ageMs: null, maxAgeMs };
      }
      const ageMs = now - (status.lastTickAt ?? status.scheduledAt);
      if (ageMs > maxAgeMs) problems.push(messages.healthSweepTooOld(ageMs, maxAgeMs, status.lastTickAt !== undefined));
      return { enabled, scheduled: true, lastSweepAt, ageMs, maxAgeMs };
    }
    // Swept by an external cron through ReactorClient.sweepOnce(): checked only when asked to.
    const ageMs = now - (last?.finishedAt ?? this.startedAt);
    if (maxSweepAgeMs !== undefined && ageMs > maxSweepAgeMs) {
      problems.push(messages.healthSweepTooOld(ageMs, maxSweepAgeMs, last !== undefined));
    }
    return { enabled, scheduled: false, lastSweepAt, ageMs, maxAgeMs: maxSweepAgeMs ?? null };
  }

  /** A provider of the ReactorModule (which does not export it), or `undefined` if it has none. */
  private find<T>(type: new (...args: never[]) => T): T | undefined {
    try {
      return this.moduleRef.get(type, { strict: false });
    } catch {
      return undefined;
    }
  }
}

function checkedOptions(options: ReactorHealthOptions): ReactorHealthOptions & { timeoutMs: number } {
  const require = options?.requireNoEviction;
  if (require !== undefined && typeof require !== 'boolean') {
    throw new ConfigurationError(messages.healthOptionNotBoolean('requireNoEviction', require), 'requireNoEviction');
  }
  for (const name of ['maxSweepAgeMs', 'maxBacklog', 'timeoutMs'] as const) {
    const value: unknown = options?.[name];
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value >= 0)) {
      throw new ConfigurationError(messages.healthOptionInvalid(name, value), name);
    }
  }
  return { ...options, timeoutMs: options?.timeoutMs ?? DEFAULT_TIMEOUT_MS };
}
