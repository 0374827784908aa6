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
  asyncFactoryReturnedRuntime: (): string =>
    "ReactorModule.forRootAsync(): useFactory returned 'runtime', which changes the module's shape and so cannot " +
    "come from an async factory. Pass it beside the factory instead: forRootAsync({ runtime: 'redis', useFactory }).",
  runtimeMismatch: (runtime: 'embedded' | 'redis'): string =>
    runtime === 'redis'
      ? "ReactorModule.forRootAsync({ runtime: 'redis' }): useFactory returned no 'redis' option, so there is no " +
        'Redis to run on. Return { redis: { url } } (or { redis: { connection } }) from the factory, or drop ' +
        "runtime: 'redis' to run embedded."
      : "ReactorModule.forRootAsync(): useFactory returned a 'redis' option, but the module was declared with the " +
        "embedded runtime (the default). Pass runtime: 'redis' beside the factory: " +
        "forRootAsync({ runtime: 'redis', imports, inject, useFactory }).",
  sweepIntervalInvalid: (intervalMs: number, valid: string): string =>
    `ReactorModule option 'sweeper.intervalMs' is ${intervalMs}, which is not a clock-aligned cron interval. ` +
    `Use one of: ${valid} (in milliseconds: 1000 ... 30000, 60000 ... 3600000). ` +
    'For another schedule set sweeper.enabled: false and call ReactorClient.sweepOnce() from your own scheduler.',
  redisConnectionInvalid: (value: unknown): string =>
    `ReactorModule option 'redis.connection' must be an ioredis client (new Redis(...) or new Cluster(...)) ` +
    `(got ${show(value)}). Or pass { redis: { url } } and let the module create and close its own connections.`,
  redisConnectionRetries: (value: unknown): string =>
    `ReactorModule option 'redis.connection' has maxRetriesPerRequest ${show(value)}; BullMQ workers need null ` +
    '(they block on the connection). Create it with new Redis(url, { maxRetriesPerRequest: null }), or pass ' +
    '{ redis: { url } } and let the module create its own connections.',
  redisRuntimeStarted: (prefix: string, queue: string, bullPrefix: string, workers: boolean): string =>
    `Durable runtime on Redis and BullMQ: keys under '${prefix}', BullMQ queue '${queue}' (prefix '${bullPrefix}'), ` +
    (workers ? 'this process runs workers.' : 'workers disabled in this process (workers: false): it only enqueues.'),
  redisUnreachable: (timeoutMs: number, error: unknown): string =>
    `Redis did not answer a PING within ${timeoutMs} ms at application bootstrap` +
    (error ? ` (${(error as Error)?.message ?? String(error)})` : '') +
    '. Start Redis, or fix ReactorModule option redis (url or connection); connectTimeoutMs sets how long to wait.',
  redisClientError: (error: unknown): string =>
    `Redis connection error (nest-reactor storage client): ${(error as Error)?.message ?? String(error)}`,
  queueError: (what: 'queue' | 'worker', error: unknown): string =>
    `BullMQ ${what} error (nest-reactor): ${(error as Error)?.message ?? String(error)}`,
  workerNotRegistered: (): string =>
    'The nest-reactor BullMQ worker was not created by @nestjs/bullmq before application bootstrap. If your app ' +
    'sets BullModule extraOptions.manualRegistration, call BullRegistrar.register() in an onModuleInit hook so ' +
    "every processor (nest-reactor's included) is registered before bootstrap.",
  jobRetriesExhausted: (attempts: number, error: unknown): string =>
    `job retries exhausted after ${attempts} attempt${attempts === 1 ? '' : 's'}: ` +
    `${(error as Error)?.message ?? String(error)}`,
  shutdownGraceExpired: (active: number, graceMs: number): string =>
    `Shutdown: ${active} job${active === 1 ? '' : 's'} still running after shutdownGraceMs (${graceMs} ms); ` +
    'closing the worker anyway. Their runs keep their last checkpoint and are re-enqueued by the sweeper once ' +
    'their lease expires (leaseTtlMs); the step in flight runs again.',
  abandonedJobFailed: (runId: string, error: unknown): string =>
    `Run '${runId}' was still executing when its worker shut down and then failed: ` +
    `${(error as Error)?.message ?? String(error)}. The sweeper will re-enqueue it from its last checkpoint.`,
  workerShuttingDown: (): string => 'The nest-reactor worker is shutting down; the job is left for another worker.',
  cleanupFailed: (what: string, error: unknown): string =>
    `Shutdown: could not ${what}: ${(error as Error)?.message ?? String(error)}`,

  // Sweeper
  sweeperNoScheduleModule: (): string =>
    'The recovery sweeper is not scheduled: ScheduleModule from @nestjs/schedule is not imported, so stalled ' +
    'runs (whose worker died) are not recovered. Import ScheduleModule.forRoot() once in your application ' +
    'module, or set sweeper: { enabled: false } and call ReactorClient.sweepOnce() from your own cron.',
  sweeperCronMissing: (name: string): string =>
    `The recovery sweeper is not scheduled: SchedulerRegistry has no cron job '${name}' (ScheduleModule was ` +
    'imported with cronJobs: false?). Import ScheduleModule.forRoot() with cron jobs enabled, or set ' +
    'sweeper: { enabled: false } and call ReactorClient.sweepOnce() from your own cron.',
  sweeperScheduled: (expression: string, intervalMs: number): string =>
    `Recovery sweeper scheduled every ${intervalMs} ms (cron '${expression}', UTC).`,
  sweepRecovered: (reactors: number): string =>
    `Recovery sweep re-enqueued ${reactors} stalled run${reactors === 1 ? '' : 's'}.`,
  sweepFailed: (error: unknown): string =>
    `Recovery sweep failed; the next tick tries again: ${(error as Error)?.stack ?? String(error)}`,
  embeddedRuntimeWarning: (): string =>
    "Running the embedded runtime: in memory, not durable. Runs, leases and jobs live in this process's memory " +
    'and are lost when it exits; use it for development and tests. Configure ' +
    'ReactorModule.forRoot({ redis: { url } }) for durable runs.',

  // Discovery
  scopedProvider: (kind: 'step' | 'reactor' | 'listener', target: Named, scope: string): string =>
    `${kind === 'step' ? 'Step' : kind === 'reactor' ? 'Reactor' : '@OnReactorEvent listener'} class ${className(target)} is ${scope}. ` +
    `${kind === 'listener' ? 'Listeners, like reactors and steps,' : 'Reactors and steps'} must be ` +
    'singletons: runs outlive requests and resume in other processes. Remove the scope from its @Injectable() or ' +
    'provider, stop injecting request-scoped providers (such as REQUEST) into it, and pass per-request data ' +
    'as reactor inputs instead.',
  duplicateStepName: (name: string, first: Named, second: Named): string =>
    `Two step classes are named '${name}': ${className(first)} and ${className(second)}. Step names are stored ` +
    'with runs and must be unique; rename one of them in its @Step().',
  duplicateReactorName: (name: string, first: Named, second: Named): string =>
    `Two reactor classes are named '${name}': ${className(first)} and ${className(second)}. Reactor names are ` +
    'stored with runs and must be unique; rename one of them in its @Reactor(), or give each its own version ' +
    '(@Reactor(name, { version })) to keep an old definition beside a new one.',
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
  shutdownAbortedSteps: (aborted: number, left: number, graceMs: number): string =>
    `Shutdown: ${aborted} run${aborted === 1 ? '' : 's'} still executing after shutdownGraceMs (${graceMs} ms); ` +
    "their steps' ctx.signal was aborted (cause 'shutdown'), and a stopped run is left for the sweeper to resume. " +
    (left > 0
      ? `${left} did not stop within another ${graceMs} ms (a step ignores its signal); its lease expires after leaseTtlMs.`
      : 'All of them stopped.'),
};
