/**
 * Every user-facing message of the Nest layer, as functions. Each says what is wrong and what to
 * do next.
 */
import { errorText, sentences } from '../core/errors/sentence';

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

/** A job or worker option the module sets itself: why (`reasons[key]`), and the ones that may be set. */
function reservedOption(
  kind: 'job' | 'worker',
  path: string,
  key: string,
  allowed: readonly string[],
  reasons: Readonly<Record<string, string>>,
): string {
  return sentences(
    `ReactorModule option '${path}' cannot be set` +
      (Object.hasOwn(reasons, key) ? reasons[key] : ` (it is not a ${kind} option the module lets through)`),
    `The ${kind} options you may set are ${allowed.join(', ')}.`,
  );
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
  asyncOptionsWithoutFactory: (given: readonly string[]): string =>
    'ReactorModule.forRootAsync() needs exactly one of useFactory (a function returning the module options), ' +
    'useClass or useExisting (a provider with createReactorOptions())' +
    (given.length > 1 ? `; it was given ${given.join(' and ')}` : '') +
    ', e.g. forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (config) => ({ ... }) }).',
  asyncFactoryReturnedGlobal: (): string =>
    "ReactorModule.forRootAsync(): the options factory returned 'global', which changes the module's shape and so cannot " +
    'come from an async factory. Pass it beside the factory instead: forRootAsync({ global: false, useFactory }).',
  asyncFactoryReturnedRuntime: (): string =>
    "ReactorModule.forRootAsync(): the options factory returned 'runtime', which changes the module's shape and so cannot " +
    "come from an async factory. Pass it beside the factory instead: forRootAsync({ runtime: 'redis', useFactory }).",
  runtimeMismatch: (runtime: 'embedded' | 'redis'): string =>
    runtime === 'redis'
      ? "ReactorModule.forRootAsync({ runtime: 'redis' }): the async options have no 'redis' option, so there is no " +
        'Redis to run on. Return { redis: { url } } (or { redis: { connection } }) from the factory (or createReactorOptions()), or drop ' +
        "runtime: 'redis' to run embedded."
      : "ReactorModule.forRootAsync(): the async options have a 'redis' option, but the module was declared with the " +
        "embedded runtime (the default). Pass runtime: 'redis' beside the factory: " +
        "forRootAsync({ runtime: 'redis', imports, inject, useFactory }).",
  sweepIntervalInvalid: (intervalMs: number, valid: string): string =>
    `ReactorModule option 'sweeper.intervalMs' is ${intervalMs}, which is not a clock-aligned cron interval. ` +
    `Use one of: ${valid} (in milliseconds: 1000 ... 30000, 60000 ... 3600000). ` +
    'For another schedule set sweeper.enabled: false and call ReactorClient.sweepOnce() from your own scheduler.',
  redisConnectionInvalid: (value: unknown): string =>
    `ReactorModule option 'redis.connection' must be an ioredis client (new Redis(...) or new Cluster(...)) ` +
    `(got ${show(value)}). Or pass { redis: { url } } and let the module create and close its own connections.`,
  redisConnectionRetries: (value: unknown, cluster: boolean): string =>
    `ReactorModule option 'redis.connection' has maxRetriesPerRequest ${show(value)}; BullMQ workers need null ` +
    '(they block on the connection). ' +
    (cluster
      ? 'Create the cluster with new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null } }) ' +
        '(see the README, "Redis Cluster").'
      : 'Create it with new Redis(url, { maxRetriesPerRequest: null }), or pass { redis: { url } } and let the ' +
        'module create its own connections.'),
  redisIsClusterNode: (option: 'redis.url' | 'redis.connection'): string =>
    `ReactorModule option '${option}' reaches a Redis Cluster node (INFO cluster says cluster_enabled:1) through a ` +
    'single-node connection: every key of another slot would fail with MOVED. Give the module the cluster: ' +
    '{ redis: { connection: new Cluster([{ host, port }, ...], { redisOptions: { maxRetriesPerRequest: null }, ' +
    'retryDelayOnTryAgain: 100, maxRedirections: 64 }) } }; the application closes it after app.close() ' +
    '(see the README, "Redis Cluster").',
  shardsChanged: (prefix: string, stored: string, configured: number): string =>
    `ReactorModule option 'shards' is ${configured}, but the deployment under prefix '${prefix}' was made with ` +
    `${stored} shards: runs are placed by shard, so with another count the existing ones could no longer be ` +
    `found. Set shards: ${stored} (the count is fixed per deployment), or use a new prefix for a new deployment.`,
  redisRuntimeStarted: (prefix: string, queue: string, bullPrefix: string, workers: boolean): string =>
    `Durable runtime on Redis and BullMQ: keys under '${prefix}', BullMQ queue '${queue}' (prefix '${bullPrefix}'), ` +
    (workers ? 'this process runs workers.' : 'workers disabled in this process (workers: false): it only enqueues.'),
  redisUnreachable: (timeoutMs: number, error: unknown, target?: string, option?: string): string =>
    sentences(
      `Redis did not answer a PING within ${timeoutMs} ms at application bootstrap` +
        (target || error
          ? ` (${[target && `at ${target}`, error && errorText(error)].filter(Boolean).join(': ')})`
          : ''),
      option === 'redis.url'
        ? 'Start Redis there, or fix ReactorModule option redis.url (the URL above, with its credentials hidden)'
        : option === 'redis.connection'
          ? 'Start Redis there, or fix the connection given as ReactorModule option redis.connection'
          : 'Start Redis, or fix ReactorModule option redis (url or connection)',
      'connectTimeoutMs sets how long the bootstrap waits.',
    ),
  redisClientError: (error: unknown): string =>
    `Redis connection error (nest-reactor storage client): ${(error as Error)?.message ?? String(error)}`,
  redisConnectionError: (source: string, target: string, error: unknown): string =>
    sentences(
      `Redis connection error (nest-reactor ${source}, ${target}): ${errorText(error)}`,
      'The module keeps reconnecting; the same error from its other connections (storage, BullMQ queues and ' +
        'workers) is not logged again until a connection is back.',
    ),
  redisConnectionBack: (target: string): string => `Redis connection back (nest-reactor, ${target}).`,
  evictionPolicy: (policy: string, where: string, fatal: boolean): string =>
    sentences(
      `Redis${where} has maxmemory-policy '${policy}', not 'noeviction': when it reaches maxmemory it evicts keys ` +
        'silently, and an evicted BullMQ job, lease or run record is a run lost or executed twice',
      "Set maxmemory-policy noeviction (redis.conf, CONFIG SET maxmemory-policy noeviction, or your provider's " +
        'parameter group) and size maxmemory for your runs (docs/redis-in-production.md)',
      fatal
        ? 'The boot fails because ReactorModule option redis.requireNoEviction is true.'
        : 'Set ReactorModule option redis.requireNoEviction: true to fail the boot instead of this warning.',
    ),
  evictionPolicyUnchecked: (error: unknown): string =>
    sentences(
      `The Redis eviction policy was not checked: INFO memory was refused or did not say (${errorText(error)})`,
      'Make sure maxmemory-policy is noeviction (docs/redis-in-production.md).',
    ),
  evictionPolicyUnknownRequired: (error: unknown): string =>
    sentences(
      `ReactorModule option redis.requireNoEviction is true, but the Redis eviction policy could not be read: INFO ` +
        `memory was refused or did not say (${errorText(error)})`,
      "Allow INFO for the module's user, or drop requireNoEviction and make sure maxmemory-policy is noeviction.",
    ),
  jobOptionReserved: (path: string, key: string, allowed: readonly string[]): string =>
    reservedOption('job', path, key, allowed, {
      jobId: ': job ids de-duplicate recovery jobs (the sweeper) and are chosen by the module',
      delay: ': delays carry snoozes and retry backoffs and are chosen by the module',
      attempts: ': use jobRetryCount (BullMQ retries of a job whose handling hit an infrastructure error)',
      backoff: ": the backoff between those retries is the module's (exponential from one second)",
      priority: ": use @Reactor(name, { priority }) (and { queue } for a queue of the reactor's own)",
      lifo: ': jobs of a queue are taken in order',
      repeat: ': runs are started by ReactorClient; repeat them from your own scheduler',
      parent: ': jobs of the module belong to no flow',
    }),
  workerOptionReserved: (path: string, key: string, allowed: readonly string[]): string =>
    reservedOption('worker', path, key, allowed, {
      concurrency: ': use workerConcurrency (the default queue) or @Reactor(name, { queue, concurrency })',
      autorun: ': workers start at application bootstrap and stop at shutdown',
      connection: ': the workers use ReactorModule option redis',
      prefix: ': the workers use ReactorModule option prefix',
    }),
  bullConfigKeyMissing: (configKey: string): string =>
    `ReactorModule option 'bullmq.configKey' is '${configKey}', but no BullMQ configuration is registered under ` +
    `that key. Register it with BullModule.forRoot('${configKey}', { ... }) (or forRootAsync('${configKey}', { ... })) ` +
    "in your application module, or drop bullmq.configKey to use the module's own configuration only.",
  bullConfigKeyConnection: (configKey: string): string =>
    `BullMQ configuration '${configKey}' (ReactorModule option bullmq.configKey): its connection and prefix are not ` +
    "used by nest-reactor's queues, which take ReactorModule options redis and prefix.",
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
    sentences(
      `Run '${runId}' was still executing when its worker shut down and then failed: ${errorText(error)}`,
      'The sweeper will re-enqueue it from its last checkpoint.',
    ),
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

  // Health (nest-reactor/health)
  healthEmbedded: (): string =>
    "Embedded runtime: runs, leases and jobs live in this process's memory (not durable); there is no Redis, " +
    'queue or sweeper to check.',
  healthOptionInvalid: (option: string, value: unknown): string =>
    `ReactorHealthIndicator.isHealthy(): option ${option} must be a number of 0 or more (got ${show(value)}).`,
  healthRedisUnreachable: (timeoutMs: number, error: unknown): string =>
    `Redis did not answer a PING within ${timeoutMs} ms` +
    (error ? ` (${(error as Error)?.message ?? String(error)})` : '') +
    ': runs can be neither started nor advanced from this process. Check that Redis is up and reachable ' +
    '(ReactorModule option redis).',
  healthWorkersNotRunning: (workers: string): string =>
    `The nest-reactor BullMQ worker is not running (${workers}): this process takes no jobs, so background runs ` +
    'do not advance here. Workers start at application bootstrap and stop at shutdown; look for a logged worker ' +
    'error, or set workers: false for a producer-only process.',
  healthSweeperNotScheduled: (): string =>
    'The recovery sweeper is enabled but not scheduled (see the warning logged at bootstrap), so runs whose ' +
    'worker died are not recovered. Import ScheduleModule.forRoot() once in your application module, or set ' +
    'sweeper: { enabled: false } and call ReactorClient.sweepOnce() from your own cron.',
  healthSweepTooOld: (ageMs: number, maxAgeMs: number, swept: boolean): string =>
    `${swept ? 'The last recovery sweep finished' : 'No recovery sweep has finished since the sweeper started,'} ` +
    `${ageMs} ms ago, more than maxSweepAgeMs (${maxAgeMs} ms): runs whose worker died wait to be recovered. ` +
    'Look for logged sweep failures (Redis errors), or a sweep that runs too long.',
  healthBacklog: (waiting: number, maxBacklog: number): string =>
    `${waiting} job${waiting === 1 ? ' is' : 's are'} waiting for a worker, more than maxBacklog (${maxBacklog}): ` +
    'the workers do not keep up. Add processes or raise workerConcurrency, or look for slow steps.',
  healthOptionNotBoolean: (option: string, value: unknown): string =>
    `ReactorHealthIndicator.isHealthy(): option ${option} must be true or false (got ${show(value)}).`,
  healthEvictionPolicy: (policy: string, required: boolean): string =>
    sentences(
      `Redis has maxmemory-policy '${policy}', not 'noeviction': a full Redis evicts jobs, leases and run records ` +
        'silently',
      'Set maxmemory-policy noeviction (docs/redis-in-production.md)',
      required
        ? 'Reported as down because requireNoEviction is set.'
        : 'Reported as a warning; pass requireNoEviction: true to report it as down.',
    ),
  healthQueueUnanswered: (timeoutMs: number, error: unknown): string =>
    `The BullMQ queue did not report its job counts within ${timeoutMs} ms` +
    (error ? ` (${(error as Error)?.message ?? String(error)})` : '') +
    '. Check that Redis is up and reachable (ReactorModule option redis).',

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
  constructorMetadataMissing: (
    kind: 'step' | 'reactor' | 'listener',
    name: string | undefined,
    target: Named,
    parameters: number,
    uncovered: readonly number[],
  ): string =>
    `${kind === 'step' ? `Step '${name}'` : kind === 'reactor' ? `Reactor '${name}'` : '@OnReactorEvent listener'} ` +
    `(class ${className(target)}) has ${parameters} constructor parameter${parameters === 1 ? '' : 's'} but no ` +
    "type metadata ('design:paramtypes'), so Nest would construct it with undefined dependencies and every " +
    'use would fail with "TypeError: Cannot read properties of undefined". Enable "emitDecoratorMetadata": true ' +
    '(with "experimentalDecorators": true) in the tsconfig that compiles it, and compile with a tool that emits ' +
    'the metadata (tsc, ts-jest, SWC; esbuild and plain Vite/Vitest do not: for Vitest add unplugin-swc), or name ' +
    `the token of each parameter with @Inject(Token) (parameter${uncovered.length === 1 ? '' : 's'} ` +
    `${uncovered.join(', ')} ${uncovered.length === 1 ? 'has' : 'have'} none).`,
  listenerMaxInFlightInvalid: (where: string, value: unknown): string =>
    `@OnReactorEvent on ${where}: option 'maxInFlight' must be an integer >= 1 (got ${show(value)}); it bounds the ` +
    'calls of the listener pending at once (default 100).',
  listenerFailed: (listener: string, event: string, runId: string, reactor: string, error: unknown): string =>
    `@OnReactorEvent listener ${listener} failed on '${event}' (run '${runId}', reactor '${reactor}'): ` +
    `${(error as Error)?.message ?? String(error)}. The run is not affected; catch the error in the listener ` +
    'to handle it there.',
  listenerEventsDropped: (listener: string, dropped: number, total: number, maxInFlight: number): string =>
    `@OnReactorEvent listener ${listener} had ${maxInFlight} calls pending (its maxInFlight), so ${dropped} ` +
    `event${dropped === 1 ? ' was' : 's were'} not delivered to it since the last report (${total} since boot). ` +
    'Its calls take longer than events arrive, or some never settle: give the work inside it a timeout, hand ' +
    'slow work to a queue, or raise the bound: @OnReactorEvent(..., { maxInFlight }).',

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
  scheduleTickFailed: (scheduleId: string, at: number, error: unknown): string =>
    `The tick of schedule '${scheduleId}' due at ${new Date(at).toISOString()} failed: ${(error as Error)?.stack ?? String(error)}`,

  // Testing kit
  testingOptionUnsupported: (option: string): string =>
    `ReactorTestingModule.forRoot(): the '${option}' option is not for the testing module, which always runs ` +
    `the embedded runtime on its own TestClock (pass { clock: new TestClock(start) } to choose the start time). ` +
    `To test a Redis setup, import ReactorModule.forRoot({ redis }) instead.`,
  testingStepNotMockable: (stepClass: Named): string =>
    `ReactorTestingKit.mockStep(): ${className(stepClass)} is not a @Step class. Pass the class a reactor uses ` +
    `in r.step(...), decorated with @Step and listed in the testing module's providers.`,
  testingStepNotProvided: (stepClass: Named): string =>
    `ReactorTestingKit.mockStep(): no provider ${className(stepClass)} in the testing module. Add it to the ` +
    `providers of Test.createTestingModule (or override it there with overrideProvider(...).useValue(...)).`,
  testingStepNameUnknown: (name: string, suggestion: string, known: readonly string[]): string =>
    `ReactorTestingKit.mockStep(): no @Step named '${name}' in the testing module.${suggestion} ` +
    `@Step names: ${known.length > 0 ? known.join(', ') : '(none)'}. Pass a @Step name (the one in @Step('...'), ` +
    "not the step's name in a reactor) or the step class.",
  testingReactorNotMockable: (reactorClass: Named): string =>
    `ReactorTestingKit.mockReactor(): ${className(reactorClass)} is not a @Reactor class. Pass the class used in ` +
    `r.compose(...) (decorated with @Reactor and listed in the testing module's providers), or its name.`,
  testingReactorNameUnknown: (name: string, suggestion: string, known: readonly string[]): string =>
    `ReactorTestingKit.mockReactor(): no reactor named '${name}' is registered in the testing module.${suggestion} ` +
    `Registered: ${known.join(', ') || '(none)'}.`,
  testingReactorFakeWithoutRun: (name: string): string =>
    `ReactorTestingKit.mockReactor('${name}', fake): the fake needs a run(inputs, ctx) method returning the ` +
    `reactor's outcome (success(value), failure(error), halt(reason)).`,
  testingAdvanceInvalid: (ms: unknown): string =>
    `ReactorTestingKit.advance(): the time to move must be a number of milliseconds >= 0 (got ${show(ms)}).`,
  testingTimersRunaway: (limit: number): string =>
    `ReactorTestingKit.runAllTimers(): ${limit} timers fired and more keep coming (a run that keeps snoozing, ` +
    `retrying or polling?). Move time by a bounded amount with kit.advance(ms), or pass a higher { limit }.`,
  // Queue routing (@Reactor queue, concurrency, priority)
  reactorQueueOptionInvalid: (reactor: string, field: 'queue' | 'concurrency' | 'priority', value: unknown): string =>
    `Reactor '${reactor}': option '${field}' must be ` +
    {
      queue: "a queue name of letters, digits, '.', '_' or '-' (BullMQ refuses ':'), e.g. queue: 'slow'",
      concurrency: "an integer >= 1 (jobs the queue's worker runs at once in each process)",
      priority: 'an integer from 1 (highest) to 2097152, as BullMQ job priorities are',
    }[field] +
    ` (got ${show(value)}).`,
  reactorQueueNameReserved: (reactor: string, name: string): string =>
    `Reactor '${reactor}': queue '${name}' is the module's default queue. Omit the queue option to use it ` +
    '(its worker concurrency is ReactorModule.forRoot({ workerConcurrency })), or name a queue of its own.',
  reactorConcurrencyWithoutQueue: (reactor: string): string =>
    `Reactor '${reactor}': option 'concurrency' sets the worker concurrency of the reactor's own queue, and it ` +
    "has none. Add queue: 'some-name' beside it, or drop it (the default queue's worker runs " +
    'ReactorModule.forRoot({ workerConcurrency }) jobs at once).',
  reactorQueueConcurrencyConflict: (queue: string, first: string, a: number, second: string, b: number): string =>
    `Reactors '${first}' and '${second}' share queue '${queue}' but declare different concurrency (${a} and ${b}). ` +
    'A queue has one worker: give both the same concurrency, set it on one of them only, or use two queues.',
  namedWorkersStarted: (queues: ReadonlyArray<{ name: string; concurrency: number }>): string =>
    `Reactor queues with their own worker: ${queues.map((q) => `'${q.name}' (concurrency ${q.concurrency})`).join(', ')}.`,
  shutdownAbortedSteps: (aborted: number, left: number, graceMs: number): string =>
    `Shutdown: ${aborted} run${aborted === 1 ? '' : 's'} still executing after shutdownGraceMs (${graceMs} ms); ` +
    "their steps' ctx.signal was aborted (cause 'shutdown'), and a stopped run gives its lease back and is handed to another worker (Redis runtime). " +
    (left > 0
      ? `${left} did not stop within another ${graceMs} ms (a step ignores its signal); its lease expires after leaseTtlMs.`
      : 'All of them stopped.'),
  // Dashboard (nest-reactor/dashboard)
  dashboardWithoutGuard: (nodeEnv: string | undefined): string =>
    `ReactorDashboardModule.forRoot(): no guard, and NODE_ENV is ${show(nodeEnv ?? '(unset)')}. The dashboard can ` +
    'cancel, undo and retry runs, so it refuses to mount unguarded outside development. Pass your auth guard: ' +
    "forRoot({ path: 'reactor', guard: AdminGuard }) (a CanActivate class or instance); only with " +
    'NODE_ENV=development does it mount without one.',
  dashboardUnguardedInDevelopment: (path: string): string =>
    `The reactor dashboard at '/${path}' has no guard (allowed because NODE_ENV=development): anyone who can reach ` +
    'this port can cancel, undo and retry runs. Pass forRoot({ guard }) before deploying.',
  dashboardOptionInvalid: (option: string, expected: string, value: unknown): string =>
    `ReactorDashboardModule.forRoot(): '${option}' must be ${expected} (got ${show(value)}).`,
};
