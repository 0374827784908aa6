import { Injectable, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorEvent } from '../../lib/core/middleware/events';
import { failure, success } from '../../lib/core/results/step-outcome';
import { OnReactorEvent } from '../../lib/nest/on-reactor-event.decorator';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { LISTENER_DROP_REPORT_INTERVAL_MS, ReactorListeners } from '../../lib/nest/reactor-listeners';
import { FakeClock } from '../../lib/testing/fake-clock';
import { DefinitionError } from '../../lib/core/errors/definition.error';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { CapturingLogger } from './fixtures';

@Reactor('listened')
class ListenedReactor implements ReactorBlueprint<{ fail: boolean }> {
  build(r: ReactorBuilder<{ fail: boolean }>) {
    return r.step(
      'charge',
      ({ fail }: { fail: boolean }) => (fail ? failure(new Error('declined'), { retryable: false }) : success('ok')),
      { fail: r.input('fail', { type: 'boolean' }) },
    );
  }
}

@Injectable()
class Alerts {
  readonly failures: string[] = [];
  readonly everything: string[] = [];

  @OnReactorEvent('step.fail', 'reactor.fail')
  onFailure(event: ReactorEvent) {
    this.failures.push(`${event.type}:${event.runId === undefined ? '?' : 'run'}`);
  }

  @OnReactorEvent('*')
  onAny(event: ReactorEvent) {
    this.everything.push(event.type);
  }

  @OnReactorEvent('reactor.complete')
  broken() {
    throw new Error('listener bug');
  }
}

async function app(providers: unknown[], clock?: FakeClock) {
  const logger = new CapturingLogger();
  const module = await Test.createTestingModule({
    imports: [ReactorModule.forRoot(clock ? { clock } : {})],
    providers: [ListenedReactor, ...(providers as never[])],
  })
    .setLogger(logger)
    .compile();
  return { module, logger };
}

describe('@OnReactorEvent', () => {
  it('calls provider methods with the events of their types; a throwing listener never affects the run', async () => {
    const { module } = await app([Alerts]);
    await module.init();
    try {
      const client = module.get(ReactorClient);
      const alerts = module.get(Alerts);
      expect(await client.run(ListenedReactor, { fail: false })).toMatchObject({ status: 'completed' });
      expect(alerts.failures).toEqual([]);
      expect(alerts.everything).toEqual(expect.arrayContaining(['reactor.start', 'step.complete', 'reactor.complete']));
      expect(await client.run(ListenedReactor, { fail: true })).toMatchObject({ status: 'failed' });
      expect(alerts.failures).toEqual(['step.fail:run', 'reactor.fail:run']);
    } finally {
      await module.close();
    }
  });

  it('refuses a request-scoped listener at boot, naming it', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequestAlerts {
      @OnReactorEvent('reactor.fail')
      onFail() {
        return undefined;
      }
    }
    const { module } = await app([PerRequestAlerts]);
    try {
      await expect(module.init()).rejects.toThrow(/@OnReactorEvent listener class PerRequestAlerts is request-scoped/);
    } finally {
      await module.close().catch(() => undefined);
    }
  });

  describe('fire-and-forget delivery', () => {
    /** A promise the test settles. */
    function gate() {
      let open!: () => void;
      let fail!: (error: Error) => void;
      const promise = new Promise<void>((resolve, reject) => {
        open = resolve;
        fail = reject;
      });
      return { promise, open, fail };
    }

    it('a slow listener does not hold the run: the outcome arrives while its promise is pending', async () => {
      const held = gate();
      @Injectable()
      class SlowAudit {
        readonly started: string[] = [];
        readonly finished: string[] = [];
        @OnReactorEvent('reactor.complete')
        async write(event: ReactorEvent) {
          this.started.push(event.type);
          await held.promise;
          this.finished.push(event.type);
        }
      }
      const { module } = await app([SlowAudit]);
      await module.init();
      try {
        const audit = module.get(SlowAudit);
        const listeners = module.get(ReactorListeners);
        const outcome = await module.get(ReactorClient).run(ListenedReactor, { fail: false });

        expect(outcome).toMatchObject({ status: 'completed', value: 'ok' });
        // Called when the event happened, and still pending: the run did not wait for it.
        expect(audit.started).toEqual(['reactor.complete']);
        expect(audit.finished).toEqual([]);
        expect(listeners.inFlight).toBe(1);

        held.open();
        await listeners.settled();
        expect(audit.finished).toEqual(['reactor.complete']);
        expect(listeners.inFlight).toBe(0);
      } finally {
        held.open();
        await module.close();
      }
    });

    it('logs a listener that throws or rejects with its class, method and the event; the run completes', async () => {
      const held = gate();
      @Injectable()
      class FaultyAlerts {
        @OnReactorEvent('step.complete')
        throwsAtOnce() {
          throw new Error('sync listener bug');
        }

        @OnReactorEvent('reactor.complete')
        async rejectsLater() {
          await held.promise;
        }
      }
      const { module, logger } = await app([FaultyAlerts]);
      await module.init();
      try {
        const outcome = await module.get(ReactorClient).run(ListenedReactor, { fail: false });
        expect(outcome).toMatchObject({ status: 'completed' });
        const errors = () => logger.messages('error').filter((m) => m.includes('@OnReactorEvent listener'));
        expect(errors()).toEqual([
          expect.stringMatching(
            new RegExp(
              `^@OnReactorEvent listener FaultyAlerts\\.throwsAtOnce failed on 'step\\.complete' \\(run '${outcome.runId}', reactor 'listened'\\): sync listener bug\\. The run is not affected`,
            ),
          ),
        ]);

        held.fail(new Error('async listener bug'));
        await module.get(ReactorListeners).settled();
        expect(errors()[1]).toMatch(
          /^@OnReactorEvent listener FaultyAlerts\.rejectsLater failed on 'reactor\.complete' .*: async listener bug\./,
        );
        expect((await module.get(ReactorClient).get(outcome.runId))?.status).toBe('completed');
      } finally {
        held.open();
        await module.close();
      }
    });

    it('bounds the calls in flight per listener: excess events are dropped, counted and reported once per interval', async () => {
      const held = gate();
      @Injectable()
      class Hanging {
        readonly calls: string[] = [];
        @OnReactorEvent('*', { maxInFlight: 2 })
        async everything(event: ReactorEvent) {
          this.calls.push(event.type);
          await held.promise;
        }
      }
      @Injectable()
      class Counter {
        count = 0;
        @OnReactorEvent('*')
        count1() {
          this.count++;
        }
      }
      const clock = new FakeClock();
      const { module, logger } = await app([Hanging, Counter], clock);
      await module.init();
      try {
        const client = module.get(ReactorClient);
        const listeners = module.get(ReactorListeners);
        const hanging = module.get(Hanging);
        const statsOf = (name: string) => listeners.stats().find((s) => s.listener === name);
        const warnings = () => logger.messages('warn').filter((m) => m.includes('Hanging.everything'));

        // A run has 4 events: reactor.start, step.start, step.complete, reactor.complete.
        for (let i = 0; i < 10; i++)
          expect(await client.run(ListenedReactor, { fail: false })).toMatchObject({ status: 'completed' });

        expect(hanging.calls).toEqual(['reactor.start', 'step.start']);
        expect(statsOf('Hanging.everything')).toEqual({
          listener: 'Hanging.everything',
          inFlight: 2,
          maxInFlight: 2,
          dropped: 38,
        });
        expect(listeners.inFlight).toBe(2);
        // The other listener got every event.
        expect(module.get(Counter).count).toBe(40);
        // Reported at the first drop only: the interval has not passed on the clock.
        expect(warnings()).toEqual([
          expect.stringMatching(
            /^@OnReactorEvent listener Hanging\.everything had 2 calls pending \(its maxInFlight\), so 1 event was not delivered to it since the last report \(1 since boot\)/,
          ),
        ]);

        clock.advance(LISTENER_DROP_REPORT_INTERVAL_MS);
        await client.run(ListenedReactor, { fail: false });
        expect(warnings()).toHaveLength(2);
        expect(warnings()[1]).toMatch(/so 38 events were not delivered to it since the last report \(39 since boot\)/);

        // Once its calls settle, the listener gets events again.
        held.open();
        await listeners.settled();
        expect(statsOf('Hanging.everything')).toMatchObject({ inFlight: 0, dropped: 42 });
        await client.run(ListenedReactor, { fail: false });
        expect(hanging.calls.slice(2)).toEqual(['reactor.start', 'step.start', 'step.complete', 'reactor.complete']);
      } finally {
        held.open();
        await module.close();
      }
    });

    it('refuses a maxInFlight that is not an integer >= 1, naming the method', () => {
      expect(() => {
        class Bad {
          @OnReactorEvent('reactor.fail', { maxInFlight: 0 })
          onFail() {
            return undefined;
          }
        }
        return Bad;
      }).toThrow(DefinitionError);
      expect(() => {
        class Bad {
          @OnReactorEvent('reactor.fail', { maxInFlight: 1.5 })
          onFail() {
            return undefined;
          }
        }
        return Bad;
      }).toThrow(/@OnReactorEvent on Bad\.onFail: option 'maxInFlight' must be an integer >= 1 \(got 1\.5\)/);
    });
  });
});
