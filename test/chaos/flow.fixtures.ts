/**
 * The reactors of the flow-control chaos tests (test/chaos/flow.spec.ts, issue 24), shared by the
 * worker processes (flow.worker.ts) and the producer app of the test process, and the Redis keys
 * their steps write and the tests read.
 *
 * - `flow-chaos-debounce` (`debounce: { key: i => i.key, periodMs: 500 }`): its step counts its
 *   executions per flow key and records the inputs each execution got.
 * - `flow-chaos-tenant` (`concurrency: { key: i => i.tenant, limit: 2 }`): its step notes the run
 *   in the tenant's set of executing runs (and the most the set ever held, in one script), counts
 *   its starts per run, waits until the test opens the gate, holds {@link TENANT_HOLD_MS} more,
 *   then leaves the set and counts the completion.
 *
 * Worker processes take start commands from a Redis list (`FlowChaosKeys.commands`) and answer on
 * another (`FlowChaosKeys.reply`), so that the test can make a start happen in a chosen process.
 *
 * Every key is under the test file's prefix, tagged `{chaos}` like the `ChaosProbe`'s (one Redis
 * Cluster slot: the scripts below take several keys).
 */
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext, StepHandler } from '../../lib/core/definition/step';
import type { FlowHandle } from '../../lib/core/results/run-outcome';
import { success, type StepOutcome } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { ChaosProbe } from './chaos.fixtures';

/** The debounce period of `flow-chaos-debounce`. */
export const DEBOUNCE_PERIOD_MS = 500;
/** The concurrency limit per tenant of `flow-chaos-tenant`. */
export const TENANT_LIMIT = 2;
/** How long a `flow-chaos-tenant` step holds its slot once the gate is open. */
export const TENANT_HOLD_MS = 150;
/** Upper bound of the gate wait inside a step, so that a broken test never leaves a step hanging. */
const GATE_WAIT_LIMIT_MS = 60_000;

/** The Redis keys of the flow chaos tests (see the module comment). */
export class FlowChaosKeys {
  readonly base: string;
  constructor(readonly prefix: string) {
    this.base = `${prefix}{chaos}:flow:`;
  }
  /** Start commands for worker `workerId` (LIST of JSON {@link FlowCommand}). */
  commands(workerId: string): string {
    return `${this.base}commands:${workerId}`;
  }
  /** The answer to command `id` (LIST of one JSON {@link FlowReply}). */
  reply(id: string): string {
    return `${this.base}reply:${id}`;
  }
  /** Executions of `flow-chaos-debounce` for flow key `key` (INCR). */
  executions(key: string): string {
    return `${this.base}executions:${key}`;
  }
  /** What each execution of `flow-chaos-debounce` for `key` got (LIST of JSON {@link DebounceExecution}). */
  executed(key: string): string {
    return `${this.base}executed:${key}`;
  }
  /** The runs of `tenant` inside their step now (SET of run ids). */
  live(tenant: string): string {
    return `${this.base}live:${tenant}`;
  }
  /** The most runs of `tenant` ever inside their step at once (STRING). */
  maxLive(tenant: string): string {
    return `${this.base}max-live:${tenant}`;
  }
  /** Starts of the step of `flow-chaos-tenant` run `runId` (INCR). */
  started(runId: string): string {
    return `${this.base}started:${runId}`;
  }
  /** Completions of the step of `flow-chaos-tenant` run `runId` (INCR). */
  completed(runId: string): string {
    return `${this.base}completed:${runId}`;
  }
  /** Set by the test: steps of `flow-chaos-tenant` go on past it. */
  gate(): string {
    return `${this.base}gate`;
  }
}

/** A start command for a worker process: start `reactor` once per element of `inputs`, in order. */
export interface FlowCommand {
  id: string;
  reactor: string;
  inputs: Array<Record<string, unknown>>;
}

/** What a worker answers to a {@link FlowCommand}: each start's outcome, or the error a start threw. */
export type FlowReply =
  | { outcomes: Array<{ runId: string; status: string; flow?: FlowHandle }>; error?: undefined }
  | { error: string; outcomes?: undefined };

/** One execution of `flow-chaos-debounce`'s step, as recorded. */
export interface DebounceExecution {
  runId: string;
  seq: number;
  from: string;
  /** When it executed (ms, the executing process's clock). */
  at: number;
}

type DebounceInput = { key: string; seq: number; from: string };

/** Counts its execution per flow key and records the inputs it got. */
@Step('flow-chaos-record')
export class FlowRecordStep implements StepHandler<DebounceInput, { seq: number; from: string }> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ key, seq, from }: DebounceInput, ctx: StepContext): Promise<StepOutcome<{ seq: number; from: string }>> {
    const keys = new FlowChaosKeys(this.probe.config.prefix);
    const execution: DebounceExecution = { runId: ctx.runId, seq, from, at: Date.now() };
    await this.probe.redis
      .multi()
      .incr(keys.executions(key))
      .rpush(keys.executed(key), JSON.stringify(execution))
      .exec();
    return success({ seq, from });
  }
}

/** Starts of one key within 500 ms of each other collapse into one run with the last inputs. */
@Reactor('flow-chaos-debounce', { debounce: { key: (i) => i.key as string, periodMs: DEBOUNCE_PERIOD_MS } })
export class FlowDebounceReactor implements ReactorBlueprint<DebounceInput> {
  build(r: ReactorBuilder<DebounceInput>) {
    return r.step('record', FlowRecordStep, {
      key: r.input('key', { type: 'string' }),
      seq: r.input('seq', { type: 'number' }),
      from: r.input('from', { type: 'string' }),
    });
  }
}

/**
 * SADD the run to the tenant's live set, then raise the max to the set's size if it is larger, and
 * count the run's start: one script, so that no other process's step can come between.
 * KEYS: live set, max key, started counter. ARGV: run id. Returns the live count.
 */
const ENTER_SCRIPT = `
redis.call('SADD', KEYS[1], ARGV[1])
local n = redis.call('SCARD', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
redis.call('INCR', KEYS[3])
return n`;

type TenantInput = { tenant: string; n: number };

/**
 * Notes the run as executing for its tenant, waits until the gate is open (then {@link
 * TENANT_HOLD_MS} more), and notes it done. A run killed inside stays in the live set until its
 * recovered execution leaves: it still holds its slot then.
 */
@Step('flow-chaos-tenant-work')
export class FlowTenantStep implements StepHandler<TenantInput, number> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ tenant, n }: TenantInput, ctx: StepContext): Promise<StepOutcome<number>> {
    const { redis } = this.probe;
    const keys = new FlowChaosKeys(this.probe.config.prefix);
    await redis.eval(ENTER_SCRIPT, 3, keys.live(tenant), keys.maxLive(tenant), keys.started(ctx.runId), ctx.runId);
    const deadline = Date.now() + GATE_WAIT_LIMIT_MS;
    while ((await redis.exists(keys.gate())) === 0) {
      if (Date.now() > deadline) throw new Error(`the gate of run ${ctx.runId} was never opened`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, TENANT_HOLD_MS));
    await redis.multi().srem(keys.live(tenant), ctx.runId).incr(keys.completed(ctx.runId)).exec();
    return success(n);
  }
}

/** At most two live runs per tenant; the others wait in the tenant's queue. */
@Reactor('flow-chaos-tenant', { concurrency: { key: (i) => i.tenant as string, limit: TENANT_LIMIT } })
export class FlowTenantReactor implements ReactorBlueprint<TenantInput> {
  build(r: ReactorBuilder<TenantInput>) {
    return r.step('work', FlowTenantStep, {
      tenant: r.input('tenant', { type: 'string' }),
      n: r.input('n', { type: 'number' }),
    });
  }
}

/** The steps and reactors of the flow chaos tests (with `ChaosFixturesModule`, which provides the probe). */
export const FLOW_CHAOS_PROVIDERS = [FlowRecordStep, FlowDebounceReactor, FlowTenantStep, FlowTenantReactor];
