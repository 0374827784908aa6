import { BullModule, getSharedConfigToken } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import type { ConnectionOptions, QueueOptions } from 'bullmq';
import { ConfigurationError } from '../core';
import { type ResolvedReactorModuleOptions, REACTOR_OPTIONS } from '../config';
import { bullMqPrefix, REACTOR_BULL_CONFIG_KEY, REACTOR_QUEUE_NAME } from './queue.constants';

/**
 * Holds nest-reactor's BullMQ settings under its own `@nestjs/bullmq` config key.
 * @internal
 */
@Module({})
export class ReactorBullConfigModule {}

/**
 * The BullMQ settings of the module's queue and worker, from the module options: the connection
 * (the URL, so that BullMQ creates and closes its own connections, or the application's
 * connection, which BullMQ shares and never closes) and the key prefix.
 */
export function bullMqQueueOptions(options: ResolvedReactorModuleOptions, queue?: string): QueueOptions {
  const redis = options.redis;
  if (!redis) throw new ConfigurationError('The BullMQ queue of nest-reactor needs the redis option.', 'redis');
  const connection: ConnectionOptions =
    'url' in redis ? { url: redis.url } : (redis.connection as unknown as ConnectionOptions);
  return { connection, prefix: bullMqPrefix(options.prefix, queue) };
}

/**
 * The imports that give the Redis runtime its BullMQ queue and worker through `@nestjs/bullmq`:
 *
 * - the shared configuration under nest-reactor's own key (`BULLMQ_CONFIG(nest-reactor)`), built
 *   from the module options, so the application's `BullModule.forRoot()` (the default key) is
 *   neither replaced nor read;
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
          useFactory: (options: ResolvedReactorModuleOptions) => bullMqQueueOptions(options),
          inject: [REACTOR_OPTIONS],
        },
      ],
      exports: [configToken],
    },
    BullModule.registerQueue({ name: REACTOR_QUEUE_NAME, configKey: REACTOR_BULL_CONFIG_KEY }),
  ];
}
