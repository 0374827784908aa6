import { DefinitionError } from '../errors/definition.error';
import type { RetryOptions } from './retry-policy';
import type { InputContract, OutputContract } from './contract-spec';
import { finishDefinition, type PendingStep } from './finish-definition';
import { toInterruptSpec, type InterruptOptions } from './interrupt-spec';
import { toSleepSpec, type SleepOptions, type SleepResult } from './sleep-spec';
import type { StepCoordinationOptions } from './coordination-spec';
import type { HandlerSpec, MapSpec, ReactorDefinition, ReactorOptions } from './definition';
import type { MapResults } from '../results/map-results';
import { toInputDefinition, type InputDefinition, type InputSpec } from './input-spec';
import { Ref, type ArgRefs, type ArgSource } from './ref';
import { getReactorMetadata } from './reactor-metadata';
import { getStepMetadata, type InlineStep, type StepClass, type StepContext, type StepHandler } from './step';

/**
 * A reactor declared as a class: `build` wires inputs and steps on the builder and returns the
 * ref whose value is the run's result (or nothing, for the map of all results).
 *
 * ```ts
 * @Reactor('checkout')
 * class CheckoutReactor implements ReactorBlueprint<CheckoutInput> {
 *   build(r: ReactorBuilder<CheckoutInput>) {
 *     const order = r.input('order', OrderDto);
 *     return r.step('charge', ChargeCard, { amount: order.path('total') });
 *   }
 * }
 * ```
 */
export interface ReactorBlueprint<I = Record<string, unknown>, O = unknown> {
  build(r: ReactorBuilder<I>): Ref<O> | void;
}

/** A class implementing {@link ReactorBlueprint}. */
export type ReactorClass<I = unknown, O = unknown> = new (...deps: never[]) => ReactorBlueprint<I, O>;

/** Options of one use of a step in a reactor. They override the step class's own options. */
export interface StepUseOptions {
  /** Ordering-only dependencies: refs to steps, or step names. */
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
  retries?: RetryOptions;
  /** Input contract (overrides the step class's): a DTO class or a record of short forms. */
  input?: InputContract;
  /** Output contract (overrides the step class's): a DTO class, a record of short forms, or one short form. */
  output?: OutputContract;
  /** Argument names to redact in traces and failures. */
  redact?: string[];
  /** A lock around the step's body (overrides the step class's); see `StepOptions.lock`. */
  lock?: StepCoordinationOptions['lock'];
  /** A semaphore around the step's body (overrides the step class's); see `StepOptions.semaphore`. */
  semaphore?: StepCoordinationOptions['semaphore'];
}

/** Options of a compose step. */
export interface ComposeOptions {
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
}

/** The element reactor of a map: a definition, a `@Reactor` class, a name, or an inline builder. */
export type MapElement<EI, EO> =
  ReactorDefinition<EI, EO> | ReactorClass<EI, EO> | string | ((r: ReactorBuilder<EI>) => Ref<EO> | void);

/** Where a map's elements come from. */
export type MapSource<E, A> =
  | Ref<readonly E[]>
  | Ref<E[]>
  | Ref<Iterable<E>>
  | Ref<AsyncIterable<E>>
  | ((args: A, ctx: StepContext) => Iterable<E> | AsyncIterable<E> | Promise<Iterable<E> | AsyncIterable<E>>);

/**
 * Options of {@link ReactorBuilder.map}. `E` is the element type, `EI`/`EO` the element reactor's
 * input and result, `R` the map's value (the results, or what `collect` returns).
 */
export interface MapOptions<E, EI, EO, R, A = Record<string, never>> {
  /** The collection: a ref (input or step result) or a function of `args` (arrays, iterables, async iterables). */
  source: MapSource<E, A>;
  /** Arguments of a source function (refs, like a step's). */
  args?: ArgRefs<A>;
  /** The reactor run once per element. */
  element: MapElement<EI, EO>;
  /** Wire the element reactor's inputs: `(item) => ({ sku: item.path('sku'), discount })`. */
  inputs: (element: Ref<E>) => ArgRefs<EI>;
  /** Inline: how many elements run at once. @default 1 (index order, as ruby_reactor) */
  concurrency?: number;
  /** The first failed element fails the map (true), or every element runs (false). @default true */
  atomic?: boolean;
  /**
   * Elements run as BullMQ jobs, at most `batchSize` elements in flight; the map becomes a
   * hand-off point. Each job claims, runs (concurrently) and settles `elementsPerJob` consecutive
   * elements in one round trip each way; an element that retries goes on in a job of its own.
   * `batchSize` @default 50; `elementsPerJob` @default a tenth of `batchSize`, from 1 to 25.
   */
  fanOut?: { batchSize?: number; elementsPerJob?: number };
  /** Turn the results into the map's value; a throw is the map's failure. */
  collect?: (results: MapResults<EO>) => R | Promise<R>;
  /** Undo every completed element at once (instead of each element's own undos). */
  undoAll?: (completed: AsyncIterable<{ index: number; value: EO }>) => unknown;
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
}

/** A step handler given to {@link ReactorBuilder.step}: a step class, a handler object, or a function. */
export type StepImplementation<A, R> = StepClass<A, R> | StepHandler<A, R> | InlineStep<A, R>;

/** A child reactor given to {@link ReactorBuilder.compose}: a definition, a `@Reactor` class, or a name. */
export type ComposeTarget<CI, CO> = ReactorDefinition<CI, CO> | ReactorClass<CI, CO> | string;

/**
 * Wires a reactor: inputs, steps, composed children and the returned ref. Refs carry types, so a
 * step whose arguments are wired to refs of the wrong type does not compile.
 *
 * ```ts
 * const checkout = defineReactor('checkout', (r: ReactorBuilder<{ order: OrderDto }>) => {
 *   const order = r.input('order', OrderDto);
 *   const reservation = r.step('reserve', ReserveInventory, { items: order.path('items') });
 *   return r.step('charge', ChargeCard, { amount: order.path('total') }, { waitFor: [reservation] });
 * });
 * ```
 */
export class ReactorBuilder<I> {
  private readonly inputDefs = new Map<string, InputDefinition>();
  private readonly pending: PendingStep[] = [];

  /** @internal use {@link defineReactor} or `@Reactor`. */
  constructor(readonly reactorName: string) {}

  /** Declare a reactor input and get a ref to its (validated) value. */
  input<K extends keyof I & string>(name: K, spec?: InputSpec<I[K]>): Ref<I[K]> {
    if (this.inputDefs.has(name)) this.fail(`input '${name}' is declared twice; declare each input once`);
    const def = toInputDefinition(name, spec as InputSpec | undefined);
    if (typeof def === 'string') this.fail(def);
    this.inputDefs.set(name, def);
    return new Ref({ kind: 'input', name, ops: [] });
  }

  /** A constant argument. */
  value<T>(value: T): Ref<T> {
    return new Ref({ kind: 'value', value, ops: [] });
  }

  /**
   * A ref to the result of step `name`, declared before or after this call (a forward reference):
   * `r.result<Charge>('charge')`. Reading it makes the step depend on `name`, as the ref `r.step`
   * returns does; the type is the caller's word (`T`), not checked. An unknown name (or a cycle)
   * fails the definition naming the closest steps.
   */
  result<T = unknown>(name: string): Ref<T> {
    if (typeof name !== 'string' || name.length === 0) {
      this.fail(
        `r.result() needs the name of a step (a non-empty string), got ${typeof name === 'string' ? "''" : typeof name}`,
      );
    }
    return new Ref({ kind: 'result', step: name, ops: [] });
  }

  /**
   * Add a step. `handler` is a step class (resolved through DI in Nest), a handler object with
   * `run`/`compensate`/`undo`, or an inline `run` function. `args` maps each of the handler's
   * arguments to a ref of the same type. Returns a ref to the step's result.
   */
  step<A, R>(name: string, handler: StepImplementation<A, R>, args: ArgRefs<A>, options: StepUseOptions = {}): Ref<R> {
    this.checkNewStepName(name);
    const spec = this.handlerSpec(name, handler as StepImplementation<unknown, unknown>);
    const classMeta = spec.kind === 'class' ? getStepMetadata(spec.stepClass) : undefined;
    return this.addStep(
      name,
      spec,
      this.toSources(name, args as Record<string, Ref<unknown> | undefined>),
      options.waitFor,
      {
        retries: options.retries ?? classMeta?.retries,
        input: options.input ?? classMeta?.input,
        output: options.output ?? classMeta?.output,
        redact: [...(classMeta?.redact ?? []), ...(options.redact ?? [])],
        coordination: {
          lock: options.lock ?? classMeta?.lock,
          semaphore: options.semaphore ?? classMeta?.semaphore,
        },
      },
    );
  }

  /**
   * Run a step in its own job while the run goes on: the unit retries (and, after its last attempt,
   * compensates) by itself, is never undone with the run, and its failure fails nothing unless a
   * reader decides so. A step reading its value waits for it and gets the value, or the unit's
   * `Failure` (check `instanceof Failure`). `undo` is refused: a unit is never undone.
   */
  asyncStep<A, R>(
    name: string,
    handler: StepImplementation<A, R>,
    args: ArgRefs<A>,
    options: StepUseOptions = {},
  ): Ref<R> {
    this.checkNewStepName(name);
    const spec = this.handlerSpec(name, handler as StepImplementation<unknown, unknown>);
    if (spec.kind === 'inline' && typeof spec.handler.undo === 'function') {
      this.fail(`async step '${name}': undo is not allowed (an async unit is never undone; use compensate)`, name);
    }
    const sources = this.toSources(name, args as Record<string, Ref<unknown> | undefined>);
    const unitName = `${this.reactorName}::${name}`;
    const unit = defineReactor(unitName, (r: ReactorBuilder<Record<string, unknown>>) => {
      const refs: Record<string, Ref<unknown>> = {};
      for (const key of Object.keys(sources)) refs[key] = r.input(key, { type: 'any', optional: true });
      return r.step(name, handler as StepImplementation<unknown, unknown>, refs as ArgRefs<unknown>, {
        ...options,
        waitFor: undefined,
      });
    });
    return this.addStep(
      name,
      { kind: 'async', name: `async-step:${spec.name}`, reactorName: unitName, inlineUnit: unit },
      sources,
      options.waitFor,
      { redact: [...(options.redact ?? [])] },
    );
  }

  /**
   * Start a child reactor run in its own job while this run goes on (an independent run, not
   * embedded in this one). A step reading its value waits for the child to finish and gets its
   * value, or its `Failure`. Never undone with this run.
   */
  asyncReactor<CI, CO>(
    name: string,
    child: ComposeTarget<CI, CO>,
    args: ArgRefs<CI>,
    options: ComposeOptions = {},
  ): Ref<CO> {
    this.checkNewStepName(name);
    this.checkComposeOptions(name, options);
    const reactorName = this.childReactorName(`async reactor '${name}'`, name, child);
    return this.addStep(
      name,
      { kind: 'async', name: `async-reactor:${reactorName}`, reactorName },
      this.toSources(name, args as Record<string, Ref<unknown> | undefined>),
      options.waitFor,
    );
  }

  /**
   * Pause the run here until the outside world answers: `client.continue(runId, name, payload)` or
   * `client.continueByCorrelationId(...)`. The run is `paused` (durable, no worker held) once
   * nothing else can run; its value is the validated payload, wired to dependants like a step's
   * result. Nothing to undo or compensate.
   */
  interrupt<P = unknown, A = Record<string, never>>(name: string, options: InterruptOptions<P, A> = {}): Ref<P> {
    this.checkNewStepName(name);
    const spec = toInterruptSpec(options as InterruptOptions<unknown, unknown>);
    if (typeof spec === 'string') this.fail(`interrupt '${name}': ${spec}`, name);
    return this.addStep(
      name,
      { kind: 'interrupt', name: 'interrupt', interrupt: spec },
      this.toSources(name, (options.args ?? {}) as Record<string, Ref<unknown> | undefined>),
      options.waitFor,
    );
  }

  /**
   * Sleep durably: the run parks here with no worker held and its lease released, and a delayed
   * job wakes it (the sweeper, if that job is lost). `{ ms }` sleeps that long from when the run
   * reaches the step; `{ until }` until the time a ref holds (an ISO 8601 string or epoch ms; a
   * time already past wakes at once). The value is `{ sleptUntil }` (epoch ms). Nothing to undo
   * or compensate; cancel and undo work while the run sleeps. Not in a map's element reactor.
   *
   * ```ts
   * r.sleep('cool-off', { ms: 3 * 24 * 3600_000, waitFor: [order] });
   * r.sleep('until-launch', { until: r.input('launchAt') });
   * ```
   */
  sleep(name: string, options: SleepOptions): Ref<SleepResult> {
    this.checkNewStepName(name);
    const parsed = toSleepSpec(options);
    if (typeof parsed === 'string') this.fail(`sleep '${name}': ${parsed}`, name);
    return this.addStep(
      name,
      parsed.spec,
      this.toSources(name, parsed.args as Record<string, Ref<unknown> | undefined>),
      parsed.waitFor,
    );
  }

  /**
   * Run a child reactor as one step. Its inputs are wired like step arguments; its value is the
   * child's result. If the child fails it rolls itself back, then the parent rolls back; undoing
   * the parent replays the child's undos.
   */
  compose<CI, CO>(
    name: string,
    child: ComposeTarget<CI, CO>,
    args: ArgRefs<CI>,
    options: ComposeOptions = {},
  ): Ref<CO> {
    this.checkNewStepName(name);
    this.checkComposeOptions(name, options);
    const reactorName = this.childReactorName(`compose step '${name}'`, name, child);
    return this.addStep(
      name,
      { kind: 'compose', reactorName, name: `compose:${reactorName}` },
      this.toSources(name, args as Record<string, Ref<unknown> | undefined>),
      options.waitFor,
    );
  }

  /**
   * Map an element reactor over a collection. Inline by default (elements run in this process,
   * `concurrency` at a time); with `fanOut` every element is its own job, `batchSize` in flight
   * at most, and the map is a hand-off point. The value is the results (a {@link MapResults}, the
   * same in both modes) or what `collect` makes of them. When the run rolls back, every completed
   * element is undone by replaying its own undos, highest index first.
   */
  map<E, EI, EO, R = MapResults<EO>, A = Record<string, never>>(
    name: string,
    options: MapOptions<E, EI, EO, R, A>,
  ): Ref<R> {
    this.checkNewStepName(name);
    if (typeof options !== 'object' || options === null) this.fail(`map '${name}': options are required`, name);
    const elementReactor = this.elementReactorName(name, options.element as MapElement<unknown, unknown>);
    const inline =
      typeof options.element === 'function' && !getReactorMetadata(options.element)
        ? defineReactor(elementReactor, options.element as (r: ReactorBuilder<unknown>) => Ref<unknown> | void)
        : undefined;
    if (typeof options.inputs !== 'function')
      this.fail(`map '${name}': inputs must be a function (element) => ({ ...refs })`, name);
    const inputs = this.toSources(
      name,
      options.inputs(new Ref<E>({ kind: 'element', ops: [] })) as Record<string, Ref<unknown> | undefined>,
    );
    let source: MapSpec['source'];
    if (options.source instanceof Ref) source = options.source.source;
    else if (typeof options.source === 'function') source = options.source as MapSpec['source'];
    else
      this.fail(
        `map '${name}': source must be a ref (r.input, a step's ref) or a function returning the elements`,
        name,
      );
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1)
      this.fail(`map '${name}': concurrency must be an integer >= 1 (got ${String(options.concurrency)})`, name);
    const batchSize = options.fanOut ? (options.fanOut.batchSize ?? 50) : undefined;
    if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1)) {
      this.fail(
        `map '${name}': fanOut.batchSize must be an integer >= 1 (got ${String(options.fanOut?.batchSize)})`,
        name,
      );
    }
    const elementsPerJob =
      batchSize === undefined
        ? undefined
        : (options.fanOut?.elementsPerJob ?? Math.max(1, Math.min(25, Math.floor(batchSize / 10))));
    if (
      elementsPerJob !== undefined &&
      (!Number.isInteger(elementsPerJob) || elementsPerJob < 1 || elementsPerJob > batchSize!)
    ) {
      this.fail(
        `map '${name}': fanOut.elementsPerJob must be an integer from 1 to batchSize (${batchSize}) (got ${String(options.fanOut?.elementsPerJob)})`,
        name,
      );
    }
    const spec: MapSpec = {
      source,
      elementReactor,
      inlineElement: inline,
      inputs,
      concurrency,
      atomic: options.atomic ?? true,
      fanOut: batchSize !== undefined ? { batchSize, elementsPerJob: elementsPerJob! } : undefined,
      collect: options.collect as MapSpec['collect'],
      undoAll: options.undoAll as MapSpec['undoAll'],
    };
    const args = this.toSources(name, (options.args ?? {}) as Record<string, Ref<unknown> | undefined>);
    return this.addStep(name, { kind: 'map', name: `map:${elementReactor}`, map: spec }, args, options.waitFor, {
      reads: [...Object.values(spec.inputs), ...(typeof spec.source === 'function' ? [] : [spec.source])],
    });
  }

  private elementReactorName(step: string, element: MapElement<unknown, unknown>): string {
    if (typeof element === 'string') return element;
    if (typeof element === 'function') {
      const meta = getReactorMetadata(element);
      return meta ? meta.name : `${this.reactorName}::${step}`;
    }
    if (element && typeof element === 'object' && typeof element.name === 'string') return element.name;
    this.fail(
      `map '${step}': element must be a reactor definition, a @Reactor class, a name or an inline builder`,
      step,
    );
  }

  /** @internal Validate and freeze. */
  finish<O>(returned: Ref<O> | void, options: ReactorOptions = {}): ReactorDefinition<I, O> {
    return finishDefinition<I, O>(this.reactorName, this.inputDefs, this.pending, returned, options);
  }

  private toSources(step: string, args: Record<string, Ref<unknown> | undefined>): Record<string, ArgSource> {
    if (typeof args !== 'object' || args === null)
      this.fail(`step '${step}': args must be an object of refs ({} for none)`, step);
    const out: Record<string, ArgSource> = {};
    for (const [key, ref] of Object.entries(args)) {
      if (ref === undefined) continue;
      if (!(ref instanceof Ref)) {
        this.fail(
          `step '${step}': argument '${key}' must be a ref (use r.input, a step's ref, or r.value(...) for a constant)`,
          step,
        );
      }
      out[key] = ref.source;
    }
    return out;
  }

  private handlerSpec(step: string, handler: StepImplementation<unknown, unknown>): HandlerSpec {
    if (typeof handler === 'function') {
      const proto = (handler as { prototype?: { run?: unknown } }).prototype;
      if (proto && typeof proto.run === 'function') {
        const meta = getStepMetadata(handler);
        return { kind: 'class', stepClass: handler as StepClass<never, unknown>, name: meta?.name ?? handler.name };
      }
      if (/^class[\s{]/.test(Function.prototype.toString.call(handler))) {
        this.fail(
          `step '${step}': class ${handler.name} has no run(args, ctx) method; a step class must implement StepHandler`,
          step,
        );
      }
      return { kind: 'inline', handler: { run: handler as InlineStep<never, unknown> }, name: `inline:${step}` };
    }
    if (handler && typeof handler === 'object' && typeof (handler as StepHandler).run === 'function') {
      return { kind: 'inline', handler: handler as StepHandler<never, unknown>, name: `inline:${step}` };
    }
    this.fail(`step '${step}': handler must be a step class, an object with run(), or a function`, step);
  }

  /**
   * Queue step `name` for the definition (its handler, argument sources and ordering-only
   * dependencies; `more` for what only some kinds have) and return a ref to its result.
   */
  private addStep<R>(
    name: string,
    handler: PendingStep['handler'],
    args: PendingStep['args'],
    waitFor: ReadonlyArray<Ref<unknown> | string> | undefined,
    more: Partial<Omit<PendingStep, 'name' | 'handler' | 'args' | 'waitFor'>> = {},
  ): Ref<R> {
    this.pending.push({ name, handler, args, waitFor: [...(waitFor ?? [])], redact: [], reads: [], ...more });
    return new Ref({ kind: 'result', step: name, ops: [] });
  }

  private checkNewStepName(name: string): void {
    if (typeof name !== 'string' || name.length === 0) this.fail('step names must be non-empty strings');
    // Run, child and map ids are built from step names with these separators.
    if (/[:/#{}]/.test(name)) this.fail(`step name '${name}' must not contain ':', '/', '#', '{' or '}'`, name);
    if (this.pending.some((p) => p.name === name))
      this.fail(`step '${name}' is declared twice; step names must be unique`, name);
  }

  /**
   * Refuse options a compose step does not take, at definition time and in plain JavaScript too
   * (TypeScript's excess-property check is not the only guard). `retries` is the reference's
   * newest rule: a child's steps retry themselves; retrying the whole child is gone.
   */
  /** The name of the reactor a compose step or async reactor runs (a definition, a `@Reactor` class or a name). */
  private childReactorName<CI, CO>(label: string, step: string, child: ComposeTarget<CI, CO>): string {
    const reactorName =
      typeof child === 'string' ? child : typeof child === 'function' ? getReactorMetadata(child)?.name : child.name;
    if (!reactorName) {
      this.fail(
        `${label}: the child is not a reactor. Pass a ReactorDefinition, a @Reactor class or a reactor name`,
        step,
      );
    }
    return reactorName;
  }

  private checkComposeOptions(name: string, options: unknown): void {
    if (options === undefined) return;
    if (typeof options !== 'object' || options === null)
      this.fail(`compose step '${name}': options must be an object`, name);
    for (const key of Object.keys(options)) {
      if (key === 'waitFor') continue;
      if (key === 'retries') {
        this.fail(
          `compose step '${name}': 'retries' is not allowed on compose. Declare retries on the child reactor's steps; each retries itself`,
          name,
        );
      }
      this.fail(`compose step '${name}': unknown option '${key}'. A compose step takes only 'waitFor'`, name);
    }
  }

  private fail(message: string, step?: string): never {
    throw new DefinitionError(`Reactor '${this.reactorName}': ${message}.`, this.reactorName, step);
  }
}

/**
 * Build a reactor definition without Nest. Annotate the builder parameter to type the inputs;
 * the result type is inferred from the returned ref.
 *
 * ```ts
 * const double = defineReactor('double', (r: ReactorBuilder<{ n: number }>) =>
 *   r.step('double', ({ n }: { n: number }) => success(n * 2), { n: r.input('n', { type: 'number' }) }),
 * );
 * ```
 */
export function defineReactor<I, O = Record<string, unknown>>(
  name: string,
  build: (r: ReactorBuilder<I>) => Ref<O> | void,
  options: ReactorOptions = {},
): ReactorDefinition<I, O> {
  if (typeof name !== 'string' || name.length === 0)
    throw new DefinitionError('Reactor names must be non-empty strings.', String(name));
  const builder = new ReactorBuilder<I>(name);
  const returned = build(builder);
  return builder.finish<O>(returned, options);
}
