import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { systemClock } from '../../lib/core/ports/clock.port';
import { FakeClock } from '../../lib/testing/fake-clock';
import { RecordingMiddleware } from '../../lib/testing/recording.middleware';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { REACTOR_CLOCK, REACTOR_OPTIONS } from '../../lib/config/reactor.constants';
import type {
  ReactorAsyncModuleOptions,
  ReactorModuleAsyncOptions,
  ReactorOptionsFactory,
  ReactorModuleOptions,
} from '../../lib/config/reactor-module-options.interface';
import { resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { CapturingLogger, ORDER_PROVIDERS, OrderReactor } from './fixtures';

const order = { sku: 'sku-1', amount: 42, country: 'FR', card: '4242' };

@Injectable()
class ConfigService {
  readonly middleware = new RecordingMiddleware();
  readonly clock = new FakeClock();
  get(key: 'leaseTtlMs'): number {
    return { leaseTtlMs: 12_345 }[key];
  }
}

@Module({ providers: [ConfigService], exports: [ConfigService] })
class ConfigModule {}

@Injectable()
class ReactorConfig implements ReactorOptionsFactory {
  constructor(private readonly config: ConfigService) {}
  createReactorOptions(): ReactorAsyncModuleOptions {
    return { leaseTtlMs: this.config.get('leaseTtlMs'), clock: this.config.clock };
  }
}

@Module({ imports: [ConfigModule], providers: [ReactorConfig], exports: [ReactorConfig] })
class ReactorConfigModule {}

describe('ReactorModule options', () => {
  describe('forRootAsync', () => {
    it('builds the options with useFactory and inject', async () => {
      const app = await Test.createTestingModule({
        imports: [
          ReactorModule.forRootAsync({
            imports: [ConfigModule],
            inject: [ConfigService],
            useFactory: async (config: ConfigService) => ({
              leaseTtlMs: config.get('leaseTtlMs'),
              middleware: [config.middleware],
              clock: config.clock,
            }),
          }),
        ],
        providers: ORDER_PROVIDERS,
      })
        .setLogger(new CapturingLogger())
        .compile();
      try {
        await app.init();
        const config = app.get(ConfigService);
        expect(app.get(REACTOR_OPTIONS).leaseTtlMs).toBe(12_345);
        expect(app.get(REACTOR_CLOCK)).toBe(config.clock);

        const outcome = await app.get(ReactorClient).run(OrderReactor, order);

        expect(outcome.status).toBe('completed');
        expect(config.middleware.sequence(['reactor.start', 'reactor.complete'])).toEqual([
          'reactor.start',
          'reactor.complete',
        ]);
        expect(config.middleware.events[0].at).toBe(config.clock.now());
      } finally {
        await app.close();
      }
    });

    it('throws a clear error without exactly one of useFactory, useClass, useExisting', () => {
      expect(() =>
        ReactorModule.forRootAsync({ inject: [ConfigService] } as unknown as ReactorModuleAsyncOptions),
      ).toThrow(
        'ReactorModule.forRootAsync() needs exactly one of useFactory (a function returning the module options), ' +
          'useClass or useExisting (a provider with createReactorOptions())',
      );
      expect(() => ReactorModule.forRootAsync(undefined as unknown as ReactorModuleAsyncOptions)).toThrow(
        /needs exactly one of useFactory/,
      );
      expect(() => ReactorModule.forRootAsync({ useFactory: () => ({}), useClass: ReactorConfig })).toThrow(
        /it was given useFactory and useClass/,
      );
      expect(() => ReactorModule.forRootAsync({ useFactory: 'nope' } as unknown as ReactorModuleAsyncOptions)).toThrow(
        /needs exactly one of useFactory/,
      );
    });

    it.each([
      ['useClass', { useClass: ReactorConfig, imports: [ConfigModule] }],
      ['useExisting', { useExisting: ReactorConfig, imports: [ReactorConfigModule] }],
    ] as Array<[string, ReactorModuleAsyncOptions]>)(
      'builds the options with %s (createReactorOptions)',
      async (_kind, async) => {
        const app = await Test.createTestingModule({
          imports: [ReactorModule.forRootAsync(async)],
          providers: ORDER_PROVIDERS,
        })
          .setLogger(new CapturingLogger())
          .compile();
        try {
          await app.init();
          expect(app.get(REACTOR_OPTIONS).leaseTtlMs).toBe(12_345);
          expect(app.get(REACTOR_CLOCK)).toBeInstanceOf(FakeClock);
          const outcome = await app.get(ReactorClient).run(OrderReactor, order);
          expect(outcome.status).toBe('completed');
        } finally {
          await app.close();
        }
      },
    );

    it('says at boot that runtime must be given beside the factory when the options hold redis', async () => {
      const builder = Test.createTestingModule({
        imports: [ReactorModule.forRootAsync({ useFactory: () => ({ redis: { url: 'redis://127.0.0.1:1' } }) })],
      }).setLogger(new CapturingLogger());
      await expect(builder.compile()).rejects.toThrow(
        "the module was declared with the embedded runtime (the default). Pass runtime: 'redis' beside the factory",
      );
    });

    it('validates what the factory returns', async () => {
      const builder = Test.createTestingModule({
        imports: [ReactorModule.forRootAsync({ useFactory: () => ({ leaseTtlMs: -1 }) })],
      }).setLogger(new CapturingLogger());

      await expect(builder.compile()).rejects.toThrow(
        "ReactorModule option 'leaseTtlMs' must be an integer >= 1 (got -1).",
      );
    });

    it('refuses global from the factory: it changes the module shape', async () => {
      const builder = Test.createTestingModule({
        imports: [ReactorModule.forRootAsync({ useFactory: () => ({ global: false }) as ReactorModuleOptions })],
      }).setLogger(new CapturingLogger());

      await expect(builder.compile()).rejects.toThrow(
        /the options factory returned 'global'.*forRootAsync\(\{ global: false, useFactory \}\)/,
      );
    });
  });

  describe('forRoot', () => {
    it('validates options eagerly', () => {
      expect(() => ReactorModule.forRoot({ leaseTime: 5 } as unknown as ReactorModuleOptions)).toThrow(
        "ReactorModule option 'leaseTime' is unknown. Known options: redis, prefix,",
      );
      expect(() => ReactorModule.forRoot({ prefix: 'a{b}' })).toThrow(
        "ReactorModule option 'prefix' must be a non-empty string",
      );
      expect(() => ReactorModule.forRoot({ middleware: [{}] as never })).toThrow(
        "ReactorModule option 'middleware[0]' must be an object with an onEvent(event) method",
      );
      expect(() => ReactorModule.forRoot({ redis: { url: '' } })).toThrow(
        "ReactorModule option 'redis.url' must be a non-empty Redis URL",
      );
      expect(() => ReactorModule.forRoot({ sweeper: { interval: 5 } as never })).toThrow(
        "ReactorModule option 'sweeper.interval' is unknown",
      );
    });

    it('refuses a sweeper interval that is not clock-aligned, listing the valid ones', () => {
      expect(() => ReactorModule.forRoot({ sweeper: { intervalMs: 45_000 } })).toThrow(
        "ReactorModule option 'sweeper.intervalMs' is 45000, which is not a clock-aligned cron interval. Use one of: 1s, 2s,",
      );
      expect(() => ReactorModule.forRoot({ shards: 0 })).toThrow(
        "ReactorModule option 'shards' must be an integer >= 1",
      );
      expect(() => ReactorModule.forRoot({ workers: 'yes' as never })).toThrow(
        "ReactorModule option 'workers' must be true or false",
      );
    });
  });

  it('applies defaults in one place', () => {
    expect(resolveReactorModuleOptions(undefined)).toEqual({
      redis: undefined,
      prefix: 'reactor',
      middleware: [],
      leaseTtlMs: 60_000,
      checkpointMinIntervalMs: 0,
      snoozeDelayMs: 5_000,
      clock: systemClock,
      global: true,
      sweeper: { enabled: true, intervalMs: 30_000 },
      workers: true,
      workerConcurrency: 10,
      jobRetryCount: 3,
      contextTtlMs: 86_400_000,
      retention: {},
      maxContextBytes: 16 * 1024 * 1024,
      shards: 128,
      shutdownGraceMs: 10_000,
      connectTimeoutMs: 10_000,
      unknownReactorRetries: 30,
      unknownReactorDelayMs: 20_000,
      idempotencyWindowMs: 86_400_000,
      earlyResumeTtlMs: 3_600_000,
      asyncWaitTimeoutMs: 30_000,
      asyncParkTimeoutMs: 3_600_000,
      rateLimits: {},
      lockSnoozeMaxAttempts: 20,
      tracing: true,
      bullmq: { defaultJobOptions: {}, worker: {} },
    });
    // The idempotency window follows contextTtlMs, and may not outlive it.
    expect(resolveReactorModuleOptions({ contextTtlMs: 5_000 }).idempotencyWindowMs).toBe(5_000);
    expect(() => resolveReactorModuleOptions({ contextTtlMs: 5_000, idempotencyWindowMs: 6_000 })).toThrow(
      /idempotencyWindowMs/,
    );
    // So does the early-resume mailbox's TTL.
    expect(resolveReactorModuleOptions({ contextTtlMs: 5_000 }).earlyResumeTtlMs).toBe(5_000);
    expect(() => resolveReactorModuleOptions({ earlyResumeTtlMs: 90_000_000 })).toThrow(/earlyResumeTtlMs/);
    expect(resolveReactorModuleOptions({ sweeper: { enabled: false } }).sweeper).toEqual({
      enabled: false,
      intervalMs: 30_000,
    });
  });
});
