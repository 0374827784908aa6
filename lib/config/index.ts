/**
 * What every layer around the engine shares about the ReactorModule, and nothing that runs: the
 * module options and their resolved form, the injection tokens they and the runtime's adapters
 * are provided under, the runtime contract the options select (and the worker host a runtime may
 * be given), and the user-facing messages. `nest/`, `runtime/`, `queue/` and `sweepers/` import
 * it; it imports none of them (only `core`), so it is the floor they all stand on.
 *
 * ```ts
 * constructor(@Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime) {}
 * ```
 */
export type {
  ReactorModuleOptions,
  ReactorModuleAsyncOptions,
  ReactorAsyncModuleOptions,
  ReactorOptionsFactory,
  ReactorRedisOptions,
  ReactorBullMqOptions,
  ReactorJobOptions,
  ReactorWorkerOptions,
  ReactorSweeperOptions,
  ReactorRetentionOptions,
  ReactorRuntimeKind,
  ResolvedReactorModuleOptions,
} from './reactor-module-options.interface';
export type { ReactorRuntime } from './reactor-runtime.interface';
export type { ReactorWorkerHost } from './reactor-worker-host.interface';
export {
  REACTOR_OPTIONS,
  REACTOR_RUNTIME,
  REACTOR_STORAGE,
  REACTOR_LOCKS,
  REACTOR_DISPATCHER,
  REACTOR_CLOCK,
  REACTOR_LOGGER_CONTEXT,
  REACTOR_MODULE_ID,
} from './reactor.constants';
export { messages } from './reactor.messages';
