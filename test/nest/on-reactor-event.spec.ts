import { Injectable, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { ReactorEvent } from '../../lib/core/middleware/events';
import { failure, success } from '../../lib/core/results/step-outcome';
import { OnReactorEvent } from '../../lib/nest/on-reactor-event.decorator';
import { ReactorClient } from '../../lib/nest/reactor.client';
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

async function app(providers: unknown[]) {
  const logger = new CapturingLogger();
  const module = await Test.createTestingModule({
    imports: [ReactorModule.forRoot()],
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
});
