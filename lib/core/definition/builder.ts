import { createHash } from 'node:crypto';
import { DefinitionError } from '../errors/definition.error';
import { findCycle } from '../graph/dependency-graph';
import { toRetryPolicy, type RetryOptions } from '../executor/retry-policy';
import { contractProperties } from '../validation/contract';
import type { BackgroundOption, HandlerSpec, ReactorDefinition, ReactorOptions, StepDefinition } from './definition';
import { toInputDefinition, type InputDefinition, type InputSpec } from './input-spec';
import { Ref, describeSource, type ArgRefs, type ArgSource } from './ref';
import { getReactorMetadata, type ReactorClass } from './reactor-blueprint';
import { getStepMetadata, type DtoClass, type InlineStep, type StepClass, type StepHandler } from './step';

/** Options of one use of a step in a reactor. They override the step class's own options. */
export interface StepUseOptions {
  /** Ordering-only dependencies: refs to steps, or step names. */
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
  retries?: RetryOptions;
  input?: DtoClass;
  output?: DtoClass;
  /** Argument names to redact in traces and failures. */
  redact?: string[];
}

/** Options of a compose step. */
export interface ComposeOptions {
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
}

/** A step handler given to {@link ReactorBuilder.step}: a step class, a handler object, or a function. */
export type StepImplementation<A, R> = StepClass<A, R> | StepHandler<A, R> | InlineStep<A, R>;

/** A child reactor given to {@link ReactorBuilder.compose}: a definition, a `@Reactor` class, or a name. */
export type ComposeTarget<CI, CO> = ReactorDefinition<CI, CO> | ReactorClass<CI, CO> | string;

interface PendingStep {
  name: string;
  handler: HandlerSpec;
  args: Record<string, ArgSource>;
  waitFor: Array<Ref<unknown> | string>;
  retries?: RetryOptions;
  input?: DtoClass;
  output?: DtoClass;
  redact: string[];
}

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
   * Add a step. `handler` is a step class (resolved through DI in Nest), a handler object with
   * `run`/`compensate`/`undo`, or an inline `run` function. `args` maps each of the handler's
   * arguments to a ref of the same type. Returns a ref to the step's result.
   */
  step<A, R>(name: string, handler: StepImplementation<A, R>, args: ArgRefs<A>, options: StepUseOptions = {}): Ref<R> {
    this.checkNewStepName(name);
    const spec = this.handlerSpec(name, handler as StepImplementation<unknown, unknown>);
    const classMeta = spec.kind === 'class' ? getStepMetadata(spec.stepClass) : undefined;
    this.pending.push({
      name,
      handler: spec,
      args: this.toSources(name, args as Record<string, Ref<unknown> | undefined>),
      waitFor: [...(options.waitFor ?? [])],
      retries: options.retries ?? classMeta?.retries,
      input: options.input ?? classMeta?.input,
      output: options.output ?? classMeta?.output,
      redact: [...(classMeta?.redact ?? []), ...(options.redact ?? [])],
    });
    return new Ref({ kind: 'result', step: name, ops: [] });
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
    const reactorName =
      typeof child === 'string' ? child : typeof child === 'function' ? getReactorMetadata(child)?.name : child.name;
    if (!reactorName) {
      this.fail(
        `compose step '${name}': the child is not a reactor. Pass a ReactorDefinition, a @Reactor class or a reactor name`,
        name,
      );
    }
    this.pending.push({
      name,
      handler: { kind: 'compose', reactorName, name: `compose:${reactorName}` },
      args: this.toSources(name, args as Record<string, Ref<unknown> | undefined>),
      waitFor: [...(options.waitFor ?? [])],
      redact: [],
    });
    return new Ref({ kind: 'result', step: name, ops: [] });
  }

  /** @internal Validate and freeze. */
  finish<O>(returned: Ref<O> | void, options: ReactorOptions = {}): ReactorDefinition<I, O> {
    const names = new Set(this.pending.map((p) => p.name));
    const steps: StepDefinition[] = this.pending.map((p, index) => {
      const waitFor = p.waitFor.map((w) => {
        const target = typeof w === 'string' ? w : w.dependsOn;
        if (!target)
          this.fail(
            `step '${p.name}': waitFor must name a step or be a step's ref (got an input or value ref)`,
            p.name,
          );
        return target;
      });
      const reads = Object.values(p.args)
        .map((s) => (s.kind === 'result' ? s.step : undefined))
        .filter((s): s is string => s !== undefined);
      for (const dep of [...reads, ...waitFor]) {
        if (!names.has(dep)) {
          this.fail(
            `step '${p.name}' depends on unknown step '${dep}'. Declared steps: ${[...names].join(', ') || '(none)'}`,
            p.name,
          );
        }
      }
      const retries = toRetryPolicy(p.retries);
      if (typeof retries === 'string') this.fail(`step '${p.name}': ${retries}`, p.name);
      const args = this.autoWire(p);
      const redactedFromInputs = Object.entries(args)
        .filter(([, s]) => s.kind === 'input' && this.inputDefs.get(s.name)?.redact)
        .map(([k]) => k);
      return Object.freeze({
        name: p.name,
        index,
        handler: p.handler,
        args: Object.freeze(args),
        waitFor: Object.freeze(waitFor),
        dependsOn: Object.freeze([...new Set([...reads, ...waitFor])]),
        retries,
        input: p.input,
        output: p.output,
        redact: Object.freeze([...new Set([...p.redact, ...redactedFromInputs])]),
      });
    });

    const cycle = findCycle(steps);
    if (cycle) this.fail(`dependency cycle: ${cycle.join(' -> ')}. Remove one of these dependencies`, cycle[0]);

    let returns: ArgSource | undefined;
    if (returned instanceof Ref) {
      returns = returned.source;
      if (returns.kind === 'result' && !names.has(returns.step))
        this.fail(`the returned ref reads unknown step '${returns.step}'`);
    } else if (returned !== undefined) {
      this.fail('build() must return a ref (from r.step, r.input, r.value) or nothing');
    }

    const maxConcurrency = options.maxConcurrency ?? 8;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1) {
      this.fail(`maxConcurrency must be an integer >= 1 (got ${String(options.maxConcurrency)})`);
    }
    this.checkBackground(options.background, names);

    const inputs = [...this.inputDefs.values()];
    const hash = definitionHash(this.reactorName, inputs, steps, returns, options.background);
    return Object.freeze({
      name: this.reactorName,
      inputs: Object.freeze(inputs),
      steps: Object.freeze(steps),
      stepsByName: new Map(steps.map((s) => [s.name, s])),
      returns,
      maxConcurrency,
      background: options.background,
      description: options.description,
      hash,
    });
  }

  private checkBackground(background: BackgroundOption | undefined, names: Set<string>): void {
    if (!background) return;
    const keys = Object.keys(background);
    if (keys.length !== 1 || !['all', 'after', 'before'].includes(keys[0])) {
      this.fail("background must be exactly one of { all: true }, { after: 'step' } or { before: 'step' }");
    }
    if ('all' in background && background.all !== true) this.fail('background.all must be true');
    const step = 'after' in background ? background.after : 'before' in background ? background.before : undefined;
    if (step !== undefined && !names.has(step)) {
      this.fail(
        `background hand-off names unknown step '${step}'. Declared steps: ${[...names].join(', ') || '(none)'}`,
      );
    }
  }

  /**
   * A step with an input contract gets each required contract property that `args` does not wire
   * from the reactor input of the same name (as ruby_reactor does); if there is none, the
   * definition is invalid. Wiring an argument the contract does not declare is an error too.
   */
  private autoWire(p: PendingStep): Record<string, ArgSource> {
    const args = { ...p.args };
    if (!p.input) return args;
    const props = contractProperties(p.input);
    if (props.length === 0) return args;
    const declared = new Set(props.map((c) => c.name));
    for (const key of Object.keys(args)) {
      if (!declared.has(key)) {
        this.fail(
          `step '${p.name}' wires argument '${key}' that its input contract ${p.input.name} does not declare. Declared: ${[...declared].join(', ')}`,
          p.name,
        );
      }
    }
    for (const prop of props) {
      if (prop.optional || prop.name in args) continue;
      if (this.inputDefs.has(prop.name)) {
        args[prop.name] = { kind: 'input', name: prop.name, ops: [] };
        continue;
      }
      this.fail(
        `step '${p.name}' requires input '${prop.name}' (contract ${p.input.name}) but nothing wires it. ` +
          `Pass it in the step's args, declare a reactor input named '${prop.name}', or mark it @IsOptional()`,
        p.name,
      );
    }
    return args;
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

  private checkNewStepName(name: string): void {
    if (typeof name !== 'string' || name.length === 0) this.fail('step names must be non-empty strings');
    if (this.pending.some((p) => p.name === name))
      this.fail(`step '${name}' is declared twice; step names must be unique`, name);
  }

  private fail(message: string, step?: string): never {
    throw new DefinitionError(`Reactor '${this.reactorName}': ${message}.`, this.reactorName, step);
  }
}

function definitionHash(
  name: string,
  inputs: readonly InputDefinition[],
  steps: readonly StepDefinition[],
  returns: ArgSource | undefined,
  background: BackgroundOption | undefined,
): string {
  const shape = {
    name,
    inputs: inputs.map((i) => [i.name, i.type, i.dto?.name ?? null, i.optional]),
    steps: steps.map((s) => [
      s.name,
      s.handler.name,
      Object.entries(s.args).map(([k, v]) => [k, describeSource(v)]),
      s.waitFor,
    ]),
    returns: returns ? describeSource(returns) : null,
    background: background ?? null,
  };
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
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
