import { Test } from '@nestjs/testing';
import type { Queue } from 'bullmq';
import { ConfigurationError, DefinitionError, InternalError, ReactorError } from '../../lib/core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { ReactorRegistry } from '../../lib/nest/reactor.registry';
import { Step } from '../../lib/nest/step.decorator';
import { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { runScript } from '../../lib/storage/redis/redis-scripts';
import { CapturingLogger, ORDER_PROVIDERS, OrderReactor } from './fixtures';

/** The error `fn` throws (fails the test when it throws nothing). */
function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('errors thrown to users carry a class and a stable code', () => {
  describe('module options: ConfigurationError naming the option', () => {
    it.each([
      [{ leaseTtlMs: 0 }, 'leaseTtlMs'],
      [{ prefix: 'a b' }, 'prefix'],
      [{ sweeper: { intervalMs: 7_000 } }, 'sweeper.intervalMs'],
      [{ sweeper: { every: 1 } }, 'sweeper.every'],
      [{ leaseTTL: 1 }, 'leaseTTL'],
    ])('forRoot(%j) -> option %s', (options, option) => {
      const error = thrownBy(() => ReactorModule.forRoot(options as never));

      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toBeInstanceOf(ReactorError);
      expect(error).toMatchObject({ code: 'CONFIGURATION_INVALID', option, name: 'ConfigurationError' });
    });

    it('forRootAsync without a factory', () => {
      const error = thrownBy(() => ReactorModule.forRootAsync({} as never));

      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toMatchObject({ code: 'CONFIGURATION_INVALID', option: 'useFactory' });
    });
  });

  describe('decorators and discovery: DefinitionError', () => {
    it('a second step class under a taken step name', () => {
      const registry = new ReactorRegistry();
      class First {}
      class Second {}
      registry.addStep(First, new First(), 'charge');

      const error = thrownBy(() => registry.addStep(Second, new Second(), 'charge'));

      expect(error).toBeInstanceOf(DefinitionError);
      expect(error).toMatchObject({ code: 'DEFINITION_INVALID', stepName: 'charge' });
      expect((error as Error).message).toContain("Two step classes are named 'charge': First and Second.");
    });

    it('a second reactor class under a taken reactor name', () => {
      const registry = new ReactorRegistry();
      class First {}
      class Second {}
      registry.addReactor(First, 'checkout');

      const error = thrownBy(() => registry.addReactor(Second, 'checkout'));

      expect(error).toBeInstanceOf(DefinitionError);
      expect(error).toMatchObject({ code: 'DEFINITION_INVALID', reactorName: 'checkout' });
    });

    it('@Reactor on a class without build() and @Step on a class without run()', () => {
      const reactorError = thrownBy(() => Reactor('no-build')(class NoBuild {}));
      const stepError = thrownBy(() => Step('no-run')(class NoRun {}));

      expect(reactorError).toBeInstanceOf(DefinitionError);
      expect(reactorError).toMatchObject({ code: 'DEFINITION_INVALID', reactorName: 'no-build' });
      expect(stepError).toBeInstanceOf(DefinitionError);
      expect(stepError).toMatchObject({ code: 'DEFINITION_INVALID', stepName: 'no-run' });
    });
  });

  it('a client used before the module discovered its reactors: ConfigurationError', async () => {
    const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers: ORDER_PROVIDERS })
      .setLogger(new CapturingLogger())
      .compile();
    try {
      const error = await app
        .get(ReactorClient)
        .run(OrderReactor, { sku: 'sku-1', amount: 1, country: 'FR', card: '4242' })
        .catch((e: unknown) => e);

      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toMatchObject({ code: 'CONFIGURATION_INVALID' });
    } finally {
      await app.close();
    }
  });

  describe('a Redis connection the runtime cannot use: ConfigurationError on redis.connection', () => {
    const queue = {} as Queue;

    it('an object that is not an ioredis client', () => {
      const options = resolveReactorModuleOptions({ redis: { connection: { host: 'localhost' } } });

      const error = thrownBy(() => new RedisReactorRuntime(options, queue, new CapturingLogger()));

      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toMatchObject({ code: 'CONFIGURATION_INVALID', option: 'redis.connection' });
      expect((error as Error).message).toContain("ReactorModule option 'redis.connection' must be an ioredis client");
    });

    it('a client with maxRetriesPerRequest set', () => {
      const connection = { defineCommand: () => {}, duplicate: () => {}, options: { maxRetriesPerRequest: 20 } };
      const options = resolveReactorModuleOptions({ redis: { connection } });

      const error = thrownBy(() => new RedisReactorRuntime(options, queue, new CapturingLogger()));

      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toMatchObject({ code: 'CONFIGURATION_INVALID', option: 'redis.connection' });
    });
  });

  it('a script run with the wrong number of keys: InternalError', async () => {
    const error = await runScript({} as never, 'markBroken', ['only-one'], []).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InternalError);
    expect(error).toMatchObject({ code: 'INTERNAL', message: "Script 'markBroken' takes 2 keys, got 1." });
  });
});
