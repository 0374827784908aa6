import {
  ConfigurationError,
  ENGINE_DEFAULTS,
  systemClock,
  type Clock,
  type InputCipher,
  type RateLimits,
  type ReactorMiddleware,
  type TracingOption,
  toRateWindows,
} from '../core';
import { DEFAULT_MAX_CONTEXT_BYTES } from '../storage/run-state.codec';
import { DEFAULT_CONTEXT_TTL_MS } from '../storage/redis/redis-reactor.storage';
import { DEFAULT_SHARDS } from '../storage/redis/redis.keys';
import { describeValidSweepIntervals, sweepCronExpression } from '../sweepers/sweep-schedule';
import type { KeepJobs } from 'bullmq';
import {
  type ReactorJobOptions,
  type ReactorModuleOptions,
  type ReactorRedisOptions,
  type ReactorWorkerOptions,
  type ReactorRuntimeKind,
  type ResolvedReactorModuleOptions,
  messages,
} from '../config';

/** Defaults of {@link ReactorModuleOptions}, in one place. */
export const REACTOR_MODULE_DEFAULTS = Object.freeze({
  prefix: 'reactor',
  leaseTtlMs: ENGINE_DEFAULTS.leaseTtlMs,
  checkpointMinIntervalMs: 0,
  snoozeDelayMs: ENGINE_DEFAULTS.snoozeDelayMs,
  global: true,
  sweeper: Object.freeze({ enabled: true, intervalMs: 30_000 }),
  workers: true,
  workerConcurrency: 10,
  jobRetryCount: 3,
  contextTtlMs: DEFAULT_CONTEXT_TTL_MS,
  maxContextBytes: DEFAULT_MAX_CONTEXT_BYTES,
  shards: DEFAULT_SHARDS,
  shutdownGraceMs: 10_000,
  connectTimeoutMs: 10_000,
  unknownReactorRetries: ENGINE_DEFAULTS.unknownReactorDeferrals,
  unknownReactorDelayMs: ENGINE_DEFAULTS.unknownReactorDelayMs,
  tracing: true,
});

const KNOWN_OPTIONS: ReadonlyArray<keyof ReactorModuleOptions> = [
  'redis',
  'prefix',
  'middleware',
  'inputCipher',
  'leaseTtlMs',
  'checkpointMinIntervalMs',
  'snoozeDelayMs',
  'clock',
  'global',
  'sweeper',
  'workers',
  'workerConcurrency',
  'jobRetryCount',
  'contextTtlMs',
  'retention',
  'maxContextBytes',
  'shards',
  'shutdownGraceMs',
  'connectTimeoutMs',
  'unknownReactorRetries',
  'unknownReactorDelayMs',
  'idempotencyWindowMs',
  'earlyResumeTtlMs',
  'asyncWaitTimeoutMs',
  'asyncParkTimeoutMs',
  'rateLimits',
  'lockSnoozeMaxAttempts',
  'tracing',
  'liveEvents',
  'bullmq',
];

/** Job options the application may set (`bullmq.defaultJobOptions`); every other one is refused. */
const ALLOWED_JOB_OPTIONS = ['removeOnComplete', 'removeOnFail', 'keepLogs', 'stackTraceLimit'] as const;
/** Worker options the application may set (`bullmq.worker`). */
const ALLOWED_WORKER_OPTIONS = ['limiter'] as const;

/**
 * The CLI's switch (`npx nest-reactor`, lib/cli): `true` on `globalThis` under this key, set before
 * the CLI loads an application, makes every `ReactorModule` of the process resolve `workers: false`
 * and `sweeper.enabled: false` whatever its options say (each option still checked), so the app
 * boots as a client: it runs no jobs and sweeps nothing. A key of the global symbol registry, so it
 * reaches the app's copy of the package even when that is not the CLI's. @internal
 */
export const CLIENT_ONLY_PROCESS = Symbol.for('nest-reactor.client-only-process');

/**
 * Validate module options and apply defaults. The only place options are checked, for `forRoot`
 * and `forRootAsync` alike; a bad option throws a `ConfigurationError` naming it (in its message
 * and its `option`) and what it must be.
 */
export function resolveReactorModuleOptions(raw: ReactorModuleOptions | undefined): ResolvedReactorModuleOptions {
  const options = raw ?? {};
  if (!isPlainObject(options)) throw new ConfigurationError(messages.optionsNotObject(raw));
  for (const key of Object.keys(options)) {
    if (!(KNOWN_OPTIONS as readonly string[]).includes(key))
      throw new ConfigurationError(messages.optionUnknown(key, KNOWN_OPTIONS), key);
  }
  const d = REACTOR_MODULE_DEFAULTS;
  const clientOnly = (globalThis as Record<symbol, unknown>)[CLIENT_ONLY_PROCESS] === true;
  const contextTtlMs = integer('contextTtlMs', options.contextTtlMs, d.contextTtlMs, 1);
  const retention = resolveRetention(options.retention);
  // A key must not outlive its run: at most the shortest time a run is kept.
  const shortestKept = Math.min(contextTtlMs, ...Object.values(retention).filter((ms) => ms !== undefined));
  const idempotencyWindowMs = integer('idempotencyWindowMs', options.idempotencyWindowMs, shortestKept, 1);
  const earlyResumeTtlMs = integer(
    'earlyResumeTtlMs',
    options.earlyResumeTtlMs,
    Math.min(ENGINE_DEFAULTS.earlyResumeTtlMs, contextTtlMs),
    1,
  );
  if (earlyResumeTtlMs > contextTtlMs) {
    throw invalidOption('earlyResumeTtlMs', `an integer <= contextTtlMs (${contextTtlMs})`, earlyResumeTtlMs);
  }
  if (idempotencyWindowMs > contextTtlMs) {
    throw invalidOption('idempotencyWindowMs', `an integer <= contextTtlMs (${contextTtlMs})`, idempotencyWindowMs);
  }
  if (idempotencyWindowMs > shortestKept) {
    throw invalidOption(
      'idempotencyWindowMs',
      `an integer <= the shortest retention (${shortestKept}; a key must not outlive its run)`,
      idempotencyWindowMs,
    );
  }
  return Object.freeze({
    redis: resolveRedis(options.redis),
    prefix: resolvePrefix(options.prefix),
    middleware: Object.freeze(resolveMiddleware(options.middleware)),
    inputCipher: resolveInputCipher(options.inputCipher),
    leaseTtlMs: integer('leaseTtlMs', options.leaseTtlMs, d.leaseTtlMs, 1),
    checkpointMinIntervalMs: integer(
      'checkpointMinIntervalMs',
      options.checkpointMinIntervalMs,
      d.checkpointMinIntervalMs,
      0,
    ),
    snoozeDelayMs: integer('snoozeDelayMs', options.snoozeDelayMs, d.snoozeDelayMs, 0),
    clock: resolveClock(options.clock),
    global: boolean('global', options.global, d.global),
    sweeper: Object.freeze({ ...resolveSweeper(options.sweeper), ...(clientOnly ? { enabled: false } : {}) }),
    workers: boolean('workers', options.workers, d.workers) && !clientOnly,
    workerConcurrency: integer('workerConcurrency', options.workerConcurrency, d.workerConcurrency, 1),
    jobRetryCount: integer('jobRetryCount', options.jobRetryCount, d.jobRetryCount, 0),
    contextTtlMs,
    retention,
    maxContextBytes: integer('maxContextBytes', options.maxContextBytes, d.maxContextBytes, 1),
    shards: integerInRange('shards', options.shards, d.shards, 1, 16384),
    shutdownGraceMs: integer('shutdownGraceMs', options.shutdownGraceMs, d.shutdownGraceMs, 0),
    connectTimeoutMs: integer('connectTimeoutMs', options.connectTimeoutMs, d.connectTimeoutMs, 1),
    unknownReactorRetries: integer('unknownReactorRetries', options.unknownReactorRetries, d.unknownReactorRetries, 0),
    unknownReactorDelayMs: integer('unknownReactorDelayMs', options.unknownReactorDelayMs, d.unknownReactorDelayMs, 0),
    idempotencyWindowMs,
    earlyResumeTtlMs,
    asyncWaitTimeoutMs: integer(
      'asyncWaitTimeoutMs',
      options.asyncWaitTimeoutMs,
      ENGINE_DEFAULTS.asyncWaitTimeoutMs,
      0,
    ),
    asyncParkTimeoutMs: integer(
      'asyncParkTimeoutMs',
      options.asyncParkTimeoutMs,
      ENGINE_DEFAULTS.asyncParkTimeoutMs,
      1,
    ),
    rateLimits: Object.freeze(resolveRateLimits(options.rateLimits)),
    lockSnoozeMaxAttempts: integer(
      'lockSnoozeMaxAttempts',
      options.lockSnoozeMaxAttempts,
      ENGINE_DEFAULTS.lockSnoozeMaxAttempts,
      0,
    ),
    tracing: resolveTracing(options.tracing, d.tracing),
    ...(options.liveEvents === undefined ? {} : { liveEvents: boolean('liveEvents', options.liveEvents, false) }),
    bullmq: Object.freeze(resolveBullMq(options.bullmq)),
  });
}

/**
 * Validate the synchronous `runtime` option of `forRootAsync`.
 * @default 'embedded'
 */
export function resolveRuntimeKind(value: unknown): ReactorRuntimeKind {
  if (value === undefined) return 'embedded';
  if (value !== 'embedded' && value !== 'redis') {
    throw invalidOption('runtime', "'embedded' or 'redis'", value);
  }
  return value;
}

/** The runtime resolved options ask for: `redis` when the `redis` option is set. */
export function runtimeKindOf(options: ResolvedReactorModuleOptions): ReactorRuntimeKind {
  return options.redis ? 'redis' : 'embedded';
}

function resolveRedis(value: unknown): ReactorRedisOptions | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) throw invalidOption('redis', '{ url } or { connection }', value);
  rejectUnknownKeys('redis', value, ['url', 'connection', 'requireNoEviction']);
  const requireNoEviction = boolean('redis.requireNoEviction', value.requireNoEviction, false);
  const extra = value.requireNoEviction === undefined ? {} : { requireNoEviction };
  if ('url' in value && !('connection' in value)) {
    if (typeof value.url !== 'string' || value.url.length === 0) {
      throw invalidOption('redis.url', 'a non-empty Redis URL such as redis://localhost:6379', value.url);
    }
    return Object.freeze({ url: value.url, ...extra });
  }
  if ('connection' in value && !('url' in value)) {
    if (value.connection === null || typeof value.connection !== 'object') {
      throw invalidOption('redis.connection', 'an ioredis connection', value.connection);
    }
    return Object.freeze({ connection: value.connection, ...extra });
  }
  throw invalidOption('redis', 'exactly one of { url } or { connection }', value);
}

function resolveBullMq(value: unknown): ResolvedReactorModuleOptions['bullmq'] {
  if (value === undefined) return { defaultJobOptions: Object.freeze({}), worker: Object.freeze({}) };
  if (!isPlainObject(value)) throw invalidOption('bullmq', '{ configKey?, defaultJobOptions?, worker? }', value);
  rejectUnknownKeys('bullmq', value, ['configKey', 'defaultJobOptions', 'worker']);
  const { configKey } = value;
  if (configKey !== undefined && (typeof configKey !== 'string' || configKey.length === 0)) {
    throw invalidOption(
      'bullmq.configKey',
      "the non-empty config key given to BullModule.forRoot('key', { ... })",
      configKey,
    );
  }
  return {
    ...(configKey === undefined ? {} : { configKey: configKey as string }),
    defaultJobOptions: Object.freeze(resolveJobOptions('bullmq.defaultJobOptions', value.defaultJobOptions)),
    worker: Object.freeze(resolveWorkerOptions(value.worker)),
  };
}

/**
 * The job options of `path` the application may set; one the module sets itself is refused with
 * what to use instead (`messages.jobOptionReserved`).
 */
export function resolveJobOptions(path: string, value: unknown): ReactorJobOptions {
  if (value === undefined) return {};
  if (!isPlainObject(value))
    throw invalidOption(path, `an object of job options (${ALLOWED_JOB_OPTIONS.join(', ')})`, value);
  const out: ReactorJobOptions = {};
  for (const [key, option] of Object.entries(value)) {
    if (!(ALLOWED_JOB_OPTIONS as readonly string[]).includes(key)) {
      throw new ConfigurationError(
        messages.jobOptionReserved(`${path}.${key}`, key, ALLOWED_JOB_OPTIONS),
        `${path}.${key}`,
      );
    }
    if (option === undefined) continue;
    if (key === 'removeOnComplete' || key === 'removeOnFail') {
      out[key] = keepJobs(`${path}.${key}`, option);
    } else {
      out[key as 'keepLogs' | 'stackTraceLimit'] = integer(`${path}.${key}`, option, 0, 0);
    }
  }
  return out;
}

/** `true`, `false`, a count, or `{ count?, age? }` (BullMQ's KeepJobs). */
function keepJobs(path: string, value: unknown): boolean | number | KeepJobs {
  const expected = 'true, false, a number of jobs to keep, or { count?, age? } (age in seconds)';
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return integer(path, value, 0, 0);
  if (!isPlainObject(value)) throw invalidOption(path, expected, value);
  const keys = Object.keys(value);
  if (
    keys.some((key) => key !== 'count' && key !== 'age' && key !== 'limit') ||
    (value.age === undefined && (value.count === undefined || value.limit !== undefined))
  ) {
    throw invalidOption(path, expected, value);
  }
  const count = value.count === undefined ? undefined : integer(`${path}.count`, value.count, 0, 0);
  if (value.age === undefined) return { count: count! };
  return {
    age: integer(`${path}.age`, value.age, 0, 0),
    ...(count === undefined ? {} : { count }),
    ...(value.limit === undefined ? {} : { limit: integer(`${path}.limit`, value.limit, 0, 1) }),
  };
}

function resolveWorkerOptions(value: unknown): ReactorWorkerOptions {
  if (value === undefined) return {};
  if (!isPlainObject(value))
    throw invalidOption('bullmq.worker', `an object of worker options (${ALLOWED_WORKER_OPTIONS.join(', ')})`, value);
  const out: ReactorWorkerOptions = {};
  for (const [key, option] of Object.entries(value)) {
    if (!(ALLOWED_WORKER_OPTIONS as readonly string[]).includes(key)) {
      throw new ConfigurationError(
        messages.workerOptionReserved(`bullmq.worker.${key}`, key, ALLOWED_WORKER_OPTIONS),
        `bullmq.worker.${key}`,
      );
    }
    if (option === undefined) continue;
    if (!isPlainObject(option) || Object.keys(option).some((k) => k !== 'max' && k !== 'duration')) {
      throw invalidOption('bullmq.worker.limiter', '{ max, duration } (at most max jobs per duration ms)', option);
    }
    out.limiter = Object.freeze({
      max: integer('bullmq.worker.limiter.max', option.max ?? null, 0, 1),
      duration: integer('bullmq.worker.limiter.duration', option.duration ?? null, 0, 1),
    });
  }
  return out;
}

/** The longest retention a status may have: about ten years (365-day years), in ms. */
export const MAX_RETENTION_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/**
 * `retention`: ms per status it may name (from 1000 to {@link MAX_RETENTION_MS}). Only the statuses
 * given (the storages default the others to `contextTtlMs`; the embedded runtime expires records
 * only when one is given).
 */
function resolveRetention(value: unknown): ResolvedReactorModuleOptions['retention'] {
  const statuses = ['completed', 'failed', 'halted', 'cancelled'] as const;
  if (value !== undefined && !isPlainObject(value))
    throw invalidOption('retention', '{ completed?, failed?, halted?, cancelled? } (ms each)', value);
  const given = (value ?? {}) as Record<string, unknown>;
  rejectUnknownKeys('retention', given, statuses);
  const out: { -readonly [S in (typeof statuses)[number]]?: number } = {};
  for (const status of statuses) {
    if (given[status] === undefined) continue;
    const ms = given[status];
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1_000 || ms > MAX_RETENTION_MS)
      throw invalidOption(
        `retention.${status}`,
        `an integer from 1000 to ${MAX_RETENTION_MS} (ms: 1 s to 10 years)`,
        ms,
      );
    out[status] = ms;
  }
  return Object.freeze(out);
}

function resolveTracing(value: unknown, fallback: boolean): TracingOption {
  if (value === undefined || typeof value === 'boolean') return boolean('tracing', value, fallback);
  if (!isPlainObject(value)) throw invalidOption('tracing', 'true, false or { rollbackSpans?: boolean }', value);
  rejectUnknownKeys('tracing', value, ['rollbackSpans']);
  return Object.freeze({ rollbackSpans: boolean('tracing.rollbackSpans', value.rollbackSpans, false) });
}

function resolvePrefix(value: unknown): string {
  if (value === undefined) return REACTOR_MODULE_DEFAULTS.prefix;
  // NOTE: braces would inject a Redis Cluster hash tag into every key and break key routing.
  if (typeof value !== 'string' || value.length === 0 || /[\s{}]/.test(value)) {
    throw invalidOption('prefix', 'a non-empty string without spaces or braces', value);
  }
  return value;
}

function resolveMiddleware(value: unknown): ReactorMiddleware[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidOption('middleware', 'an array of middleware', value);
  value.forEach((m: unknown, i) => {
    if (m === null || typeof m !== 'object' || typeof (m as ReactorMiddleware).onEvent !== 'function') {
      throw invalidOption(`middleware[${i}]`, 'an object with an onEvent(event) method', m);
    }
  });
  return [...(value as ReactorMiddleware[])];
}

function resolveRateLimits(value: unknown): Record<string, RateLimits> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) {
    throw invalidOption('rateLimits', 'an object of named limits ({ stripe: { second: 25 } })', value);
  }
  const out: Record<string, RateLimits> = {};
  for (const [name, limits] of Object.entries(value as Record<string, unknown>)) {
    const windows = toRateWindows(limits as RateLimits);
    if (typeof windows === 'string') throw invalidOption(`rateLimits.${name}`, windows, limits);
    out[name] = limits as RateLimits;
  }
  return out;
}

function resolveInputCipher(value: unknown): InputCipher | undefined {
  if (value === undefined) return undefined;
  const cipher = value as Partial<InputCipher> | null;
  if (
    cipher === null ||
    typeof cipher !== 'object' ||
    typeof cipher.encrypt !== 'function' ||
    typeof cipher.decrypt !== 'function'
  ) {
    throw invalidOption(
      'inputCipher',
      'an InputCipher (an object with encrypt(plaintext, context) and decrypt(ciphertext, context))',
      value,
    );
  }
  return cipher as InputCipher;
}

function resolveClock(value: unknown): Clock {
  if (value === undefined) return systemClock;
  const clock = value as Partial<Clock> | null;
  if (
    clock === null ||
    typeof clock !== 'object' ||
    typeof clock.now !== 'function' ||
    typeof clock.sleep !== 'function'
  ) {
    throw invalidOption('clock', 'a Clock (an object with now() and sleep(ms))', value);
  }
  return clock as Clock;
}

function resolveSweeper(value: unknown): { enabled: boolean; intervalMs: number } {
  const d = REACTOR_MODULE_DEFAULTS.sweeper;
  if (value === undefined) return { ...d };
  if (!isPlainObject(value)) throw invalidOption('sweeper', '{ enabled?, intervalMs? }', value);
  rejectUnknownKeys('sweeper', value, ['enabled', 'intervalMs']);
  const intervalMs = integer('sweeper.intervalMs', value.intervalMs, d.intervalMs, 1);
  if (sweepCronExpression(intervalMs) === undefined) {
    throw new ConfigurationError(
      messages.sweepIntervalInvalid(intervalMs, describeValidSweepIntervals()),
      'sweeper.intervalMs',
    );
  }
  return { enabled: boolean('sweeper.enabled', value.enabled, d.enabled), intervalMs };
}

function integer(path: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw invalidOption(path, `an integer >= ${min}`, value);
  }
  return value;
}

function integerInRange(path: string, value: unknown, fallback: number, min: number, max: number): number {
  const n = integer(path, value, fallback, min);
  if (n > max) throw invalidOption(path, `an integer from ${min} to ${max}`, value);
  return n;
}

function boolean(path: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidOption(path, 'true or false', value);
  return value;
}

/** An option object `section` with a key it does not know: the error names `section.key` and the known ones. */
function rejectUnknownKeys(section: string, value: Record<string, unknown>, known: readonly string[]): void {
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown === undefined) return;
  throw new ConfigurationError(
    messages.optionUnknown(
      `${section}.${unknown}`,
      known.map((k) => `${section}.${k}`),
    ),
    `${section}.${unknown}`,
  );
}

/** A bad option: the message says what it must be, `option` names it. */
function invalidOption(path: string, expected: string, value: unknown): ConfigurationError {
  return new ConfigurationError(messages.optionInvalid(path, expected, value), path);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
