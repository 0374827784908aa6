import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { StepAbortedError } from '../../lib/core/errors/step-aborted.error';
import { success } from '../../lib/core/results/step-outcome';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import type { EmbeddedReactorRuntime } from '../../lib/runtime/embedded.runtime';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { CapturingLogger } from './fixtures';

/** Where the long step tells the test it has started, and what its signal said. */
@Injectable()
class Probe {
  ctx?: StepContext;
  private started!: () => void;
  readonly entered = new Promise<void>((resolve) => (this.started = resolve));
  enter(ctx: StepContext): void {
    this.ctx = ctx;
    this.started();
  }
}

@Step('long-export')
class LongExportStep {
  constructor(private readonly probe: Probe) {}
  async run(_args: unknown, ctx: StepContext) {
    this.probe.enter(ctx);
    // Cooperative: waits until told to stop (a real step would work in slices and check the signal).
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    ctx.signal.throwIfAborted();
    return success('exported');
  }
}

@Reactor('long-export')
class LongExportReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('export', LongExportStep, {});
  }
}

describe('ReactorModule shutdown aborts the steps still running after shutdownGraceMs (embedded)', () => {
  it("app.close() aborts the step's signal (cause 'shutdown'), which stops; the run is left for recovery, not failed", async () => {
    const logger = new CapturingLogger();
    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot({ shutdownGraceMs: 20 })],
      providers: [Probe, LongExportStep, LongExportReactor],
    })
      .setLogger(logger)
      .compile();
    await app.init();
    const client = app.get(ReactorClient);
    const probe = app.get(Probe);
    const runtime = app.get<EmbeddedReactorRuntime>(REACTOR_RUNTIME);

    const running = client.run(LongExportReactor, {});
    await probe.entered;
    await app.close();

    const reason = probe.ctx!.signal.reason as StepAbortedError;
    expect(reason).toBeInstanceOf(StepAbortedError);
    expect(reason).toMatchObject({ abortCause: 'shutdown', reactorName: 'long-export', stepName: 'export' });
    // The caller hears that the run goes on elsewhere; the stored run is neither failed nor rolled back.
    expect((await running).status).toBe('dispatched');
    const stored = await runtime.storage.load(reason.runId);
    expect(stored?.status).toBe('running');
    expect(stored?.failure).toBeUndefined();
    expect(logger.messages('warn')).toContainEqual(
      expect.stringContaining(
        "Shutdown: 1 run still executing after shutdownGraceMs (20 ms); their steps' ctx.signal was aborted (cause 'shutdown')",
      ),
    );
  });

  it('closes without aborting anything when no run executes', async () => {
    const logger = new CapturingLogger();
    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot({ shutdownGraceMs: 20 })],
      providers: [Probe, LongExportStep, LongExportReactor],
    })
      .setLogger(logger)
      .compile();
    await app.init();
    await app.close();
    expect(logger.messages('warn').filter((m) => m.startsWith('Shutdown:'))).toEqual([]);
  });
});
