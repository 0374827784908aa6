/**
 * Flow control of a reactor's starts, per key (a tenant, an account): fair concurrency queues,
 * throttle, debounce and batch. Declared on `@Reactor` / `defineReactor`; the engine applies it
 * with the module's `FlowStore` (see docs/flow-control.md).
 */

/** A flow key: the tenant (account, ...) of a start, from its inputs. Absent: one key for the reactor. */
export type FlowKey = (inputs: Record<string, unknown>) => string;

/**
 * At most `limit` live runs per key; the others wait in the key's queue (not refused, no retries
 * spent) and start in order as slots free. Keys never share slots, and a key's waiting runs stay
 * out of the worker queue, so one tenant's backlog never delays another tenant's runs.
 */
export interface FlowConcurrencyOptions {
  key?: FlowKey;
  /** Live runs per key: started and not finished (a paused or sleeping run holds its slot). */
  limit: number;
  /** Most runs one key may queue; a start beyond it is refused (`FLOW_QUEUE_FULL`). @default 100000 */
  maxQueued?: number;
}

/** At most `limit` starts per window of `periodMs` per key; later starts are delayed to the next window with room. */
export interface ThrottleOptions {
  key?: FlowKey;
  limit: number;
  periodMs: number;
}

/**
 * Starts of one key within `periodMs` of each other collapse into one run with the last start's
 * inputs, started `periodMs` after the last start, and at most `maxWaitMs` after the first.
 */
export interface DebounceOptions {
  key?: FlowKey;
  periodMs: number;
  /** @default 10 x periodMs */
  maxWaitMs?: number;
}

/**
 * Starts of one key are collected into one run whose inputs are `{ items: [each start's input] }`
 * (in start order), started when `maxSize` are collected or `maxWaitMs` after the first.
 */
export interface BatchOptions {
  key?: FlowKey;
  maxSize: number;
  maxWaitMs: number;
}

/** A reactor's flow control, as the definition holds it. */
export interface FlowSpec {
  readonly concurrency?: { readonly key?: FlowKey; readonly limit: number; readonly maxQueued: number };
  readonly throttle?: { readonly key?: FlowKey; readonly limit: number; readonly periodMs: number };
  readonly debounce?: { readonly key?: FlowKey; readonly periodMs: number; readonly maxWaitMs: number };
  readonly batch?: { readonly key?: FlowKey; readonly maxSize: number; readonly maxWaitMs: number };
}

/** The longest period or wait a flow option takes: 30 days. */
const MAX_MS = 30 * 24 * 60 * 60 * 1000;
/** The default bound of a key's queue. */
export const DEFAULT_MAX_QUEUED = 100_000;

/** The input a batched run receives: `{ items: [...] }`. */
export const BATCH_INPUT = 'items';

/**
 * Normalize the flow options of a reactor; a string is the problem (the caller names the reactor).
 * `concurrency` given as a number is the worker concurrency of the reactor's queue, not flow control.
 */
export function toFlowSpec(
  options: {
    concurrency?: number | FlowConcurrencyOptions;
    throttle?: ThrottleOptions;
    debounce?: DebounceOptions;
    batch?: BatchOptions;
  },
  inputNames: ReadonlySet<string>,
): FlowSpec | string | undefined {
  const concurrency = typeof options.concurrency === 'object' ? options.concurrency : undefined;
  const { throttle, debounce, batch } = options;
  if (options.concurrency === null)
    return 'concurrency must be a number (queue workers) or { key?, limit, maxQueued? }';
  if (!concurrency && !throttle && !debounce && !batch) return undefined;
  for (const [what, value] of [
    ['concurrency', concurrency],
    ['throttle', throttle],
    ['debounce', debounce],
    ['batch', batch],
  ] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${what} must be an object`;
    if (value.key !== undefined && typeof value.key !== 'function') {
      return `${what}.key must be a function of the inputs returning a string (or absent: one key for the reactor)`;
    }
  }
  const int = (what: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): string | undefined =>
    Number.isInteger(value) && (value as number) >= min && (value as number) <= max
      ? undefined
      : `${what} must be an integer from ${min} to ${max} (got ${String(value)})`;
  const problem =
    (concurrency &&
      (int('concurrency.limit', concurrency.limit, 1) ??
        (concurrency.maxQueued !== undefined ? int('concurrency.maxQueued', concurrency.maxQueued, 1) : undefined))) ||
    (throttle &&
      (int('throttle.limit', throttle.limit, 1) ?? int('throttle.periodMs', throttle.periodMs, 1, MAX_MS))) ||
    (debounce &&
      (int('debounce.periodMs', debounce.periodMs, 1, MAX_MS) ??
        (debounce.maxWaitMs !== undefined
          ? int('debounce.maxWaitMs', debounce.maxWaitMs, debounce.periodMs, MAX_MS)
          : undefined))) ||
    (batch && (int('batch.maxSize', batch.maxSize, 1, 10_000) ?? int('batch.maxWaitMs', batch.maxWaitMs, 1, MAX_MS)));
  if (problem) return problem;
  if (debounce && batch)
    return 'debounce and batch cannot both be declared: a start is either collapsed into the last one or collected with the others';
  if (batch && !inputNames.has(BATCH_INPUT)) {
    return `batch: a batched run's inputs are { ${BATCH_INPUT}: [each start's input] }; declare r.input('${BATCH_INPUT}')`;
  }
  if (batch && [...inputNames].some((name) => name !== BATCH_INPUT)) {
    return `batch: a batched run's only input is '${BATCH_INPUT}' (each start's input is one of its elements); remove the other inputs`;
  }
  return Object.freeze({
    ...(concurrency
      ? {
          concurrency: Object.freeze({
            key: concurrency.key,
            limit: concurrency.limit,
            maxQueued: concurrency.maxQueued ?? DEFAULT_MAX_QUEUED,
          }),
        }
      : {}),
    ...(throttle
      ? { throttle: Object.freeze({ key: throttle.key, limit: throttle.limit, periodMs: throttle.periodMs }) }
      : {}),
    ...(debounce
      ? {
          debounce: Object.freeze({
            key: debounce.key,
            periodMs: debounce.periodMs,
            maxWaitMs: debounce.maxWaitMs ?? Math.min(MAX_MS, debounce.periodMs * 10),
          }),
        }
      : {}),
    ...(batch ? { batch: Object.freeze({ key: batch.key, maxSize: batch.maxSize, maxWaitMs: batch.maxWaitMs }) } : {}),
  });
}
