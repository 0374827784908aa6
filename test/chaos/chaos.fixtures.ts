/**
 * Steps and reactors of the chaos tests, shared by the test process (producer apps, in-process
 * workers) and the worker child process (`worker-app.ts`).
 *
 * Every step records each execution in Redis through the {@link ChaosProbe} (counts survive a
 * SIGKILL), and can be told by its {@link ChaosConfig} (from the environment in a child) to
 * misbehave at a chosen point:
 *
 * - `crashAtStep`: mark `inside:<runId>:<step>`, then hang forever (the test SIGKILLs the process);
 * - `crashFromElement`: map elements with `index >= crashFromElement` join the `elements-inside`
 *   set of their map, then hang forever;
 * - `blockAtStep` + `blockFile`: once per run (SET NX), mark `inside`, then block the event loop
 *   synchronously until `blockFile` exists (so the run's lease expires meanwhile);
 * - `gateAtStep`: mark `inside`, then wait (async, bounded) until the test sets `open:<runId>:<step>`;
 * - `slowAtStep` + `slowMs`: a long step that honours its signal: mark `inside`, then wait `slowMs`
 *   unless `ctx.signal` aborts first (it then throws the signal's reason, as a well-behaved step does);
 * - `slowFromElement` + `slowMs`: the same for map elements with `index >= slowFromElement` (they
 *   join the `elements-inside` set of their map first).
 *
 * The constructor dependency of the steps (`ChaosProbe`) is resolved by Nest from the decorator
 * metadata that `emitDecoratorMetadata` emits, under ts-jest and under ts-node transpile-only alike.
 */
import { Inject, Injectable, Module, type DynamicModule, type OnModuleDestroy, type Provider } from '@nestjs/common';
import Redis from 'ioredis';
import { existsSync } from 'node:fs';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { Ref } from '../../lib/core/definition/ref';
import type { StepContext, StepHandler } from '../../lib/core/definition/step';
import { failure, success, type StepOutcome } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { CLUSTER_NODES_ENV, createTestRedis } from '../setup/redis';

/** Injection token of the {@link ChaosConfig}. */
export const CHAOS_CONFIG = 'CHAOS_CONFIG';

/** How the chaos steps of one process behave. */
export interface ChaosConfig {
  /** The single-node Redis; unset in the cluster run (REDIS_CLUSTER_NODES is used instead). */
  redisUrl?: string;
  /** Key prefix of the test file (also the ReactorModule prefix). */
  prefix: string;
  crashAtStep?: string;
  crashFromElement?: number;
  blockAtStep?: string;
  blockFile?: string;
  gateAtStep?: string;
  slowAtStep?: string;
  slowFromElement?: number;
  /** How long a slow step (or element) takes when its signal is not aborted. @default 60000 */
  slowMs?: number;
}

/** The six steps of `chaos-chain`, in order. */
export const CHAIN_STEPS = ['s1', 's2', 's3', 's4', 's5', 's6'] as const;

/** Upper bound of every wait inside a step, so that a broken test never leaves a process hanging. */
const STEP_WAIT_LIMIT_MS = 20_000;

/**
 * The Redis keys the probe writes and the tests read (all under the test file's prefix, and all in
 * one Redis Cluster slot, `{chaos}`, so the probe's MULTI and the tests' MGET work on a cluster).
 */
export class ChaosKeys {
  readonly base: string;
  constructor(readonly prefix: string) {
    this.base = `${prefix}{chaos}:`;
  }
  /** Executions of `step` in run `runId` (INCR). */
  ran(runId: string, step: string): string {
    return `${this.base}ran:${runId}:${step}`;
  }
  /** Every execution of run `runId`, in order (RPUSH of step names). */
  log(runId: string): string {
    return `${this.base}log:${runId}`;
  }
  /** Set when a step that crashes, blocks or waits at a gate is inside its body. */
  inside(runId: string, step: string): string {
    return `${this.base}inside:${runId}:${step}`;
  }
  /** Set by the test to let a step waiting at its gate go on. */
  open(runId: string, step: string): string {
    return `${this.base}open:${runId}:${step}`;
  }
  /** Set once a step has blocked (a step blocks once per run). */
  blocked(runId: string, step: string): string {
    return `${this.base}blocked:${runId}:${step}`;
  }
  /** Executions of one map element (INCR), by the element's run id (`<mapId>#<index>`). */
  element(elementRunId: string): string {
    return `${this.base}el:${elementRunId}`;
  }
  /** Indices of the elements of map `mapId` hanging inside their step (SET). */
  elementsInside(mapId: string): string {
    return `${this.base}elements-inside:${mapId}`;
  }
  /** The pid of the process inside the body of `step` of run `runId` (storm test). */
  running(runId: string, step: string): string {
    return `${this.base}running:${runId}:${step}`;
  }
  /** Two live processes inside the same step body at once (storm test; RPUSH). */
  violations(): string {
    return `${this.base}violations`;
  }
  /** Undos of run `runId`, in order (RPUSH of step names). */
  undone(runId: string): string {
    return `${this.base}undone:${runId}`;
  }
  /** Set by a worker process once it is bootstrapped. */
  ready(workerId: string): string {
    return `${this.base}ready:${workerId}`;
  }
}

/** The config of a worker child process, from its environment. */
export function chaosConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ChaosConfig {
  const required = (name: string): string => {
    const value = env[name];
    if (!value) throw new Error(`worker-app: environment variable ${name} is required`);
    return value;
  };
  return {
    redisUrl: env[CLUSTER_NODES_ENV] ? undefined : required('REDIS_URL'),
    prefix: required('CHAOS_PREFIX'),
    crashAtStep: env.CRASH_AT_STEP || undefined,
    crashFromElement: env.CRASH_FROM_ELEMENT ? Number(env.CRASH_FROM_ELEMENT) : undefined,
    blockAtStep: env.BLOCK_AT_STEP || undefined,
    blockFile: env.BLOCK_FILE || undefined,
    gateAtStep: env.GATE_AT_STEP || undefined,
    slowAtStep: env.SLOW_AT_STEP || undefined,
    slowFromElement: env.SLOW_FROM_ELEMENT ? Number(env.SLOW_FROM_ELEMENT) : undefined,
    slowMs: env.SLOW_MS ? Number(env.SLOW_MS) : undefined,
  };
}

/** Records executions in Redis and carries out the configured misbehaviour. */
@Injectable()
export class ChaosProbe implements OnModuleDestroy {
  readonly keys: ChaosKeys;
  readonly redis: Redis;

  constructor(@Inject(CHAOS_CONFIG) readonly config: ChaosConfig) {
    this.keys = new ChaosKeys(config.prefix);
    this.redis = config.redisUrl
      ? new Redis(config.redisUrl, { connectionName: 'chaos-probe' })
      : createTestRedis({ connectionName: 'chaos-probe' });
  }

  /** Count one execution of `step` in run `runId`. */
  async enter(runId: string, step: string): Promise<void> {
    await this.redis.multi().incr(this.keys.ran(runId, step)).rpush(this.keys.log(runId), step).exec();
  }

  /** Crash, block, wait at the gate or take long (until `signal` aborts), as configured for `step`. */
  async misbehave(runId: string, step: string, signal?: AbortSignal): Promise<void> {
    const { crashAtStep, blockAtStep, blockFile, gateAtStep, slowAtStep } = this.config;
    if (slowAtStep === step) {
      await this.redis.set(this.keys.inside(runId, step), '1');
      await this.slow(signal);
    }
    if (crashAtStep === step) {
      await this.redis.set(this.keys.inside(runId, step), '1');
      await hangForever();
    }
    if (blockAtStep === step && blockFile) {
      if ((await this.redis.set(this.keys.blocked(runId, step), '1', 'NX')) === 'OK') {
        await this.redis.set(this.keys.inside(runId, step), '1');
        blockEventLoopUntil(() => existsSync(blockFile));
      }
    }
    if (gateAtStep === step) {
      await this.redis.set(this.keys.inside(runId, step), '1');
      const deadline = Date.now() + STEP_WAIT_LIMIT_MS;
      while ((await this.redis.exists(this.keys.open(runId, step))) === 0) {
        if (Date.now() > deadline) throw new Error(`gate ${step} of run ${runId} was never opened`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }

  /**
   * Take `slowMs` (default 60 s), or less if `signal` aborts first: then throw its reason (a
   * `StepAbortedError`), as a step that honours its signal does.
   */
  async slow(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason as Error);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, this.config.slowMs ?? 60_000);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** Never settles; a process hanging here is waiting to be killed. */
function hangForever(): Promise<never> {
  return new Promise<never>(() => undefined);
}

/**
 * Block this thread (so the event loop: no timers, no I/O) until `done()` holds, checking every
 * 5 ms, for at most {@link STEP_WAIT_LIMIT_MS}.
 */
function blockEventLoopUntil(done: () => boolean): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + STEP_WAIT_LIMIT_MS;
  while (!done() && Date.now() < deadline) Atomics.wait(cell, 0, 0, 5);
}

/** One link of `chaos-chain`: appends its name to the value it receives. */
@Step('chaos-step')
export class ChaosStep implements StepHandler<{ value: string }, string> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ value }: { value: string }, ctx: StepContext): Promise<StepOutcome<string>> {
    await this.probe.enter(ctx.runId, ctx.stepName);
    await this.probe.misbehave(ctx.runId, ctx.stepName, ctx.signal);
    return success(`${value}>${ctx.stepName}`);
  }
}

/** Returns a string of `size` characters (to exceed `maxContextBytes`). */
@Step('chaos-big')
export class BigStep implements StepHandler<{ size: number }, string> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ size }: { size: number }, ctx: StepContext): Promise<StepOutcome<string>> {
    await this.probe.enter(ctx.runId, ctx.stepName);
    return success('x'.repeat(size));
  }
}

/** The step of a map element: counts its execution by element run id and returns `index * 7`. */
@Step('chaos-element-work')
export class ChaosElementStep implements StepHandler<{ index: number }, number> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ index }: { index: number }, ctx: StepContext): Promise<StepOutcome<number>> {
    const { redis, keys, config } = this.probe;
    await redis.incr(keys.element(ctx.runId));
    if (config.crashFromElement !== undefined && index >= config.crashFromElement) {
      const mapId = ctx.runId.slice(0, ctx.runId.lastIndexOf('#'));
      await redis.sadd(keys.elementsInside(mapId), String(index));
      await hangForever();
    }
    if (config.slowFromElement !== undefined && index >= config.slowFromElement) {
      const mapId = ctx.runId.slice(0, ctx.runId.lastIndexOf('#'));
      await redis.sadd(keys.elementsInside(mapId), String(index));
      await this.probe.slow(ctx.signal);
    }
    return success(index * 7);
  }
}

/** The five steps of `chaos-storm`. */
export const STORM_STEPS = ['s1', 's2', 's3', 's4', 's5'] as const;

/** Whether process `pid` is alive on this machine. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A link of `chaos-storm`: notes which process is inside its body (a second live process inside
 * the same body is a violation), takes a few milliseconds, fails once at `s2` (retried), fails for
 * good at `failAt` (the run rolls back), and logs its undo.
 */
@Step('chaos-storm-step')
export class StormStep implements StepHandler<{ value: string; failAt: string }, string> {
  constructor(private readonly probe: ChaosProbe) {}

  async run({ value, failAt }: { value: string; failAt: string }, ctx: StepContext): Promise<StepOutcome<string>> {
    const { redis, keys } = this.probe;
    const marker = keys.running(ctx.runId, ctx.stepName);
    const me = String(process.pid);
    const holder = await redis.set(marker, me, 'PX', 10_000, 'GET');
    if (holder && holder !== me && isAlive(Number(holder))) {
      await redis.rpush(keys.violations(), `${ctx.runId}:${ctx.stepName}: ${holder} and ${me}`);
    }
    await this.probe.enter(ctx.runId, ctx.stepName);
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(Math.random() * 25)));
    if ((await redis.get(marker)) === me) await redis.del(marker);
    if (ctx.stepName === 's2' && ctx.attempt === 1) return failure(new Error('flaky'));
    if (ctx.stepName === failAt) return failure(new Error('declined'), { retryable: false });
    return success(`${value}>${ctx.stepName}`);
  }

  async undo(_result: string, _args: { value: string; failAt: string }, ctx: StepContext): Promise<void> {
    await this.probe.redis.rpush(this.probe.keys.undone(ctx.runId), ctx.stepName);
  }
}

type Seed = { seed: string };

/** s1 -> ... -> s5, retried on transient failures, failing for good at `failAt`; all in a worker. */
@Reactor('chaos-storm', { background: { all: true } })
export class ChaosStormReactor implements ReactorBlueprint<Seed & { failAt: string }> {
  build(r: ReactorBuilder<Seed & { failAt: string }>) {
    const failAt = r.input('failAt', { type: 'string' });
    let previous: Ref<string> = r.input('seed', { type: 'string' });
    for (const name of STORM_STEPS) {
      previous = r.step(name, StormStep, { value: previous, failAt }, { retries: { maxAttempts: 3, baseDelayMs: 50 } });
    }
    return previous;
  }
}

/** s1 -> s2 -> ... -> s6, each reading the previous result; the whole run in a worker. */
@Reactor('chaos-chain', { background: { all: true } })
export class ChaosChainReactor implements ReactorBlueprint<Seed> {
  build(r: ReactorBuilder<Seed>) {
    let previous: Ref<string> = r.input('seed', { type: 'string' });
    for (const name of CHAIN_STEPS) previous = r.step(name, ChaosStep, { value: previous });
    return previous;
  }
}

type BigInput = Seed & { size: number };

/** s1, then `big` (a result of `size` characters), then s2 (which does not read it). */
@Reactor('chaos-big', { background: { all: true } })
export class ChaosBigReactor implements ReactorBlueprint<BigInput> {
  build(r: ReactorBuilder<BigInput>) {
    const seed = r.input('seed', { type: 'string' });
    const s1 = r.step('s1', ChaosStep, { value: seed });
    const big = r.step('big', BigStep, { size: r.input('size', { type: 'number' }) }, { waitFor: [s1] });
    return r.step('s2', ChaosStep, { value: seed }, { waitFor: [big] });
  }
}

/** s1, then `big` as the last step (its result goes straight into the final save). */
@Reactor('chaos-big-last', { background: { all: true } })
export class ChaosBigLastReactor implements ReactorBlueprint<BigInput> {
  build(r: ReactorBuilder<BigInput>) {
    const s1 = r.step('s1', ChaosStep, { value: r.input('seed', { type: 'string' }) });
    return r.step('big', BigStep, { size: r.input('size', { type: 'number' }) }, { waitFor: [s1] });
  }
}

type ElementInput = { index: number };

/** The element reactor of `chaos-map`. */
@Reactor('chaos-element')
export class ChaosElementReactor implements ReactorBlueprint<ElementInput> {
  build(r: ReactorBuilder<ElementInput>) {
    return r.step('work', ChaosElementStep, { index: r.input('index', { type: 'number' }) });
  }
}

/** Batch size of the fan-out map of `chaos-map`. */
export const CHAOS_MAP_BATCH = 10;

/** A fan-out map (`items`, batchSize {@link CHAOS_MAP_BATCH}) of `chaos-element`; the whole run in a worker. */
@Reactor('chaos-map', { background: { all: true } })
export class ChaosMapReactor implements ReactorBlueprint<{ items: ElementInput[] }> {
  build(r: ReactorBuilder<{ items: ElementInput[] }>) {
    return r.map('items', {
      source: r.input('items', { type: 'array' }),
      element: ChaosElementReactor,
      inputs: (item) => ({ index: item.path('index') }),
      fanOut: { batchSize: CHAOS_MAP_BATCH },
    });
  }
}

/** The inputs of a `chaos-map` run of `count` elements. */
export function mapItems(count: number): { items: ElementInput[] } {
  return { items: Array.from({ length: count }, (_, index) => ({ index })) };
}

/** Every step and reactor of the chaos fixtures, and the probe. */
export const CHAOS_PROVIDERS: Provider[] = [
  ChaosProbe,
  ChaosStep,
  BigStep,
  ChaosElementStep,
  ChaosChainReactor,
  ChaosBigReactor,
  ChaosBigLastReactor,
  ChaosElementReactor,
  ChaosMapReactor,
  StormStep,
  ChaosStormReactor,
];

/** The chaos steps and reactors with their config. */
@Module({})
export class ChaosFixturesModule {
  static forRoot(config: ChaosConfig): DynamicModule {
    return {
      module: ChaosFixturesModule,
      providers: [{ provide: CHAOS_CONFIG, useValue: config }, ...CHAOS_PROVIDERS],
      exports: [ChaosProbe],
    };
  }
}

/** A link that records its execution (like `chaos-step`) and its undo (in `undone`). */
@Step('chaos-undoable-step')
export class ChaosUndoableStep implements StepHandler<{ value: string }, string> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ value }: { value: string }, ctx: StepContext): Promise<StepOutcome<string>> {
    await this.probe.enter(ctx.runId, ctx.stepName);
    return success(`${value}>${ctx.stepName}`);
  }
  async undo(_result: string, _args: { value: string }, ctx: StepContext): Promise<void> {
    await this.probe.redis.rpush(this.probe.keys.undone(ctx.runId), ctx.stepName);
  }
}

type ApprovalInput = Seed & { orderId: string };

/** The steps of `chaos-approval` and `chaos-approval-timeout`: s1, interrupt `approve`, s2. */
function approvalChain(r: ReactorBuilder<ApprovalInput>, timeoutMs?: number): Ref<string> {
  const orderId = r.input('orderId', { type: 'string' });
  const s1 = r.step('s1', ChaosUndoableStep, { value: r.input('seed', { type: 'string' }) });
  const answer = r.interrupt<string, { orderId: string }>('approve', {
    args: { orderId },
    waitFor: [s1],
    correlationId: ({ args }) => `order-${args.orderId}`,
    payload: { type: 'string' },
    timeoutMs,
  });
  return r.step('s2', ChaosUndoableStep, { value: answer });
}

/** s1, then interrupt `approve` (correlation id `order-<orderId>`, a string payload), then s2 on it; all in a worker. */
@Reactor('chaos-approval', { background: { all: true } })
export class ChaosApprovalReactor implements ReactorBlueprint<ApprovalInput> {
  build(r: ReactorBuilder<ApprovalInput>) {
    return approvalChain(r);
  }
}

/** Timeout of the interrupt of `chaos-approval-timeout` (active: a delayed job enforces it). */
export const CHAOS_INTERRUPT_TIMEOUT_MS = 6_000;

/** `chaos-approval` whose interrupt times out after {@link CHAOS_INTERRUPT_TIMEOUT_MS} (the run fails, s1 undone). */
@Reactor('chaos-approval-timeout', { background: { all: true } })
export class ChaosApprovalTimeoutReactor implements ReactorBlueprint<ApprovalInput> {
  build(r: ReactorBuilder<ApprovalInput>) {
    return approvalChain(r, CHAOS_INTERRUPT_TIMEOUT_MS);
  }
}

/**
 * The interrupt fixtures: providers of a module that imports {@link ChaosFixturesModule} (their
 * step needs its `ChaosProbe`), in the worker app and in producer apps (`createChaosApp`'s
 * `providers`).
 */
export const CHAOS_INTERRUPT_PROVIDERS: Provider[] = [
  ChaosUndoableStep,
  ChaosApprovalReactor,
  ChaosApprovalTimeoutReactor,
];

/**
 * s1, then async unit `unit` (a `ChaosStep` in its own job, reading s1), then s2 reading the unit.
 * In the unit's run (`<runId>/unit`) the step is named `unit` too, so `CRASH_AT_STEP=unit` kills the
 * worker inside the unit's body.
 */
@Reactor('chaos-async', { background: { all: true } })
export class ChaosAsyncReactor implements ReactorBlueprint<Seed> {
  build(r: ReactorBuilder<Seed>) {
    const s1 = r.step('s1', ChaosStep, { value: r.input('seed', { type: 'string' }) });
    const unit = r.asyncStep('unit', ChaosStep, { value: s1 });
    return r.step('s2', ChaosStep, { value: unit });
  }
}

/** Async unit fixtures (registered in the worker app and given to producers). */
export const CHAOS_ASYNC_PROVIDERS: Provider[] = [ChaosAsyncReactor];

/** Injection token of the {@link CoordinationChaosConfig}. */
export const COORDINATION_CHAOS_CONFIG = 'COORDINATION_CHAOS_CONFIG';

/** Extra switches of the coordination chaos fixtures. */
export interface CoordinationChaosConfig {
  /**
   * With `crashAtStep` naming the ledger step: only the run of this sequence number misbehaves
   * (the others apply normally). Unset: every run's ledger step misbehaves as configured.
   */
  crashAtSeq?: number;
}

/** The coordination switches of a worker child process, from its environment (CRASH_AT_SEQ). */
export function coordinationChaosConfigFromEnv(env: NodeJS.ProcessEnv = process.env): CoordinationChaosConfig {
  const raw = env.CRASH_AT_SEQ;
  if (raw === undefined || raw === '') return {};
  const crashAtSeq = Number(raw);
  if (!Number.isInteger(crashAtSeq)) throw new Error(`worker-app: CRASH_AT_SEQ must be an integer, got '${raw}'`);
  return { crashAtSeq };
}

/** The Redis keys of the coordination chaos tests (under the test's prefix, in the `{chaos}` slot). */
export class CoordinationKeys {
  readonly base: string;
  constructor(readonly prefix: string) {
    this.base = `${prefix}{chaos}:`;
  }
  /** Steps of `chaos-sem` inside their body right now, across every process (INCR / DECR). */
  inFlight(): string {
    return `${this.base}coord:in-flight`;
  }
  /** The highest value `inFlight` ever reached. */
  maxInFlight(): string {
    return `${this.base}coord:max-in-flight`;
  }
  /** How many `chaos-sem` steps each process ran (HASH: pid -> count). */
  executedBy(): string {
    return `${this.base}coord:executed-by`;
  }
  /** The sequence numbers the runs of `chaos-ledger` applied, in the order they applied (RPUSH). */
  ledger(): string {
    return `${this.base}coord:ledger`;
  }
}

/** INCR the in-flight counter (KEYS[1]) and raise the max (KEYS[2]) to it, in one atomic step. */
const ENTER_IN_FLIGHT_LUA = `
local now = redis.call('INCR', KEYS[1])
local max = tonumber(redis.call('GET', KEYS[2]) or '0')
if now > max then redis.call('SET', KEYS[2], now) end
return now`;

/**
 * The body of `chaos-sem`: counts itself in flight (and the max ever in flight) across every
 * process, holds for `holdMs` (the work), then leaves.
 */
@Step('chaos-sem-work')
export class SemaphoreWorkStep implements StepHandler<{ holdMs: number }, number> {
  constructor(private readonly probe: ChaosProbe) {}
  async run({ holdMs }: { holdMs: number }, ctx: StepContext): Promise<StepOutcome<number>> {
    const { redis } = this.probe;
    const keys = new CoordinationKeys(this.probe.config.prefix);
    await this.probe.enter(ctx.runId, ctx.stepName);
    await redis.hincrby(keys.executedBy(), String(process.pid), 1);
    const inFlight = Number(await redis.eval(ENTER_IN_FLIGHT_LUA, 2, keys.inFlight(), keys.maxInFlight()));
    try {
      await new Promise((resolve) => setTimeout(resolve, holdMs));
    } finally {
      await redis.decr(keys.inFlight());
    }
    return success(inFlight);
  }
}

/**
 * The body of `chaos-ledger`: appends the run's sequence number to the ledger. Misbehaves (per
 * the {@link ChaosConfig}) before it appends, and only for run `crashAtSeq` when that is set.
 */
@Step('chaos-ledger-append')
export class LedgerAppendStep implements StepHandler<{ seq: number }, number> {
  constructor(
    private readonly probe: ChaosProbe,
    @Inject(COORDINATION_CHAOS_CONFIG) private readonly config: CoordinationChaosConfig,
  ) {}
  async run({ seq }: { seq: number }, ctx: StepContext): Promise<StepOutcome<number>> {
    await this.probe.enter(ctx.runId, ctx.stepName);
    if (this.config.crashAtSeq === undefined || this.config.crashAtSeq === seq) {
      await this.probe.misbehave(ctx.runId, ctx.stepName);
    }
    await this.probe.redis.rpush(new CoordinationKeys(this.probe.config.prefix).ledger(), String(seq));
    return success(seq);
  }
}

/** Semaphore key and limit of `chaos-sem`. */
export const CHAOS_SEMAPHORE = { key: 'chaos-sem', limit: 3 } as const;

/** One step (`work`, a {@link SemaphoreWorkStep}) under a semaphore of 3; the whole run in a worker. */
@Reactor('chaos-sem', {
  background: { all: true },
  semaphore: { key: () => CHAOS_SEMAPHORE.key, limit: CHAOS_SEMAPHORE.limit },
})
export class ChaosSemaphoreReactor implements ReactorBlueprint<{ holdMs: number }> {
  build(r: ReactorBuilder<{ holdMs: number }>) {
    return r.step('work', SemaphoreWorkStep, { holdMs: r.input('holdMs', { type: 'number' }) });
  }
}

/** Poison-pill timeout of `chaos-ledger`'s ordered lock. */
export const CHAOS_LEDGER_POISON_PILL_MS = 3_000;

/** One step (`append`, a {@link LedgerAppendStep}) under the ordered lock `chaos-ledger`; the whole run in a worker. */
@Reactor('chaos-ledger', {
  background: { all: true },
  orderedLock: { key: () => 'chaos-ledger', poisonPillMs: CHAOS_LEDGER_POISON_PILL_MS },
})
export class ChaosLedgerReactor implements ReactorBlueprint<{ seq: number }> {
  build(r: ReactorBuilder<{ seq: number }>) {
    return r.step('append', LedgerAppendStep, { seq: r.input('seq', { type: 'number' }) });
  }
}

/** TTL of `chaos-locked`'s lock. */
export const CHAOS_LOCK_TTL_MS = 1_500;

/**
 * One step (`guarded`, a `chaos-step`) under the exclusive lock `chaos-lock` (TTL
 * {@link CHAOS_LOCK_TTL_MS}). Not background: `run` executes it in the caller (which is refused
 * with `LOCK_CONTENDED` while another run holds the lock), `start` hands it to a worker.
 */
@Reactor('chaos-locked', { lock: { key: () => 'chaos-lock', ttlMs: CHAOS_LOCK_TTL_MS } })
export class ChaosLockedReactor implements ReactorBlueprint<Seed> {
  build(r: ReactorBuilder<Seed>) {
    return r.step('guarded', ChaosStep, { value: r.input('seed', { type: 'string' }) });
  }
}

/**
 * The coordination fixtures (semaphore, ordered lock, lock), with their config read from the
 * environment: providers of a module that imports {@link ChaosFixturesModule} (the worker app, and
 * producer apps through `createChaosApp`'s `providers`).
 */
export const CHAOS_COORDINATION_PROVIDERS: Provider[] = [
  { provide: COORDINATION_CHAOS_CONFIG, useFactory: () => coordinationChaosConfigFromEnv() },
  SemaphoreWorkStep,
  LedgerAppendStep,
  ChaosSemaphoreReactor,
  ChaosLedgerReactor,
  ChaosLockedReactor,
];
