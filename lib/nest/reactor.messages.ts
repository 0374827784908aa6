/**
 * Every user-facing message of the Nest layer, as functions. Each says what is wrong and what to
 * do next.
 */

type Named = { readonly name: string };

function className(cls: Named | undefined): string {
  return cls?.name || '(anonymous class)';
}

function show(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** @internal */
export const messages = {
  // Decorators
  decoratorNameInvalid: (decorator: '@Step' | '@Reactor', target: Named, value: unknown): string =>
    `${decorator}() on class ${className(target)}: the name must be a non-empty string (got ${show(value)}). ` +
    `Names are stored with every run, so pick a stable one, e.g. ${decorator}('charge-card').`,
  decoratorOptionsInvalid: (decorator: '@Step' | '@Reactor', target: Named, value: unknown): string =>
    `${decorator}() on class ${className(target)}: options must be an object (got ${show(value)}).`,
  decoratorNotOnClass: (decorator: '@Step' | '@Reactor', value: unknown): string =>
    `${decorator}() decorates classes only (got ${show(value)}).`,
  stepWithoutRun: (name: string, target: Named): string =>
    `@Step('${name}') decorates class ${className(target)}, which has no run() method. ` +
    'A step class implements StepHandler: run(args, ctx), and optionally compensate() and undo().',
  reactorWithoutBuild: (name: string, target: Named): string =>
    `@Reactor('${name}') decorates class ${className(target)}, which has no build() method. ` +
    'A reactor class implements ReactorBlueprint: build(r) wires inputs and steps and returns a ref.',

  // Module options
  optionsNotObject: (value: unknown): string =>
    `ReactorModule options must be an object (got ${show(value)}). Call ReactorModule.forRoot() or forRoot({ ... }).`,
  optionUnknown: (key: string, known: readonly string[]): string =>
    `ReactorModule option '${key}' is unknown. Known options: ${known.join(', ')}.`,
  optionInvalid: (path: string, expected: string, value: unknown): string =>
    `ReactorModule option '${path}' must be ${expected} (got ${show(value)}).`,
  asyncOptionsWithoutFactory: (): string =>
    'ReactorModule.forRootAsync() needs a useFactory function that returns the module options, e.g. ' +
    'forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (config) => ({ ... }) }).',
  asyncFactoryReturnedGlobal: (): string =>
    "ReactorModule.forRootAsync(): useFactory returned 'global', which changes the module's shape and so cannot " +
    'come from an async factory. Pass it beside the factory instead: forRootAsync({ global: false, useFactory }).',
  redisNotAvailableYet: (): string =>
    "ReactorModule: the 'redis' option is recognised, but the Redis runtime is not wired into the Nest module in " +
    "this version. Omit 'redis' to run embedded (in-memory, not durable), or use the Redis adapters from " +
    "'lib/storage/redis' with the Nest-free ReactorEngine.",
  embeddedRuntimeWarning: (): string =>
    "Running the embedded runtime: in memory, not durable. Runs, leases and jobs live in this process's memory " +
    'and are lost when it exits; use it for development and tests. Configure ' +
    'ReactorModule.forRoot({ redis: { url } }) for durable runs.',

  // Discovery
  scopedProvider: (kind: 'step' | 'reactor', target: Named, scope: string): string =>
    `${kind === 'step' ? 'Step' : 'Reactor'} class ${className(target)} is ${scope}. Reactors and steps must be ` +
    'singletons: runs outlive requests and resume in other processes. Remove the scope from its @Injectable() or ' +
    'provider, stop injecting request-scoped providers (such as REQUEST) into it, and pass per-request data ' +
    'as reactor inputs instead.',
  duplicateStepName: (name: string, first: Named, second: Named): string =>
    `Two step classes are named '${name}': ${className(first)} and ${className(second)}. Step names are stored ` +
    'with runs and must be unique; rename one of them in its @Step().',
  duplicateReactorName: (name: string, first: Named, second: Named): string =>
    `Two reactor classes are named '${name}': ${className(first)} and ${className(second)}. Reactor names are ` +
    'stored with runs and must be unique; rename one of them in its @Reactor().',
  reactorBuildThrew: (name: string, target: Named, error: unknown): string =>
    `Reactor '${name}' (class ${className(target)}): build() threw: ${(error as Error)?.message ?? String(error)}`,
  stepClassNotProvider: (reactor: string, step: string, stepClass: Named): string =>
    `Reactor '${reactor}' step '${step}' uses class ${className(stepClass)}, which is not a provider in any module; ` +
    `add ${className(stepClass)} to a module's providers (and decorate it with @Step).`,
  stepClassNotDecorated: (reactor: string, step: string, stepClass: Named): string =>
    `Reactor '${reactor}' step '${step}' uses class ${className(stepClass)}, which is a provider but is not ` +
    `decorated with @Step; decorate it with @Step('some-name').`,

  // Runtime use
  stepClassNotResolvable: (stepClass: Named): string =>
    `Step class ${className(stepClass)} was not discovered as a @Step provider, so it cannot be resolved. ` +
    `Decorate it with @Step and add it to a module's providers.`,
  reactorClassNotDecorated: (target: Named): string =>
    `${className(target)} is not a reactor class; decorate it with @Reactor and add it to a module's providers.`,
  reactorClassNotRegistered: (target: Named, name: string): string =>
    `Reactor class ${className(target)} (@Reactor('${name}')) is not registered: it is not a provider in any ` +
    "module of this application. Add it to a module's providers.",
  reactorArgumentInvalid: (method: string, value: unknown): string =>
    `ReactorClient.${method}(): the first argument must be a @Reactor class or a reactor name (got ${show(value)}).`,
  clientUsedBeforeInit: (method: string): string =>
    `ReactorClient.${method}() was called before the ReactorModule discovered its reactors (that happens in ` +
    'onModuleInit). Call it from onApplicationBootstrap or later.',
  jobFailed: (kind: string, runId: string, reactorName: string, error: unknown): string =>
    `Job '${kind}' for run '${runId}' (reactor '${reactorName}') failed: ${(error as Error)?.stack ?? String(error)}`,
};
