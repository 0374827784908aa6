/**
 * The reactor of the schedule chaos test (test/chaos/schedule-replicas.spec.ts) and its probe keys,
 * shared by the test process and the worker processes (test/chaos/schedule-worker.ts).
 */
import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';

/** The probe's Redis client (the worker's own connection, not the module's). */
export const SCHEDULE_PROBE_REDIS = Symbol('SCHEDULE_PROBE_REDIS');

/** Keys the test reads: all under the test's prefix, tagged so they share a slot on a cluster. */
export function scheduleProbeKeys(prefix: string) {
  const base = `${prefix}{schedchaos}`;
  return {
    /** SET of the due times (ms) of the ticks any worker took (before handling them). */
    taken: `${base}:taken`,
    /** SET of the due times (ms) of the ticks any worker handled by starting (or finding) their run. */
    ticks: `${base}:ticks`,
    /** SET of `<due time>:<reason>` of the ticks a worker handled without a run (skipped). */
    skipped: `${base}:skipped`,
    /** HASH worker id -> ticks it is handling now (up when it takes one, down once handled). */
    handling: `${base}:handling`,
    /** HASH run id -> how many times its step executed. */
    executions: `${base}:executions`,
    /** Deliveries of a tick that found its run already started (counter). */
    replays: `${base}:replays`,
  };
}

/** Counts each execution of the run's step by run id. */
@Injectable()
@Step('sched-chaos-record')
export class RecordTick {
  constructor(@Inject(SCHEDULE_PROBE_REDIS) private readonly probe: { redis: Redis; prefix: string }) {}

  async run(_args: Record<string, never>, ctx: StepContext) {
    await this.probe.redis.hincrby(scheduleProbeKeys(this.probe.prefix).executions, ctx.runId, 1);
    return success(ctx.runId);
  }
}

@Reactor('sched-chaos-tick')
export class ScheduledTickReactor implements ReactorBlueprint<Record<string, never>> {
  build(r: ReactorBuilder<Record<string, never>>) {
    return r.step('record', RecordTick, {});
  }
}
