import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import type { ReactorMiddleware } from '../core/middleware/events';
import type { Clock } from '../core/ports/clock.port';

/** Where the Redis runtime connects: a URL, or a connection the application owns. */
export type ReactorRedisOptions =
  /** A Redis URL; the module creates (and on shutdown closes) its own connections. */
  | { url: string }
  /** An existing ioredis connection (or cluster); the module never closes it. */
  | { connection: unknown };

/** Options of the recovery sweepers (Redis runtime). */
export interface ReactorSweeperOptions {
  /** Schedule the sweepers at bootstrap. @default true */
  enabled?: boolean;
  /** Milliseconds between sweeps. @default 30000 */
  intervalMs?: number;
}

/**
 * Options of {@link ReactorModule.forRoot}, and what the factory of
 * {@link ReactorModule.forRootAsync} returns.
 */
export interface ReactorModuleOptions {
  /**
   * Run on Redis and BullMQ (durable). Without it the module runs embedded: in-memory storage and
   * locks and an in-process dispatcher, for development and tests (not durable).
   */
  redis?: ReactorRedisOptions;
  /** Prefix of every Redis key and queue name of the module. @default 'reactor' */
  prefix?: string;
  /** Observers of run lifecycle events, in order. @default [] */
  middleware?: ReactorMiddleware[];
  /** TTL of a run's lease; extended every third of it while the run executes. @default 60000 */
  leaseTtlMs?: number;
  /** Coalesce mid-run checkpoints closer than this many milliseconds. @default 0 (every step) */
  checkpointMinIntervalMs?: number;
  /** Base delay of a snooze when a delivered run is executing elsewhere. @default 5000 */
  snoozeDelayMs?: number;
  /** Time source; tests pass a `FakeClock`. @default the system clock */
  clock?: Clock;
  /**
   * Register the module globally, so `ReactorClient` can be injected everywhere. For
   * `forRootAsync` pass it beside the factory (it changes the module's shape). @default true
   */
  global?: boolean;
  /** Recovery sweepers. */
  sweeper?: ReactorSweeperOptions;
}

/** {@link ReactorModuleOptions} after validation, with every default applied. */
export interface ResolvedReactorModuleOptions {
  readonly redis?: Readonly<ReactorRedisOptions>;
  readonly prefix: string;
  readonly middleware: readonly ReactorMiddleware[];
  readonly leaseTtlMs: number;
  readonly checkpointMinIntervalMs: number;
  readonly snoozeDelayMs: number;
  readonly clock: Clock;
  readonly global: boolean;
  readonly sweeper: Readonly<Required<ReactorSweeperOptions>>;
}

/**
 * Options of {@link ReactorModule.forRootAsync}: module options from a factory that may inject
 * providers (e.g. a `ConfigService`).
 *
 * ```ts
 * ReactorModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ redis: { url: config.getOrThrow('REDIS_URL') } }),
 * })
 * ```
 */
export interface ReactorModuleAsyncOptions {
  /** Modules that export the providers listed in {@link inject}. */
  imports?: ModuleMetadata['imports'];
  /** Providers passed to {@link useFactory}, in order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  /** Returns the module options (all but `global`). Required. */
  useFactory: (
    ...deps: never[]
  ) => Omit<ReactorModuleOptions, 'global'> | Promise<Omit<ReactorModuleOptions, 'global'>>;
  /** Register the module globally. @default true */
  global?: boolean;
}
