import { BullModule, getSharedConfigToken } from '@nestjs/bullmq';
import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ConnectionOptions, DefaultJobOptions, QueueOptions } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { ConfigurationError } from '../core';
import {
  type ReactorJobOptions,
  type ResolvedReactorModuleOptions,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_OPTIONS,
  messages,
} from '../config';
import { bullMqPrefix, DEFAULT_JOB_OPTIONS, REACTOR_BULL_CONFIG_KEY, REACTOR_QUEUE_NAME } from './queue.constants';

/** The job options an application may set (`bullmq.defaultJobOptions`, or its shared configuration's). */
const APPLICATION_JOB_OPTIONS = ['removeOnComplete', 'removeOnFail', 'keepLogs', 'stackTraceLimit'] as const;

/**
 * Holds nest-reactor's BullMQ settings under its own `@nestjs/bullmq` config key.
 * @internal
 */
@Module({})
export class ReactorBullConfigModule {}

/**
 * The BullMQ settings of the module's queue and worker, from the module options: the connection
 * (the URL, so that BullMQ creates and closes its own connections, or the application's
 * connection, which BullMQ shares and never closes), the key prefix, and the default job options
 * (the module's defaults, under the allowed `defaultJobOptions` of the application's `shared`
 * configuration, under `bullmq.defaultJobOptions`). The rest of `shared` (`telemetry`, `streams`,
 * ...) is kept; its `connection` and `prefix` are not.
 */
export function bullMqQueueOptions(
  options: ResolvedReactorModuleOptions,
  queue?: string,
  shared: QueueOptions = { connection: {} },
): QueueOptions {
  const redis = options.redis;
  if (!redis) throw new ConfigurationError('The BullMQ queue of nest-reactor needs the redis option.', 'redis');
  // The application's connection is checked before BullMQ is given it (its queue connects it).
  const connection: ConnectionOptions =
    'url' in redis ? { url: redis.url } : (checkedRedisConnection(redis.connection) as ConnectionOptions);
  // The shared configuration's connection and prefix are left out: the module's own are used.
  const { connection: _connection, prefix: _prefix, blockingConnection: _blocking, ...rest } = shared;
  return {
    ...rest,
    connection,
    prefix: bullMqPrefix(options.prefix, queue),
    defaultJobOptions: {
      ...DEFAULT_JOB_OPTIONS,
      ...reactorJobOptions(shared.defaultJobOptions),
      ...options.bullmq.defaultJobOptions,
    },
  };
}

/**
 * The application's connection, checked for what the adapters and BullMQ's worker need. Called
 * where the module's BullMQ configuration is built, before any queue is given (and connects) the
 * connection, and by the Redis runtime.
 * @throws ConfigurationError naming `redis.connection` and the fix
 */
export function checkedRedisConnection(value: unknown): Redis | Cluster {
  const connection = value as Partial<Redis> & { isCluster?: boolean; options?: Record<string, unknown> };
  if (typeof connection.defineCommand !== 'function' || typeof connection.duplicate !== 'function') {
    throw new ConfigurationError(messages.redisConnectionInvalid(value), 'redis.connection');
  }
  const redisOptions = (
    connection.isCluster ? (connection.options?.redisOptions ?? {}) : (connection.options ?? {})
  ) as { maxRetriesPerRequest?: number | null };
  // Same rule as BullMQ's (it throws on a truthy value when the worker duplicates the connection).
  if (redisOptions.maxRetriesPerRequest) {
    throw new ConfigurationError(
      messages.redisConnectionRetries(redisOptions.maxRetriesPerRequest, connection.isCluster === true),
      'redis.connection',
    );
  }
  return connection as unknown as Redis | Cluster;
}

/**
 * The job options an application may set, out of BullMQ `defaultJobOptions` (the others, such as
 * `attempts` or `delay` in a configuration shared with the application's own queues, are left out:
 * the module sets them on each job).
 */
export function reactorJobOptions(defaults: DefaultJobOptions | undefined): ReactorJobOptions {
  const out: Record<string, unknown> = {};
  for (const key of APPLICATION_JOB_OPTIONS) {
    if (defaults?.[key] !== undefined) out[key] = defaults[key];
  }
  return out as ReactorJobOptions;
}

/**
 * The application's shared BullMQ configuration named by `bullmq.configKey` (registered with
 * `BullModule.forRoot(configKey, {...})`), or a coded error naming the option when there is none.
 */
function sharedConfiguration(options: ResolvedReactorModuleOptions, moduleRef: ModuleRef): QueueOptions | undefined {
  const configKey = options.bullmq.configKey;
  if (configKey === undefined) return undefined;
  let shared: QueueOptions | undefined;
  try {
    shared = moduleRef.get<QueueOptions>(getSharedConfigToken(configKey), { strict: false });
  } catch {
    shared = undefined;
  }
  if (shared === undefined || shared === null || typeof shared !== 'object') {
    throw new ConfigurationError(messages.bullConfigKeyMissing(configKey), 'bullmq.configKey');
  }
  if (shared.prefix !== undefined)
    new Logger(REACTOR_LOGGER_CONTEXT).debug(messages.bullConfigKeyConnection(configKey));
  return shared;
}

/**
 * The imports that give the Redis runtime its BullMQ queue and worker through `@nestjs/bullmq`:
 *
 * - the shared configuration under nest-reactor's own key (`BULLMQ_CONFIG(nest-reactor)`), built
 *   from the module options, so the application's `BullModule.forRoot()` (the default key) is
 *   neither replaced nor read, unless `bullmq.configKey` names one of the application's
 *   configurations to build on (its connection and prefix excepted);
 * - `BullModule.registerQueue({ name: 'nest-reactor', configKey: 'nest-reactor' })`, which also
 *   brings `@nestjs/bullmq`'s explorer: it builds the `RunProcessor`'s worker during module init
 *   and closes workers and queue at application shutdown (after the module closed them itself;
 *   BullMQ's `close()` is idempotent).
 *
 * NOTE: the configuration is provided directly rather than through `BullModule.forRootAsync()`,
 * because that also registers a global `BULLMQ_EXTRA_OPTIONS` provider, which would compete with
 * the application's own (its `manualRegistration` setting).
 *
 * @param optionsModule the module that provides `REACTOR_OPTIONS`
 */
export function reactorQueueImports(optionsModule: DynamicModule): DynamicModule[] {
  const configToken = getSharedConfigToken(REACTOR_BULL_CONFIG_KEY);
  return [
    {
      module: ReactorBullConfigModule,
      // NOTE: global because @nestjs/bullmq resolves the configuration from its own queue module.
      global: true,
      imports: [optionsModule],
      providers: [
        {
          provide: configToken,
          useFactory: (options: ResolvedReactorModuleOptions, moduleRef: ModuleRef) =>
            bullMqQueueOptions(options, undefined, sharedConfiguration(options, moduleRef)),
          inject: [REACTOR_OPTIONS, ModuleRef],
        },
      ],
      exports: [configToken],
    },
    BullModule.registerQueue({ name: REACTOR_QUEUE_NAME, configKey: REACTOR_BULL_CONFIG_KEY }),
  ];
}
