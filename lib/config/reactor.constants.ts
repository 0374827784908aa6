/**
 * Injection tokens of the ReactorModule. Inject them to reach the runtime's adapters directly
 * (custom tooling, tests); application code normally needs only `ReactorClient`.
 *
 * ```ts
 * constructor(@Inject(REACTOR_STORAGE) private readonly storage: ReactorStorage) {}
 * ```
 */

/** The validated and defaulted module options ({@link ResolvedReactorModuleOptions}). */
export const REACTOR_OPTIONS = Symbol('nest-reactor:options');

/** The runtime in use (embedded or Redis): its adapters plus how to start and stop its workers. */
export const REACTOR_RUNTIME = Symbol('nest-reactor:runtime');

/** The runtime's `ReactorStorage`. */
export const REACTOR_STORAGE = Symbol('nest-reactor:storage');

/** The runtime's `LockManager`. */
export const REACTOR_LOCKS = Symbol('nest-reactor:locks');

/** The runtime's `JobDispatcher`. */
export const REACTOR_DISPATCHER = Symbol('nest-reactor:dispatcher');

/** The `Clock` every part of the module uses (the `clock` option, else the system clock). */
export const REACTOR_CLOCK = Symbol('nest-reactor:clock');

/** Nest logger context of the module's messages. */
export const REACTOR_LOGGER_CONTEXT = 'ReactorModule';

/** A random id per `forRoot`/`forRootAsync` call, so that each call is a distinct Nest module. */
export const REACTOR_MODULE_ID = Symbol('nest-reactor:module-id');
