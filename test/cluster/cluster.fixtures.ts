/**
 * Reactors of the cluster tests (test/cluster): `cluster-move` runs s1, `hold` (every run waits
 * there until the test opens the {@link Hold}), s3, s4, each step its own job in a worker, and
 * counts each execution in this process ({@link Executions}).
 */
import { Injectable } from '@nestjs/common';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';

/** Executions of each step of each run, in this process. */
@Injectable()
export class Executions {
  readonly counts = new Map<string, number>();
  add(runId: string, step: string): void {
    const key = `${runId}:${step}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
}

/** Holds every run in step `hold` until the test opens it; counts the runs waiting there. */
@Injectable()
export class Hold {
  waiting = 0;
  private opened = false;
  private waiters: Array<() => void> = [];
  pass(): Promise<void> {
    this.waiting++;
    if (this.opened) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  open(): void {
    this.opened = true;
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

@Step('cluster-count')
export class CountStep {
  constructor(private readonly executions: Executions) {}
  run({ at }: { at: number }, ctx: StepContext) {
    this.executions.add(ctx.runId, ctx.stepName);
    return success(at);
  }
}

@Step('cluster-hold')
export class HoldStep {
  constructor(
    private readonly executions: Executions,
    private readonly hold: Hold,
  ) {}
  async run(_args: object, ctx: StepContext) {
    this.executions.add(ctx.runId, ctx.stepName);
    await this.hold.pass();
    return success('held');
  }
}

/** s1, `hold` (waits for the test), s3, s4: every step its own job in the worker. */
@Reactor('cluster-move', { background: { all: true } })
export class MoveReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const s1 = r.step('s1', CountStep, { at: r.value(1) });
    const hold = r.step('hold', HoldStep, {}, { waitFor: [s1] });
    const s3 = r.step('s3', CountStep, { at: r.value(3) }, { waitFor: [hold] });
    return r.step('s4', CountStep, { at: r.value(4) }, { waitFor: [s3] });
  }
}

export const STEPS = ['s1', 'hold', 's3', 's4'];

/** The providers of the cluster fixtures. */
export const CLUSTER_PROVIDERS = [Executions, Hold, CountStep, HoldStep, MoveReactor];

/** `<runId>:<step>` and its count, for every step of `runIds` that did not execute exactly once. */
export function notExactlyOnce(executions: Executions, runIds: readonly string[]): Array<readonly [string, number]> {
  return runIds.flatMap((runId) =>
    STEPS.map((step) => [`${runId}:${step}`, executions.counts.get(`${runId}:${step}`) ?? 0] as const).filter(
      ([, count]) => count !== 1,
    ),
  );
}
