import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  ConfigurationError,
  defineReactor,
  didYouMean,
  getReactorMetadata,
  getStepMetadata,
  ReactorEngine,
  type InputOptions,
  type ReactorBuilder,
  type ReactorDefinition,
  type ReactorEvent,
  type ReactorEventType,
  type ReactorInputOf,
  type ReactorOutputOf,
  type Ref,
  type StepHandler,
} from '../core';
import { messages, REACTOR_DISPATCHER } from '../config';
import { ReactorClient } from '../nest/reactor.client';
import { ReactorListeners } from '../nest/reactor-listeners';
import { ReactorRegistry } from '../nest/reactor.registry';
import type { InProcessJobDispatcher } from '../runtime/in-process-job.dispatcher';
import { RecordingMiddleware } from './recording.middleware';
import { TestClock } from './test-clock';

/** What {@link ReactorTestingKit.mockStep} takes: any of the step's `run`, `undo` and `compensate`, typed as the step's. */
export type StepFake<S> = S extends StepHandler<infer A, infer R> ? Partial<StepHandler<A, R>> : Partial<StepHandler>;

/** A step replaced by {@link ReactorTestingKit.mockStep}; `restore()` puts the real methods back. */
export interface StepMock {
  restore(): void;
}

/**
 * What {@link ReactorTestingKit.mockReactor} takes: the body that stands for a whole reactor (its
 * `run` gets the reactor's validated inputs and returns its outcome), and what undoes it.
 */
export type ReactorFake<I = Record<string, unknown>, O = unknown> = Pick<StepHandler<I, O>, 'run'> &
  Partial<Pick<StepHandler<I, O>, 'undo' | 'compensate'>>;

const MOCKABLE = ['run', 'undo', 'compensate'] as const;

/** The name of the one step of a mocked reactor (in its trace and events). */
export const MOCKED_REACTOR_STEP = 'mocked';

/**
 * What a test of reactors needs, injected from {@link ReactorTestingModule}: the client, the
 * clock, the lifecycle events of every run, and a way to replace one step.
 *
 * ```ts
 * const kit = moduleRef.get(ReactorTestingKit);
 * const outcome = await kit.client.run(CheckoutReactor, { order });
 * expect(outcome).toHaveRetried('charge', 2);
 * await kit.advance(24 * 60 * 60 * 1000);     // a day passes: due timers (timeouts, retries) run
 * ```
 */
@Injectable()
export class ReactorTestingKit {
  private readonly mocks: StepMock[] = [];

  constructor(
    /** The module's client (the same `ReactorClient` the application injects). */
    readonly client: ReactorClient,
    /** The module's clock: retries and polls never wait; delayed jobs wait for {@link advance}. */
    readonly clock: TestClock,
    /** Every lifecycle event of every run, in order. */
    readonly recorder: RecordingMiddleware,
    @Inject(REACTOR_DISPATCHER) private readonly dispatcher: InProcessJobDispatcher,
    private readonly moduleRef: ModuleRef,
    private readonly listeners: ReactorListeners,
  ) {}

  /** Every lifecycle event recorded so far, of all runs (`reactor.start`, `step.retry`, `undo.complete`, ...). */
  get events(): readonly ReactorEvent[] {
    return this.recorder.events;
  }

  /** The events of one run, optionally only of the given types. */
  eventsOf(runId: string, types?: readonly ReactorEventType[]): ReactorEvent[] {
    return this.recorder.events.filter((e) => e.runId === runId && (!types || types.includes(e.type)));
  }

  /**
   * One run's events as compact strings (`step.start:charge`, `undo.complete:reserve`, ...),
   * optionally only of the given types.
   */
  sequenceOf(runId: string, types?: readonly ReactorEventType[]): string[] {
    return this.eventsOf(runId, types).map((e) => ('step' in e ? `${e.type}:${e.step}` : e.type));
  }

  /**
   * Resolves when no job can run: background work started with `client.start`, hand-offs, map
   * elements and resumes have finished, and only jobs waiting on the clock's timers are left; and
   * every `@OnReactorEvent` listener call has settled (see {@link flushListeners}), with what those
   * started. Never resolves while a listener hangs.
   */
  async idle(): Promise<void> {
    for (;;) {
      // Let timers that just fired hand their job to the dispatcher before asking it.
      await new Promise((resolve) => setImmediate(resolve));
      await this.dispatcher.idle();
      if (this.listeners.inFlight === 0) return;
      // A listener may start work of its own (a run, a resume): look at the jobs again after it.
      await this.listeners.settled();
    }
  }

  /**
   * Resolves when every `@OnReactorEvent` listener call started so far has settled. Listeners are
   * fire-and-forget (a run does not wait for the promise a listener returns), so a test that
   * asserts what an async listener did waits for it here first:
   *
   * ```ts
   * await kit.client.run(CheckoutReactor, { order });
   * await kit.flushListeners();
   * expect(auditLog.entries).toHaveLength(1);
   * ```
   *
   * A synchronous listener has run by the time `client.run` resolves. Never resolves while a
   * listener hangs.
   */
  async flushListeners(): Promise<void> {
    await this.listeners.settled();
  }

  /**
   * Let `ms` milliseconds pass: time moves to each due timer in turn, its job runs (and whatever
   * it starts, up to idle), then on to the next, then to the end of `ms`. An interrupt's timeout,
   * a background retry or a snooze due within `ms` has then happened.
   */
  async advance(ms: number): Promise<void> {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      throw new ConfigurationError(messages.testingAdvanceInvalid(ms));
    await this.idle();
    const target = this.clock.now() + ms;
    for (let next = this.clock.nextTimerAt(); next !== undefined && next <= target; next = this.clock.nextTimerAt()) {
      this.clock.advance(Math.max(0, next - this.clock.now()));
      await this.idle();
    }
    this.clock.advance(Math.max(0, target - this.clock.now()));
    await this.idle();
  }

  /**
   * Run every pending timer, earliest first, moving time to each, until none is left; what they
   * start runs too. Throws after `limit` timers (a run that keeps snoozing would never end).
   */
  async runAllTimers(options: { limit?: number } = {}): Promise<void> {
    const limit = options.limit ?? 1_000;
    await this.idle();
    for (let fired = 0, next = this.clock.nextTimerAt(); next !== undefined; next = this.clock.nextTimerAt()) {
      if (fired++ >= limit) throw new ConfigurationError(messages.testingTimersRunaway(limit));
      this.clock.advance(Math.max(0, next - this.clock.now()));
      await this.idle();
    }
  }

  /**
   * Replace a step's `run` (and/or `undo`, `compensate`) for this test, on the very instance the
   * reactors use; the rest of the step (its name, retry policy, contracts) stays. Undo it with the
   * returned `restore()`, or every mock at once with {@link restoreSteps} (in `afterEach`).
   *
   * ```ts
   * kit.mockStep(ChargePayment, { run: async () => failure('card declined', { retryable: false }) });
   * kit.mockStep('charge-payment', { run: ... });   // or by its @Step name
   * ```
   *
   * To replace a step for a whole testing module, override its provider instead:
   * `Test.createTestingModule(...).overrideProvider(ChargePayment).useValue({ run: ... })`.
   */
  mockStep<S extends object>(stepClass: abstract new (...args: never[]) => S, fake: StepFake<S>): StepMock;
  /** Replace the step whose `@Step` name is `stepName` (a typo is refused, naming the closest names). */
  mockStep(stepName: string, fake: StepFake<StepHandler>): StepMock;
  mockStep<S extends object>(
    step: (abstract new (...args: never[]) => S) | string,
    fake: StepFake<S> | StepFake<StepHandler>,
  ): StepMock {
    const stepClass = typeof step === 'string' ? this.stepClassNamed(step) : step;
    if (typeof stepClass !== 'function' || !getStepMetadata(stepClass))
      throw new ConfigurationError(messages.testingStepNotMockable(stepClass as { name: string }));
    let instance: Record<string, unknown>;
    try {
      instance = this.moduleRef.get(stepClass as never, { strict: false });
    } catch {
      throw new ConfigurationError(messages.testingStepNotProvided(stepClass));
    }
    const saved = MOCKABLE.filter((key) => key in (fake as object)).map((key) => {
      const own = Object.getOwnPropertyDescriptor(instance, key);
      Object.defineProperty(instance, key, {
        value: (fake as Record<string, unknown>)[key],
        configurable: true,
        writable: true,
      });
      return { key, own };
    });
    return this.track(() => {
      for (const { key, own } of saved.reverse()) {
        if (own) Object.defineProperty(instance, key, own);
        else delete instance[key];
      }
    });
  }

  /**
   * Replace a whole reactor for this test: a parent that composes it (`r.compose('payment',
   * PaymentReactor, ...)`), or a run of it by name, runs `fake` instead of its steps. The reactor's
   * inputs are still validated; `fake.run` receives them and returns the child's outcome (`success`
   * gives the compose step its value, `failure` fails it and the parent rolls back, `halt` halts);
   * `fake.undo` is what undoing the compose step does. The child's trace shows one step,
   * `mocked`. Undo it with the returned `restore()`, or with {@link restoreSteps} (every mock).
   *
   * ```ts
   * kit.mockReactor(PaymentReactor, { run: async () => failure('card declined', { retryable: false }) });
   * kit.mockReactor('payment', { run: async ({ amount }) => success({ chargeId: 'ch_fake', amount }) });
   * ```
   */
  mockReactor<C extends abstract new (...args: never[]) => object>(
    reactorClass: C,
    fake: ReactorFake<ReactorInputOf<C>, ReactorOutputOf<C>>,
  ): StepMock;
  /** Replace the reactor registered as `reactorName` (a typo is refused, naming the closest names). */
  mockReactor(reactorName: string, fake: ReactorFake): StepMock;
  mockReactor(reactor: (abstract new (...args: never[]) => object) | string, fake: ReactorFake<never>): StepMock {
    const engine = this.moduleRef.get(ReactorEngine, { strict: false });
    const name = typeof reactor === 'string' ? reactor : getReactorMetadata(reactor)?.name;
    if (name === undefined)
      throw new ConfigurationError(messages.testingReactorNotMockable(reactor as { name: string }));
    const known = engine.reactorNames();
    if (!known.includes(name))
      throw new ConfigurationError(messages.testingReactorNameUnknown(name, didYouMean(name, known), known));
    if (typeof fake?.run !== 'function') throw new ConfigurationError(messages.testingReactorFakeWithoutRun(name));
    return this.track(engine.overrideDefinition(mockedDefinition(engine.definition(name), fake as ReactorFake)));
  }

  /** A mock whose `restore()` runs `undo` once, put back by {@link restoreSteps} too. */
  private track(undo: () => void): StepMock {
    let restored = false;
    const mock: StepMock = {
      restore: () => {
        if (restored) return;
        restored = true;
        undo();
      },
    };
    this.mocks.push(mock);
    return mock;
  }

  private stepClassNamed(name: string): abstract new (...args: never[]) => object {
    const registry = this.moduleRef.get(ReactorRegistry, { strict: false });
    const stepClass = registry.stepClassNamed(name);
    if (stepClass) return stepClass as abstract new (...args: never[]) => object;
    const known = registry.stepNames();
    throw new ConfigurationError(messages.testingStepNameUnknown(name, didYouMean(name, known), known));
  }

  /** Put back every step replaced with {@link mockStep} and every reactor replaced with {@link mockReactor}, newest first. */
  restoreSteps(): void {
    for (const mock of this.mocks.splice(0).reverse()) mock.restore();
  }

  /** Forget the recorded events (the clock and the runs stay). */
  clearEvents(): void {
    this.recorder.clear();
  }
}

/**
 * A reactor of the same name, version and inputs as `original` whose one step runs `fake` on the
 * validated inputs and returns its value.
 */
function mockedDefinition(original: ReactorDefinition, fake: ReactorFake): ReactorDefinition {
  const handler: StepHandler = {
    run: (args, ctx) => fake.run(args, ctx),
    ...(fake.undo
      ? { undo: (result: unknown, args: Record<string, unknown>, ctx) => fake.undo!(result, args, ctx) }
      : {}),
    ...(fake.compensate
      ? { compensate: (error: unknown, args: Record<string, unknown>, ctx) => fake.compensate!(error, args, ctx) }
      : {}),
  };
  return defineReactor(
    original.name,
    (r: ReactorBuilder<Record<string, unknown>>) => {
      const args: Record<string, Ref<unknown>> = {};
      for (const input of original.inputs) {
        const spec: InputOptions = {
          type: input.type,
          ...(input.dto ? { dto: input.dto } : {}),
          optional: input.optional,
          redact: input.redact,
          ...(input.hasDefault ? { default: input.default } : {}),
          ...(input.constraints ?? {}),
        };
        args[input.name] = r.input(input.name, spec);
      }
      return r.step(MOCKED_REACTOR_STEP, handler, args as never);
    },
    { version: original.version },
  );
}
