import { Injectable, type DynamicModule, type ForwardReference, type Provider, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { failure, success } from '../../lib/core/results/step-outcome';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Step } from '../../lib/nest/step.decorator';
import { CapturingLogger } from '../nest/fixtures';
import type Redis from 'ioredis';
import { cleanupPrefix, createTestRedis, reactorRedisOption, uniquePrefix } from '../setup/redis';

/** Records what steps did, per run, in this app (each Nest app has its own instance). */
@Injectable()
export class StepLog {
  private readonly calls = new Map<string, string[]>();
  add(runId: string, call: string): void {
    const list = this.calls.get(runId) ?? [];
    list.push(call);
    this.calls.set(runId, list);
  }
  of(runId: string): string[] {
    return this.calls.get(runId) ?? [];
  }
}

/** Holds steps of `e2e-gate` until the test opens the gate. */
@Injectable()
export class Gate {
  private opened = false;
  private waiters: Array<() => void> = [];
  private enteredCount = 0;
  private enteredWaiters: Array<() => void> = [];
  /** Resolves once a step is waiting at the gate. */
  entered(): Promise<void> {
    if (this.enteredCount > 0) return Promise.resolve();
    return new Promise((resolve) => this.enteredWaiters.push(resolve));
  }
  pass(): Promise<void> {
    this.enteredCount++;
    for (const w of this.enteredWaiters.splice(0)) w();
    if (this.opened) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  open(): void {
    this.opened = true;
    for (const w of this.waiters.splice(0)) w();
  }
}

/** Upper-cases the letter of `word` at `at`; undo is logged. */
@Step('e2e-letter')
export class LetterStep {
  constructor(private readonly log: StepLog) {}
  run({ word, at }: { word: string; at: number }, ctx: StepContext) {
    this.log.add(ctx.runId, `run:${ctx.stepName}`);
    return success(word.charAt(at).toUpperCase());
  }
  undo(_result: string, _args: unknown, ctx: StepContext) {
    this.log.add(ctx.runId, `undo:${ctx.stepName}`);
  }
}

/** Always fails (not retried); compensate is logged. */
@Step('e2e-decline')
export class DeclineStep {
  constructor(private readonly log: StepLog) {}
  run(_args: unknown, ctx: StepContext) {
    this.log.add(ctx.runId, `run:${ctx.stepName}`);
    return failure(new Error('card declined'), { retryable: false });
  }
  compensate(_error: unknown, _args: unknown, ctx: StepContext) {
    this.log.add(ctx.runId, `compensate:${ctx.stepName}`);
  }
}

/** Fails its first two attempts, then succeeds. */
@Step('e2e-flaky')
export class FlakyStep {
  constructor(private readonly log: StepLog) {}
  run(_args: unknown, ctx: StepContext) {
    this.log.add(ctx.runId, `run:${ctx.stepName}:${ctx.attempt}`);
    return ctx.attempt < 3 ? failure(new Error(`flake ${ctx.attempt}`)) : success('steady');
  }
}

/** Waits at the {@link Gate}. */
@Step('e2e-gate')
export class GateStep {
  constructor(
    private readonly log: StepLog,
    private readonly gate: Gate,
  ) {}
  async run(_args: unknown, ctx: StepContext) {
    this.log.add(ctx.runId, `run:${ctx.stepName}`);
    await this.gate.pass();
    return success('passed');
  }
}

type Word = { word: string };

function threeLetters(r: ReactorBuilder<Word>) {
  const word = r.input('word', { type: 'string' });
  const a = r.step('a', LetterStep, { word, at: r.value(0) });
  const b = r.step('b', LetterStep, { word, at: r.value(1) }, { waitFor: [a] });
  return r.step('c', LetterStep, { word, at: r.value(2) }, { waitFor: [b] });
}

@Reactor('e2e-bg-all', { background: { all: true } })
export class BackgroundAllReactor implements ReactorBlueprint<Word> {
  build(r: ReactorBuilder<Word>) {
    return threeLetters(r);
  }
}

@Reactor('e2e-bg-after', { background: { after: 'b' } })
export class BackgroundAfterReactor implements ReactorBlueprint<Word> {
  build(r: ReactorBuilder<Word>) {
    return threeLetters(r);
  }
}

@Reactor('e2e-bg-before', { background: { before: 'b' } })
export class BackgroundBeforeReactor implements ReactorBlueprint<Word> {
  build(r: ReactorBuilder<Word>) {
    return threeLetters(r);
  }
}

/** In the caller nothing runs; the flaky step retries in the worker (50 ms, then 100 ms). */
@Reactor('e2e-bg-retry', { background: { all: true } })
export class BackgroundRetryReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('flaky', FlakyStep, {}, { retries: { maxAttempts: 3, backoff: 'exponential', baseDelayMs: 50 } });
  }
}

/** a, b, then a declined charge: the worker compensates it and undoes b, then a. */
@Reactor('e2e-bg-rollback', { background: { all: true } })
export class BackgroundRollbackReactor implements ReactorBlueprint<Word> {
  build(r: ReactorBuilder<Word>) {
    const word = r.input('word', { type: 'string' });
    const a = r.step('a', LetterStep, { word, at: r.value(0) });
    const b = r.step('b', LetterStep, { word, at: r.value(1) }, { waitFor: [a] });
    return r.step('charge', DeclineStep, {}, { waitFor: [b] });
  }
}

/** One step that waits at the gate. */
@Reactor('e2e-gated')
export class GatedReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('gate', GateStep, {});
  }
}

/** Every provider of the e2e reactors. */
export const E2E_PROVIDERS: Provider[] = [
  StepLog,
  Gate,
  LetterStep,
  DeclineStep,
  FlakyStep,
  GateStep,
  BackgroundAllReactor,
  BackgroundAfterReactor,
  BackgroundBeforeReactor,
  BackgroundRetryReactor,
  BackgroundRollbackReactor,
  GatedReactor,
];

/**
 * A Nest app with the module on the test Redis under `prefix`, initialized. In the cluster run the
 * module gets `{ connection: <a Cluster> }`, which `app.close()` closes after the app.
 */
export async function createRedisApp(
  prefix: string,
  options: Omit<ReactorModuleOptions, 'prefix'> = {},
  extra: {
    imports?: Array<Type | DynamicModule | Promise<DynamicModule> | ForwardReference>;
    providers?: Provider[];
    module?: DynamicModule;
  } = {},
): Promise<{ app: TestingModule; client: ReactorClient; log: StepLog; logger: CapturingLogger }> {
  const logger = new CapturingLogger();
  // In the cluster run a Cluster connection of the app's: closed after the app (see below).
  const connection = extra.module ? undefined : reactorRedisOption();
  try {
    const app = await Test.createTestingModule({
      imports: [
        ...(extra.imports ?? []),
        extra.module ?? ReactorModule.forRoot({ redis: connection!.redis, prefix, ...options }),
      ],
      providers: [...E2E_PROVIDERS, ...(extra.providers ?? [])],
    })
      .setLogger(logger)
      .compile();
    if (connection) {
      const close = app.close.bind(app);
      app.close = async () => {
        try {
          await close();
        } finally {
          await connection.close();
        }
      };
    }
    await app.init();
    return { app, client: app.get(ReactorClient), log: app.get(StepLog), logger };
  } catch (error) {
    await connection?.close();
    throw error;
  }
}

/**
 * A Nest app with the module on the embedded runtime (no Redis): `providers` only, `options` passed
 * to `forRoot`, the log captured; initialized.
 */
export async function createEmbeddedApp(providers: Provider[], options?: ReactorModuleOptions): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot(options)], providers })
    .setLogger(new CapturingLogger())
    .compile();
  await app.init();
  return app;
}

/** Resolve once `condition()` holds, checking every 10 ms; throw after `timeoutMs`. */
export async function pollUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `QUIT`, then wait until the socket is gone (so the test file leaves nothing open behind it). */
export async function quitAndWait(redis: {
  status: string;
  quit(): Promise<unknown>;
  once(event: 'end', cb: () => void): unknown;
}): Promise<void> {
  if (redis.status === 'end') return;
  const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
  await redis.quit();
  await ended;
}

/**
 * For a test file: one Redis client for the file (opened before, quit after) and a `prefix(name)`
 * that hands out unique key prefixes and cleans every one of them up after the file.
 */
export function useRedisPrefixes(): { redis: () => Redis; prefix: (name: string) => string } {
  let redis: Redis;
  const prefixes: string[] = [];
  beforeAll(() => {
    redis = createTestRedis();
  });
  afterAll(async () => {
    for (const p of prefixes) await cleanupPrefix(redis, p);
    await quitAndWait(redis);
  });
  return {
    redis: () => redis,
    prefix: (name) => {
      const p = uniquePrefix(name);
      prefixes.push(p);
      return p;
    },
  };
}
