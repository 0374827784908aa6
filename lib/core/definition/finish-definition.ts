import { toCoordinationSpec, toStepCoordinationSpec, type StepCoordinationOptions } from './coordination-spec';
import { createHash } from 'node:crypto';
import { didYouMean } from '../errors/closest-names';
import { DefinitionError } from '../errors/definition.error';
import { findCycle } from '../graph/dependency-graph';
import { contractProperties } from '../validation/contract';
import type {
  BackgroundOption,
  HandlerSpec,
  ReactorDefinition,
  ReactorOptions,
  ReactorRouting,
  StepDefinition,
} from './definition';
import { toEventTrigger } from './event-spec';
import { toStepContract, type InputContract, type OutputContract, type StepContract } from './contract-spec';
import type { InputDefinition } from './input-spec';
import { Ref, describeSource, type ArgSource } from './ref';
import { toRetryPolicy, type RetryOptions } from './retry-policy';
import { toFlowSpec } from './flow-spec';

type Fail = (message: string, step?: string) => never;

/** A step as declared on the builder, before validation. */
export interface PendingStep {
  name: string;
  handler: HandlerSpec;
  args: Record<string, ArgSource>;
  waitFor: Array<Ref<unknown> | string>;
  retries?: RetryOptions;
  input?: InputContract;
  output?: OutputContract;
  redact: string[];
  /** Sources the step reads besides its args (a map's source and element inputs). */
  reads: ArgSource[];
  /** The step's own lock and semaphore. */
  coordination?: StepCoordinationOptions;
}

/**
 * Validate a reactor's wiring and freeze it into a {@link ReactorDefinition}: dependencies name
 * declared steps, no cycles, retry policies and options are valid, input contracts are wired
 * (auto-wired from same-named inputs), and the definition gets its stable hash.
 */
export function finishDefinition<I, O>(
  reactorName: string,
  inputDefs: ReadonlyMap<string, InputDefinition>,
  pending: readonly PendingStep[],
  returned: Ref<O> | void,
  options: ReactorOptions = {},
): ReactorDefinition<I, O> {
  const fail: Fail = (message, step) => {
    throw new DefinitionError(`Reactor '${reactorName}': ${message}.`, reactorName, step);
  };
  const names = new Set(pending.map((p) => p.name));
  const steps: StepDefinition[] = pending.map((p, index) => {
    const waitFor = p.waitFor.map((w) => {
      const target = typeof w === 'string' ? w : w.dependsOn;
      if (!target)
        fail(`step '${p.name}': waitFor must name a step or be a step's ref (got an input or value ref)`, p.name);
      return target;
    });
    const sources = [...Object.values(p.args), ...p.reads];
    const reads = sources
      .map((s) => (s.kind === 'result' ? s.step : undefined))
      .filter((s): s is string => s !== undefined);
    for (const dep of [...reads, ...waitFor]) {
      if (!names.has(dep)) {
        fail(
          `step '${p.name}' depends on unknown step '${dep}'.${didYouMean(dep, names)} ` +
            `Declared steps: ${[...names].join(', ') || '(none)'}`,
          p.name,
        );
      }
    }
    const retries = toRetryPolicy(p.retries);
    if (typeof retries === 'string') fail(`step '${p.name}': ${retries}`, p.name);
    const coordination = p.coordination ? toStepCoordinationSpec(p.coordination) : undefined;
    if (typeof coordination === 'string') fail(`step '${p.name}': ${coordination}`, p.name);
    const input = contractOf(p, 'input', fail);
    const output = contractOf(p, 'output', fail);
    const args = autoWire(p, input, inputDefs, fail);
    const redactedFromInputs = Object.entries(args)
      .filter(([, s]) => s.kind === 'input' && inputDefs.get(s.name)?.redact)
      .map(([k]) => k);
    const redactedByContract = input?.kind === 'fields' ? input.fields.filter((f) => f.redact).map((f) => f.name) : [];
    return Object.freeze({
      name: p.name,
      index,
      handler: p.handler,
      args: Object.freeze(args),
      waitFor: Object.freeze(waitFor),
      dependsOn: Object.freeze([...new Set([...reads, ...waitFor])]),
      reads: Object.freeze([...new Set(reads)]),
      retries,
      input,
      output,
      redact: Object.freeze([...new Set([...p.redact, ...redactedFromInputs, ...redactedByContract])]),
      ...(coordination ? { coordination } : {}),
    });
  });

  const cycle = findCycle(steps);
  if (cycle) fail(`dependency cycle: ${cycle.join(' -> ')}. Remove one of these dependencies`, cycle[0]);

  let returns: ArgSource | undefined;
  if (returned instanceof Ref) {
    returns = returned.source;
    if (returns.kind === 'result' && !names.has(returns.step))
      fail(`the returned ref reads unknown step '${returns.step}'`);
    const source = returns;
    const unit = source.kind === 'result' ? steps.find((s) => s.name === source.step) : undefined;
    if (unit?.handler.kind === 'async') {
      fail(
        `the returned ref reads async unit '${unit.name}' directly; read it in a step (which gets its value or its Failure) and return that`,
        unit.name,
      );
    }
  } else if (returned !== undefined) {
    fail('build() must return a ref (from r.step, r.input, r.value) or nothing');
  }

  const maxConcurrency = options.maxConcurrency ?? 8;
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1) {
    fail(`maxConcurrency must be an integer >= 1 (got ${String(options.maxConcurrency)})`);
  }
  checkBackground(options.background, names, steps, fail);
  const middleware = options.middleware ?? [];
  if (!Array.isArray(middleware)) fail('middleware must be an array of middleware instances or classes');
  middleware.forEach((entry, i) => {
    const ok =
      typeof entry === 'function' ||
      (typeof entry === 'object' && entry !== null && typeof (entry as { onEvent?: unknown }).onEvent === 'function');
    if (!ok) fail(`middleware[${i}] must be an object with an onEvent method, or a class of one`);
  });

  if (options.encryptInputs !== undefined && typeof options.encryptInputs !== 'boolean') {
    fail(`encryptInputs must be true or false (got ${JSON.stringify(options.encryptInputs)})`);
  }

  const coordination = toCoordinationSpec(options);
  if (typeof coordination === 'string') fail(coordination);
  const trigger = options.on === undefined ? undefined : toEventTrigger(options.on);
  if (typeof trigger === 'string') fail(trigger);
  const flow = toFlowSpec(options, new Set(inputDefs.keys()));
  if (typeof flow === 'string') fail(flow);

  const inputs = [...inputDefs.values()];
  const hash = definitionHash(reactorName, inputs, steps, returns, options.background);
  return Object.freeze({
    name: reactorName,
    inputs: Object.freeze(inputs),
    steps: Object.freeze(steps),
    stepsByName: new Map(steps.map((s) => [s.name, s])),
    returns,
    maxConcurrency,
    background: options.background,
    description: options.description,
    version: String(options.version ?? '1'),
    middleware: Object.freeze([...middleware]),
    encryptInputs: options.encryptInputs === true,
    ...(coordination ? { coordination } : {}),
    ...routingOf(options),
    ...(trigger ? { trigger } : {}),
    ...(flow ? { flow } : {}),
    hash,
  });
}

/** The declared routing options, copied as given (the runtime that routes jobs validates them at boot). */
function routingOf({ queue, concurrency, priority }: ReactorOptions): { routing?: ReactorRouting } {
  if (queue === undefined && typeof concurrency !== 'number' && priority === undefined) return {};
  const routing: { queue?: string; concurrency?: number; priority?: number } = {};
  if (queue !== undefined) routing.queue = queue;
  // An object is flow control (concurrency per key), not the queue's worker concurrency.
  if (typeof concurrency === 'number') routing.concurrency = concurrency;
  if (priority !== undefined) routing.priority = priority;
  return { routing: Object.freeze(routing) };
}

function checkBackground(
  background: BackgroundOption | undefined,
  names: Set<string>,
  steps: readonly StepDefinition[],
  fail: Fail,
): void {
  if (!background) return;
  const keys = Object.keys(background);
  if (keys.length !== 1 || !['all', 'after', 'before'].includes(keys[0])) {
    fail("background must be exactly one of { all: true }, { after: 'step' } or { before: 'step' }");
  }
  if ('all' in background && background.all !== true) fail('background.all must be true');
  const step = 'after' in background ? background.after : 'before' in background ? background.before : undefined;
  if (step !== undefined && !names.has(step)) {
    fail(
      `background hand-off names unknown step '${step}'.${didYouMean(step, names)} ` +
        `Declared steps: ${[...names].join(', ') || '(none)'}`,
    );
  }
  const point = steps.find((s) => s.name === step);
  const why = point ? NOT_A_HANDOFF_POINT[point.handler.kind] : undefined;
  if (point && why) {
    const where = 'after' in background ? 'after' : 'before';
    const before = point.dependsOn;
    const after = steps.filter((s) => s.dependsOn.includes(point.name)).map((s) => s.name);
    const instead = [...before.map((name) => `{ after: '${name}' }`), ...after.map((name) => `{ before: '${name}' }`)];
    fail(
      `background: { ${where}: '${point.name}' } names ${point.handler.kind} step '${point.name}', which cannot be a hand-off point: ${why}. ` +
        `Hand off at a step next to it${instead.length > 0 ? ` (${instead.join(', ')})` : ''}, or drop the option`,
      point.name,
    );
  }
}

/** Step kinds that cannot be a `background` hand-off point, and why (the reference refuses an interrupt). */
const NOT_A_HANDOFF_POINT: Partial<Record<StepDefinition['handler']['kind'], string>> = {
  interrupt:
    'the run would be handed to a worker only to pause there at once (a paused run holds no worker; ' +
    "continue(runId, step, payload, { execute: 'background' }) resumes it in one)",
};

/** The step's normalized `role` contract, if it has one; a bad one fails the definition. */
function contractOf(p: PendingStep, role: 'input' | 'output', fail: Fail): StepContract | undefined {
  const spec = p[role];
  if (spec === undefined) return undefined;
  const contract = toStepContract(spec, role);
  if (typeof contract === 'string') fail(`step '${p.name}': ${contract}`, p.name);
  return contract;
}

/**
 * A step with an input contract gets each required contract property that `args` does not wire
 * from the reactor input of the same name (as ruby_reactor does); if there is none, the
 * definition is invalid. Wiring an argument the contract does not declare is an error too.
 */
function autoWire(
  p: PendingStep,
  contract: StepContract | undefined,
  inputDefs: ReadonlyMap<string, InputDefinition>,
  fail: Fail,
): Record<string, ArgSource> {
  const args = { ...p.args };
  if (!contract || contract.kind === 'value') return args;
  const props =
    contract.kind === 'dto'
      ? contractProperties(contract.dto).map((c) => ({
          ...c,
          optional: c.optional || c.name in (contract.defaults ?? {}),
        }))
      : contract.fields.map((f) => ({ name: f.name, optional: f.optional }));
  if (props.length === 0) return args;
  const declared = new Set(props.map((c) => c.name));
  for (const key of Object.keys(args)) {
    if (!declared.has(key)) {
      fail(
        `step '${p.name}' wires argument '${key}' that its input contract ${contract.name} does not declare. Declared: ${[...declared].join(', ')}`,
        p.name,
      );
    }
  }
  for (const prop of props) {
    if (prop.optional || prop.name in args) continue;
    if (inputDefs.has(prop.name)) {
      args[prop.name] = { kind: 'input', name: prop.name, ops: [] };
      continue;
    }
    fail(
      `step '${p.name}' requires input '${prop.name}' (contract ${contract.name}) but nothing wires it. ` +
        `Pass it in the step's args, declare a reactor input named '${prop.name}', or mark it ${contract.kind === 'dto' ? '@IsOptional() or give the property an initial value (its default)' : 'optional: true'}`,
      p.name,
    );
  }
  return args;
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
