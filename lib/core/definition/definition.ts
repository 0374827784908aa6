import type {
  CoordinationSpec,
  LockOptions,
  OrderedLockOptions,
  PeriodOptions,
  RateLimitOptions,
  SemaphoreOptions,
  StepCoordinationSpec,
} from './coordination-spec';
import type { InterruptSpec } from './interrupt-spec';
import type { ReactorEventTrigger } from './event-spec';
import type { ReactorMiddleware } from '../middleware/events';
import type { StepContract } from './contract-spec';
import type { ArgSource } from './ref';
import type { InputDefinition } from './input-spec';
import type { StepClass, StepContext, StepHandler } from './step';
import type { MapResults } from '../results/map-results';
import type { RetryPolicy } from './retry-policy';
import type { ReactorScheduleOption } from './schedule-spec';
import type { BatchOptions, DebounceOptions, FlowConcurrencyOptions, FlowSpec, ThrottleOptions } from './flow-spec';

/**
 * The handler spec of each step kind, by kind. `name` is stable (it goes into the definition
 * hash). A kind declared in its own file adds its spec here by declaration merging, next to its
 * implementation (`declare module '../definition/definition' { interface HandlerSpecs { ... } }`),
 * and registers the implementation in `steps/index.ts`, which refuses to compile until it does.
 */
export interface HandlerSpecs {
  /** A step class, resolved through the StepResolver (the Nest container in an app). */
  class: { kind: 'class'; stepClass: StepClass<never, unknown>; name: string };
  /** A handler object or an inline function, used as is. */
  inline: { kind: 'inline'; handler: StepHandler<never, unknown>; name: string };
  /** A composed child reactor, resolved by name. */
  compose: { kind: 'compose'; reactorName: string; name: string };
  /** A map of an element reactor over a collection. */
  map: { kind: 'map'; name: string; map: MapSpec };
  /**
   * An async unit: a reactor run dispatched to its own job (`asyncReactor`), or a step run that way
   * (`asyncStep`, as a one-step reactor `inlineUnit`). Readers of its value wait for it.
   */
  async: { kind: 'async'; name: string; reactorName: string; inlineUnit?: ReactorDefinition };
  /** A pause until the outside world answers (`client.continue`); its value is the payload. */
  interrupt: { kind: 'interrupt'; name: 'interrupt'; interrupt: InterruptSpec };
}

/** How a step's handler is found at run time: one of {@link HandlerSpecs}. */
export type HandlerSpec = HandlerSpecs[keyof HandlerSpecs];

/** How a map step maps its element reactor over its source. */
export interface MapSpec {
  /** A ref to the collection, or a function of the step's args returning it. */
  readonly source: ArgSource | ((args: Record<string, unknown>, ctx: StepContext) => unknown);
  /** The element reactor's name. */
  readonly elementReactor: string;
  /** The element reactor, when declared inline (registered with its parent). */
  readonly inlineElement?: ReactorDefinition;
  /** Element reactor input name to source (`element` sources read the current element). */
  readonly inputs: Readonly<Record<string, ArgSource>>;
  /** Inline: elements run at once. */
  readonly concurrency: number;
  /** Stop at the first failure (true) or run every element (false). */
  readonly atomic: boolean;
  /** Element jobs, at most `batchSize` elements in flight, `elementsPerJob` elements per job. */
  readonly fanOut?: { readonly batchSize: number; readonly elementsPerJob: number };
  readonly collect?: (results: MapResults<unknown>) => unknown;
  readonly undoAll?: (completed: AsyncIterable<{ index: number; value: unknown }>) => unknown;
}

/** One node of a reactor's DAG. Immutable. */
export interface StepDefinition {
  readonly name: string;
  /** Declaration order (0-based). */
  readonly index: number;
  readonly handler: HandlerSpec;
  /** Argument name to source. */
  readonly args: Readonly<Record<string, ArgSource>>;
  /** Ordering-only dependencies. */
  readonly waitFor: readonly string[];
  /** Every step this one depends on (results read plus waitFor), deduplicated. */
  readonly dependsOn: readonly string[];
  /**
   * The steps whose results this one reads (its arguments; a map's source and element inputs),
   * deduplicated. A step that only waits for an async unit (`waitFor`) starts once it is dispatched;
   * one that reads it waits for its end.
   */
  readonly reads: readonly string[];
  readonly retries: RetryPolicy;
  readonly input?: StepContract;
  readonly output?: StepContract;
  /** Argument names redacted in traces and failures (declared, or wired from redacted inputs). */
  readonly redact: readonly string[];
  /** The step's own lock and semaphore, around its body, undo and compensate. */
  readonly coordination?: StepCoordinationSpec;
}

/** Where the background hand-off of a reactor is. */
export type BackgroundOption = { all: true } | { after: string } | { before: string };

/** Reactor-level options (the second argument of `@Reactor`). */
export interface ReactorOptions {
  /**
   * How many ready steps may run at once. 1 reproduces ruby_reactor's order (level by level, in
   * declaration order). @default 8
   */
  maxConcurrency?: number;
  /** Move the run, or the part after/before a step, to a background worker. */
  background?: BackgroundOption;
  description?: string;
  /**
   * The reactor's version, stored with each run. Register the old and the new version side by
   * side during a deploy: new runs take the highest version, and a run resumes under the version
   * it started with, until the old version's runs drain. @default '1'
   */
  version?: string | number;
  /**
   * Middleware of this reactor's runs, after the module's global middleware (the reference's
   * order). An instance is shared by every run; a class is instantiated (without arguments) once
   * per execution, for middleware that keeps per-run state.
   */
  middleware?: ReadonlyArray<ReactorMiddlewareEntry>;
  /**
   * Encrypt where this reactor's runs store their inputs in clear (the inputs, the arguments kept
   * for undo, composed children and map elements, which inherit it), with the module's
   * `inputCipher`; a module without one refuses to boot. Results, the trace and the failure are
   * not encrypted: mark secret inputs `redact: true` so they are shown only as `[REDACTED]`.
   * @default false
   */
  encryptInputs?: boolean;
  /** An exclusive lock per key over each run (held while it executes; re-entrant within the run). */
  lock?: LockOptions;
  /** At most `limit` runs executing at once per key (each holder leased, so a crash returns its slot). */
  semaphore?: SemaphoreOptions;
  /** Runs started per window: a name registered in `ReactorModule.forRoot({ rateLimits })`, or `{ key, limits }`. */
  rateLimit?: RateLimitOptions;
  /** Once per UTC minute / hour / day / week / month per key: a second run in the bucket halts with reason `period`. */
  period?: PeriodOptions;
  /** Runs on a key apply strictly in start order (see {@link OrderedLockOptions}). */
  orderedLock?: OrderedLockOptions;
  /**
   * The BullMQ queue of this reactor's jobs (Redis runtime): each named queue gets its own worker,
   * so a slow reactor saturating its queue cannot starve the others. Letters, digits, `.`, `_` and
   * `-`. Every job of the reactor's runs goes there: background hand-offs, resumes, retries,
   * snoozes, map elements and collectors, its async units, recovery. The embedded runtime ignores
   * it. @default the module's queue ('nest-reactor')
   */
  queue?: string;
  /**
   * A number: jobs the worker of this reactor's {@link queue} runs at once in each process (not
   * steps: see {@link maxConcurrency}); needs `queue`, and reactors sharing a queue give the same
   * value or none (@default the module's `workerConcurrency`).
   *
   * An object, `{ key, limit, maxQueued? }`: flow control, at most `limit` live runs per key, the
   * others queued in start order and started fairly (see {@link FlowConcurrencyOptions} and
   * docs/flow-control.md).
   */
  concurrency?: number | FlowConcurrencyOptions;
  /** At most `limit` starts per `periodMs` per key; the others are delayed to a later window (see {@link ThrottleOptions}). */
  throttle?: ThrottleOptions;
  /** Starts of a key within `periodMs` collapse into one run with the last inputs (see {@link DebounceOptions}). */
  debounce?: DebounceOptions;
  /** Starts of a key are collected into one run of `{ items }` (see {@link BatchOptions}). */
  batch?: BatchOptions;
  /**
   * BullMQ priority of this reactor's jobs in its queue: 1 is the highest, up to 2 097 152. As in
   * BullMQ, jobs with no priority are taken before prioritized ones. @default none
   */
  priority?: number;
  /**
   * Start a run on each event of this name (`client.emit(event, payload, { id })`): its inputs are
   * `input(payload)` (default: the payload), and `match(payload)` may refuse an event. An event
   * `id` starts at most one run of the reactor (its idempotency key is derived from it).
   */
  on?: ReactorEventTrigger;
  /** Start a run on a cron pattern or an interval (see {@link ReactorScheduleOption}). */
  schedule?: ReactorScheduleOption;
}

/**
 * Where a reactor's jobs go, as declared (`queue`, `concurrency`, `priority` of
 * {@link ReactorOptions}); validated at boot by the runtime that routes jobs.
 */
export interface ReactorRouting {
  readonly queue?: string;
  readonly concurrency?: number;
  readonly priority?: number;
}

/** A reactor's middleware: an instance, or a class instantiated per execution. */
export type ReactorMiddlewareEntry = ReactorMiddleware | (new () => ReactorMiddleware);

/**
 * A validated, immutable reactor definition: inputs, steps in declaration order, and the ref the
 * run returns. Built by {@link defineReactor} or from a `@Reactor` class; the same structure either
 * way. `I` is the input type and `O` the result type.
 */
export interface ReactorDefinition<I = unknown, O = unknown> {
  readonly name: string;
  readonly inputs: readonly InputDefinition[];
  readonly steps: readonly StepDefinition[];
  readonly stepsByName: ReadonlyMap<string, StepDefinition>;
  /** The returned ref; absent means the run's value is the map of all results. */
  readonly returns?: ArgSource;
  readonly maxConcurrency: number;
  readonly background?: BackgroundOption;
  readonly description?: string;
  /** The reactor's version (see {@link ReactorOptions.version}). */
  readonly version: string;
  /** This reactor's own middleware (see {@link ReactorOptions.middleware}). */
  readonly middleware: readonly ReactorMiddlewareEntry[];
  /** Whether runs store their inputs encrypted (see {@link ReactorOptions.encryptInputs}). */
  readonly encryptInputs: boolean;
  /** Locks, semaphores, rate limits and periods of the reactor's runs. */
  readonly coordination?: CoordinationSpec;
  /** The queue, worker concurrency and priority of the reactor's jobs, when it declares any (not part of {@link hash}). */
  readonly routing?: ReactorRouting;
  /** The event that starts runs of the reactor (see {@link ReactorOptions.on}; not part of {@link hash}). */
  readonly trigger?: ReactorEventTrigger;
  /** Flow control of the reactor's starts: concurrency per key, throttle, debounce, batch (not part of {@link hash}). */
  readonly flow?: FlowSpec;
  /** Stable hash of the definition's shape; stored with each run. */
  readonly hash: string;
  /** @internal phantom types. */
  readonly __types?: { input: I; output: O };
}
