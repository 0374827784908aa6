import { Test } from '@nestjs/testing';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorOptions } from '../../lib/core/definition/definition';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { DefinitionError } from '../../lib/core/errors/definition.error';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { resolveJobRouting } from '../../lib/queue/job-routing';
import { ReactorQueues } from '../../lib/queue/reactor-queues';
import { CapturingLogger } from '../nest/fixtures';

/** A one-step reactor named `name` with `options`. */
function reactor(name: string, options: ReactorOptions = {}) {
  return defineReactor(name, (r: ReactorBuilder<object>) => r.step('s', () => success(1), {}), options);
}

/** resolveJobRouting over the given definitions (each its own current version). */
function routingOf(...defs: ReturnType<typeof reactor>[]) {
  return resolveJobRouting(defs, defs);
}

describe('resolveJobRouting', () => {
  it('routes reactors that declare a queue or a priority; the others have no route', () => {
    const routing = routingOf(
      reactor('a', { queue: 'slow', concurrency: 2, priority: 5 }),
      reactor('b', { queue: 'slow' }),
      reactor('c', { priority: 1 }),
      reactor('d'),
    );
    expect(Object.fromEntries(routing.routes)).toEqual({
      a: { queue: 'slow', priority: 5 },
      b: { queue: 'slow' },
      c: { priority: 1 },
    });
    expect(Object.fromEntries(routing.queues)).toEqual({ slow: { concurrency: 2 } });
  });

  it("gives an inline async unit its reactor's route", () => {
    const parent = defineReactor(
      'parent',
      (r: ReactorBuilder<object>) => {
        const unit = r.asyncStep('unit', () => success(1), {});
        return r.step('read', ({ u }: { u: number }) => success(u), { u: unit });
      },
      { queue: 'units', priority: 2 },
    );
    expect(routingOf(parent).routes.get('parent::unit')).toEqual({ queue: 'units', priority: 2 });
  });

  it('routes a reactor by its current version, after validating every version', () => {
    const v1 = reactor('r', { version: '1', queue: 'old' });
    const v2 = reactor('r', { version: '2', queue: 'new' });
    const routing = resolveJobRouting([v1, v2], [v2]);
    expect(routing.routes.get('r')).toEqual({ queue: 'new' });
    expect([...routing.queues.keys()]).toEqual(['new']);
    expect(() => resolveJobRouting([reactor('r', { version: '1', priority: 0 }), v2], [v2])).toThrow(
      "Reactor 'r': option 'priority' must be an integer from 1 (highest) to 2097152",
    );
  });

  it.each([
    [{ queue: '' }, "option 'queue' must be a queue name"],
    [{ queue: 'a:b' }, "option 'queue' must be a queue name of letters, digits, '.', '_' or '-' (BullMQ refuses ':')"],
    [{ queue: 'a{b}' }, "option 'queue' must be a queue name"],
    [{ queue: 7 }, "option 'queue' must be a queue name"],
    [{ queue: 'nest-reactor' }, "queue 'nest-reactor' is the module's default queue"],
    [{ queue: 'q', concurrency: 0 }, "option 'concurrency' must be an integer >= 1"],
    [{ queue: 'q', concurrency: 1.5 }, "option 'concurrency' must be an integer >= 1"],
    [{ concurrency: 2 }, "option 'concurrency' sets the worker concurrency of the reactor's own queue"],
    [{ priority: 0 }, "option 'priority' must be an integer from 1 (highest) to 2097152"],
    [{ priority: 2 ** 21 + 1 }, "option 'priority' must be an integer from 1 (highest) to 2097152"],
  ])('refuses %j, naming the reactor and the option', (options, message) => {
    const act = () => routingOf(reactor('bad', options as ReactorOptions));
    expect(act).toThrow(DefinitionError);
    expect(act).toThrow(`Reactor 'bad': ${message}`);
  });

  it('refuses two reactors sharing a queue with different concurrency, naming both', () => {
    expect(() =>
      routingOf(reactor('one', { queue: 'q', concurrency: 2 }), reactor('two', { queue: 'q', concurrency: 3 })),
    ).toThrow("Reactors 'one' and 'two' share queue 'q' but declare different concurrency (2 and 3)");
    // The same value, or none on one of them, is fine.
    expect(
      Object.fromEntries(
        routingOf(
          reactor('one', { queue: 'q', concurrency: 2 }),
          reactor('two', { queue: 'q' }),
          reactor('three', { queue: 'q', concurrency: 2 }),
        ).queues,
      ),
    ).toEqual({ q: { concurrency: 2 } });
  });

  it('keeps routing options out of the definition hash (moving a reactor to a queue is compatible)', () => {
    expect(reactor('h', { queue: 'q', priority: 4 }).hash).toBe(reactor('h').hash);
  });
});

describe('@Reactor queue options at boot', () => {
  it('fails the boot (embedded runtime too) with a message naming the reactor and the option', async () => {
    @Reactor('bad-queue', { queue: 'has:colon' })
    class BadQueueReactor implements ReactorBlueprint<object> {
      build(r: ReactorBuilder<object>) {
        return r.step('s', () => success(1), {});
      }
    }
    const boot = async () => {
      const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers: [BadQueueReactor] })
        .setLogger(new CapturingLogger())
        .compile();
      try {
        await app.init();
      } finally {
        await app.close();
      }
    };
    await expect(boot()).rejects.toThrow("Reactor 'bad-queue': option 'queue' must be a queue name");
  });

  it('gives an embedded app a ReactorQueues without queues', async () => {
    @Reactor('routed-embedded', { queue: 'slow', concurrency: 2 })
    class RoutedReactor implements ReactorBlueprint<object> {
      build(r: ReactorBuilder<object>) {
        return r.step('s', () => success(1), {});
      }
    }
    const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers: [RoutedReactor] })
      .setLogger(new CapturingLogger())
      .compile();
    try {
      await app.init();
      const queues = app.get(ReactorQueues);
      expect(queues.all()).toEqual([]);
      expect(queues.get()).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
