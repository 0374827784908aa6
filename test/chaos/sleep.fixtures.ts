/**
 * The reactor of the sleep restart test (test/chaos/sleep-restart.spec.ts), shared by its worker
 * processes (sleep.worker.ts) and its producer apps: `s1`, then a durable sleep of `ms`, then `s2`.
 * Each step counts its executions in Redis (`ChaosProbe.enter`), whichever process runs it.
 */
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { ChaosProbe } from './chaos.fixtures';

/** Counts one execution of its step in the probe and returns the step's name. */
@Step('chaos-sleep-enter')
export class EnterStep {
  constructor(private readonly probe: ChaosProbe) {}
  async run(_args: object, ctx: StepContext) {
    await this.probe.enter(ctx.runId, ctx.stepName);
    return success(ctx.stepName);
  }
}

@Reactor('chaos-sleep')
export class ChaosSleepReactor implements ReactorBlueprint<{ ms: number }> {
  build(r: ReactorBuilder<{ ms: number }>) {
    r.step('s1', EnterStep, {});
    r.sleep('nap', { ms: r.input('ms', { type: 'number' }), waitFor: ['s1'] });
    return r.step('s2', EnterStep, {}, { waitFor: ['nap'] });
  }
}

export const CHAOS_SLEEP_PROVIDERS = [EnterStep, ChaosSleepReactor];
