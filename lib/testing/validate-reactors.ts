import { Logger, Module, type DynamicModule, type Provider, type Type } from '@nestjs/common';
import { DiscoveryService, ModulesContainer, NestFactory } from '@nestjs/core';
import { DefinitionError, ReactorEngine, getReactorMetadata, systemClock, type RateLimits } from '../core';
import { REACTOR_OPTIONS, type ReactorRuntime, type ResolvedReactorModuleOptions } from '../config';
import { ReactorExplorer } from '../nest/reactor.explorer';
import { ReactorListeners } from '../nest/reactor-listeners';
import { ReactorRegistry } from '../nest/reactor.registry';
import { InProcessJobDispatcher } from '../runtime/in-process-job.dispatcher';
import { createMemoryAdapters } from '../storage/memory/create-memory-adapters';

/** What {@link validateReactors} checked: the reactors and `@Step` names it found (all valid). */
export interface ReactorValidationReport {
  /** The names of the `@Reactor` providers found, sorted. */
  reactors: string[];
  /** The names of the `@Step` providers found, sorted. */
  steps: string[];
  /**
   * Whether the module options (rate limit names, `inputCipher`) were known: `forRoot(options)` and
   * `ReactorTestingModule.forRoot(options)` give them; `forRootAsync` builds them at boot, so
   * unknown rate limit names and a missing cipher are not checked then.
   */
  optionsChecked: boolean;
}

/** Options of {@link validateReactors}. */
export interface ValidateReactorsOptions {
  /**
   * Refuse a module that does not import `ReactorModule` (or `ReactorTestingModule`): its reactors
   * would never be registered. @default true for a module, false for a list of providers
   */
  requireReactorModule?: boolean;
}

type ModuleLike = Type<unknown> | DynamicModule;

/** A module holding the providers given as a list. */
@Module({})
class ValidatedProviders {}

// NOTE: the messages of this check live here rather than in lib/config/reactor.messages.ts: they
// name only this function, and the boot's own errors (which it rethrows) are that file's.
const MESSAGES = {
  badTarget: (received: unknown): string =>
    `validateReactors(): expected the application's module (validateReactors(AppModule)) or a list of providers ` +
    `(validateReactors([CheckoutReactor, ChargePayment, PaymentsService])), received ${describe(received)}.`,
  noReactorModule: (name: string): string =>
    `validateReactors(${name}): ${name} does not import ReactorModule (forRoot or forRootAsync) or ` +
    `ReactorTestingModule, directly or through another module, so its @Reactor providers would never be ` +
    `registered. Import it, or pass { requireReactorModule: false }.`,
  noReactors: (name: string): string =>
    `validateReactors(${name}): found no @Reactor provider. Pass the module that provides your reactors ` +
    `(the application's root module), or list them.`,
  resolveFailed: (name: string, error: unknown): string =>
    `validateReactors(${name}): Nest could not resolve the module graph: ${
      error instanceof Error ? error.message : String(error)
    }`,
};

/**
 * Check every reactor definition of an application without starting it, for CI: the checks the
 * module runs at boot (`app.init()`), and nothing else. Resolves with what it found; rejects with
 * the boot's own `DefinitionError` (or `ConfigurationError`) naming the reactor and step: a cycle,
 * an unknown step name, a duplicate name, an unwired contract input, a step class that is no
 * `@Step` provider, a composed reactor that is not registered, a request-scoped step, a class
 * compiled without decorator metadata, a bad queue option, a rate limit the module does not
 * register, ...
 *
 * ```ts
 * // test/reactors.spec.ts: one line in your suite
 * it('has valid reactor definitions', () => validateReactors(AppModule));
 * ```
 *
 * The module graph is read with Nest's preview mode (`NestFactory.createApplicationContext(module,
 * { preview: true })`): Nest resolves every provider's dependencies (a missing one fails here as at
 * boot) but constructs nothing, so no connection is opened (Redis, a database) and no factory runs.
 * Each reactor's `build()` is called on an instance made without its constructor (as Nest's preview
 * makes it), so a `build()` that reads an injected dependency fails here: keep `build()` to wiring.
 *
 * A list of providers is read as a module of those providers (their dependencies listed too, as in
 * any Nest module), and does not need `ReactorModule`.
 *
 * @throws DefinitionError | ConfigurationError what the boot would throw; an `Error` when Nest
 * cannot resolve the module graph, when the module does not import `ReactorModule`, or when no
 * reactor was found (a check that found nothing proves nothing)
 */
export async function validateReactors(
  target: ModuleLike | readonly Provider[],
  options: ValidateReactorsOptions = {},
): Promise<ReactorValidationReport> {
  const isList = Array.isArray(target);
  if (!isList && !isModuleLike(target)) throw new TypeError(MESSAGES.badTarget(target));
  const root: ModuleLike = isList
    ? { module: ValidatedProviders, providers: [...(target as readonly Provider[])] }
    : (target as ModuleLike);
  const name = isList ? 'providers' : moduleName(root);
  const requireReactorModule = options.requireReactorModule ?? !isList;

  let context;
  // NOTE: `logger: false` replaces Nest's global logger (Logger.overrideLogger), and nothing puts it
  // back when the context closes: the app's own logger is restored here, so the check stays silent
  // and leaves the rest of the test file's logging as it was.
  const logging = Logger as unknown as { staticInstanceRef?: unknown };
  const appLogger = logging.staticInstanceRef;
  try {
    context = await NestFactory.createApplicationContext(root, { preview: true, abortOnError: false, logger: false });
  } catch (error) {
    logging.staticInstanceRef = appLogger;
    if (error instanceof DefinitionError) throw error;
    const wrapped = new Error(MESSAGES.resolveFailed(name, error));
    wrapped.cause = error;
    throw wrapped;
  }
  try {
    const modules = context.get(ModulesContainer);
    const wrappers = [...modules.values()].flatMap((m) => [...m.providers.values()]);
    if (requireReactorModule && !wrappers.some((w) => w.token === ReactorExplorer))
      throw new Error(MESSAGES.noReactorModule(name));
    const moduleOptions = knownModuleOptions(wrappers);

    const clock = systemClock;
    const adapters = createMemoryAdapters(clock, {
      // NOTE: unknown options (forRootAsync) accept encryptInputs: the cipher is configuration.
      inputCipher: moduleOptions === undefined || moduleOptions.inputCipher ? PLACEHOLDER_CIPHER : undefined,
    });
    const registry = new ReactorRegistry();
    const engine = new ReactorEngine({
      ...adapters,
      dispatcher: new InProcessJobDispatcher(clock),
      clock,
      resolver: registry,
      rateLimits: moduleOptions?.rateLimits ?? everyRateLimitUsed(wrappers),
    });
    const runtime = { kind: 'embedded', routeJobs: () => undefined } as unknown as ReactorRuntime;
    const explorer = new ReactorExplorer(
      new DiscoveryService(modules),
      engine,
      registry,
      runtime,
      new ReactorListeners(clock),
    );
    explorer.explore();

    const reactors = engine.reactorNames().sort();
    if (reactors.length === 0) throw new Error(MESSAGES.noReactors(name));
    return { reactors, steps: registry.stepNames().sort(), optionsChecked: moduleOptions !== undefined };
  } finally {
    await context.close().catch(() => undefined);
    logging.staticInstanceRef = appLogger;
  }
}

/**
 * With `forRootAsync` the registered rate limits are only known at boot: every name a `@Reactor`
 * uses counts as registered.
 */
function everyRateLimitUsed(
  wrappers: ReadonlyArray<{ token: unknown; metatype: unknown }>,
): Record<string, RateLimits> {
  const names = new Set<string>();
  for (const { token, metatype } of wrappers) {
    for (const candidate of [token, metatype]) {
      const rateLimit = typeof candidate === 'function' ? getReactorMetadata(candidate)?.rateLimit : undefined;
      if (typeof rateLimit === 'string') names.add(rateLimit);
    }
  }
  return Object.fromEntries([...names].map((name) => [name, { second: 1 }]));
}

/** Stands for the configured cipher; never called (nothing is stored). */
const PLACEHOLDER_CIPHER = {
  encrypt: (): never => {
    throw new Error('validateReactors stores nothing');
  },
  decrypt: (): never => {
    throw new Error('validateReactors stores nothing');
  },
} as unknown as NonNullable<ResolvedReactorModuleOptions['inputCipher']>;

/**
 * The module options when they are known without running anything: `ReactorModule.forRoot(options)`
 * provides them with a factory that takes no dependencies (`() => resolved`). Undefined for
 * `forRootAsync` (its factory needs what the app injects) and when there is no module.
 */
function knownModuleOptions(
  wrappers: ReadonlyArray<{ token: unknown; metatype: unknown; inject?: unknown }>,
): ResolvedReactorModuleOptions | undefined {
  const found = wrappers.find((w) => w.token === REACTOR_OPTIONS);
  if (!found || typeof found.metatype !== 'function') return undefined;
  if (Array.isArray(found.inject) && found.inject.length > 0) return undefined;
  return (found.metatype as () => ResolvedReactorModuleOptions)();
}

function isModuleLike(value: unknown): value is ModuleLike {
  if (typeof value === 'function') return true;
  return value !== null && typeof value === 'object' && typeof (value as DynamicModule).module === 'function';
}

function moduleName(module: ModuleLike): string {
  return typeof module === 'function' ? module.name : module.module.name;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return `an object with keys ${Object.keys(value).join(', ') || '(none)'}`;
  return `${typeof value} ${String(value)}`;
}
