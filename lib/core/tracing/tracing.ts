/**
 * OpenTelemetry tracing of runs, through `@opentelemetry/api` only (no SDK). With no SDK registered
 * the API hands out non-recording spans and propagates nothing, so tracing costs next to nothing
 * when the application does not collect traces; an application that registers a tracer provider
 * (and a context manager, as every Node SDK setup does) gets:
 *
 * - a span per execution of a run: `reactor.run <reactor>` (`reactor.undo <reactor>` for a manual
 *   undo), a child of the context active where the execution starts: the caller's span, the
 *   enqueuing span a job carried, or the compose or map step that runs a nested reactor;
 * - a span per step in that execution: `reactor.step <step>`, a child of the run span. The step's
 *   own code runs with it active, so the spans it makes (an HTTP call) nest under it;
 * - events: `reactor.step.retry` on the step span; `reactor.compensation.*` and `reactor.undo.*` on
 *   the run span (the rollback runs after the failing step's span ended); with `rollbackSpans`, a
 *   span per compensate and undo callback too (`reactor.step.compensate <step>`,
 *   `reactor.step.undo <step>`), children of the run span;
 * - a PRODUCER span (`send <queue>`) around every enqueue of a job, whose context is the one the
 *   job carries (`ReactorJob.traceContext`), and a CONSUMER span (`process <queue>`) around the
 *   handling of a job, the child of that context, with the run's span under it: so a background
 *   run is one trace with its caller (../engine/job-tracing.ts makes them, with OpenTelemetry's
 *   messaging attributes).
 *
 * Inputs, arguments and results are never recorded: only names, ids, attempts, outcomes and error
 * messages.
 *
 * NOTE: the only file in lib/core that imports `@opentelemetry/*` (a lint rule): the loop, the step
 * runner and the rollback see the small {@link TraceSpan} and {@link Tracing} interfaces below.
 */
import {
  context,
  createContextKey,
  propagation,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  isSpanContextValid,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';

/** The instrumentation scope name of the spans the engine makes. */
export const REACTOR_TRACER_NAME = 'nest-reactor';

/** Names of the attributes on the engine's spans and events. */
export const ReactorTraceAttributes = {
  /** The reactor (run and step spans). */
  REACTOR: 'reactor.name',
  /** The run id (a map element's or composed child's own id on its run span). */
  RUN_ID: 'reactor.run_id',
  /** The step (step spans, retry, compensation and undo events). */
  STEP: 'reactor.step',
  /** The step's attempt number when its span ended (retry events: the attempt that failed). */
  ATTEMPT: 'reactor.step.attempt',
  /**
   * How it ended. Run spans: the run outcome's status (`completed`, `failed`, `halted`,
   * `dispatched`, `paused`, `cancelled`), or `error` when the execution threw. Step spans: `success`,
   * `skipped`, `halt`, `failure`, `retry` (a retry scheduled for a later job), `wait` (a fan-out
   * map, an interrupt or an async unit waits), or `error`.
   */
  OUTCOME: 'reactor.outcome',
  /** Run spans: whether the execution resumed a stored run (a job, a continue) rather than starting it. */
  RESUMED: 'reactor.resumed',
  /** Run spans: `caller` (the process that called run) or `worker` (a job). */
  MODE: 'reactor.mode',
  /** Retry and snooze events: the wait before the next attempt. */
  RETRY_DELAY_MS: 'reactor.retry.delay_ms',
  /** Failure events (`*.fail`, retry): the error's message. */
  ERROR_MESSAGE: 'reactor.error.message',
  /** Failed run spans: the failure's code (`STEP_FAILED`, `INPUT_VALIDATION`, ...). */
  ERROR_TYPE: 'error.type',
  /** Job spans: the kind of job (`resume`, `map-element`, `map-rollback`). */
  JOB_KIND: 'reactor.job.kind',
  /** PRODUCER spans: the job's delay before it may run, when it has one. */
  JOB_DELAY_MS: 'reactor.job.delay_ms',
  /** Job spans: how many times the job was snoozed because its run was busy elsewhere (when it was). */
  JOB_SNOOZES: 'reactor.job.snoozes',
  /** CONSUMER spans: the delivery attempt of the job (BullMQ's `attemptsStarted`), when the queue says. */
  JOB_ATTEMPT: 'reactor.job.attempt',
  /** Job spans (OpenTelemetry messaging): `bullmq`, `in-process`, or what a dispatcher says it is. */
  MESSAGING_SYSTEM: 'messaging.system',
  /** Job spans (OpenTelemetry messaging): the queue. */
  MESSAGING_DESTINATION: 'messaging.destination.name',
  /** Job spans (OpenTelemetry messaging): `send` (PRODUCER) or `process` (CONSUMER). */
  MESSAGING_OPERATION_TYPE: 'messaging.operation.type',
  /** Job spans (OpenTelemetry messaging): `send` or `process`, as the type. */
  MESSAGING_OPERATION_NAME: 'messaging.operation.name',
  /** Job spans (OpenTelemetry messaging): the queue's id of the job, when it is known. */
  MESSAGING_MESSAGE_ID: 'messaging.message.id',
  /** PRODUCER spans of a batch (a map window): how many jobs it enqueued. */
  MESSAGING_BATCH_COUNT: 'messaging.batch.message_count',
} as const;

/** Names of the events on the engine's spans. */
export const ReactorTraceEvents = {
  RETRY: 'reactor.step.retry',
  /** The step's own lock or semaphore is held elsewhere: it did not start and is tried again later. */
  SNOOZE: 'reactor.step.snooze',
  COMPENSATION_START: 'reactor.compensation.start',
  COMPENSATION_COMPLETE: 'reactor.compensation.complete',
  COMPENSATION_FAIL: 'reactor.compensation.fail',
  UNDO_START: 'reactor.undo.start',
  UNDO_COMPLETE: 'reactor.undo.complete',
  UNDO_FAIL: 'reactor.undo.fail',
} as const;

/** Attribute values the engine records (never inputs, arguments or results). */
export type TraceAttributes = Record<string, string | number | boolean>;

/** OpenTelemetry's span kinds, as the engine uses them. */
export type TraceSpanKind = 'internal' | 'producer' | 'consumer';

/**
 * The `tracing` option as an object: tracing is on, with these settings (`tracing: true` is `{}`,
 * `tracing: false` switches it off).
 */
export interface ReactorTracingOptions {
  /**
   * A span of its own for each compensate and undo callback (`reactor.step.compensate <step>`,
   * `reactor.step.undo <step>`, children of the run span), beside the events on the run span.
   * The spans of the callback's own code (an HTTP call) then nest under it. @default false
   */
  rollbackSpans?: boolean;
}

/** The `tracing` option of the engine and the module: on, off, or on with settings. */
export type TracingOption = boolean | ReactorTracingOptions;

/** A run's or a step's span, as the executor sees it. */
export interface TraceSpan {
  /** Call `fn` with this span active, so spans started inside it (the step's own) are its children. */
  within<T>(fn: () => T): T;
  /** Start a child span (not made active: see {@link within}). */
  child(name: string, attributes: TraceAttributes): TraceSpan;
  /** This span's context for a job payload, or undefined when there is none to carry. */
  carrier(): Record<string, string> | undefined;
  event(name: string, attributes?: TraceAttributes): void;
  set(attributes: TraceAttributes): void;
  /** End the span; with `error`, its status is ERROR with that message. */
  end(error?: string): void;
}

/** What the engine needs of a tracing backend. */
export interface Tracing {
  /**
   * Whether tracing is on (off: no spans, nothing carried, nothing to build). Read per job and
   * per run: the global API's is off while no SDK is registered.
   */
  readonly enabled: boolean;
  /** Whether compensate and undo callbacks get spans of their own ({@link ReactorTracingOptions}). */
  readonly rollbackSpans: boolean;
  /** Start a span, a child of the active context (`internal` unless `kind` says otherwise). */
  start(name: string, attributes: TraceAttributes, kind?: TraceSpanKind): TraceSpan;
  /** The active trace context for a job payload, or undefined when there is none to carry. */
  carrier(): Record<string, string> | undefined;
  /** Call `fn` in the trace context a job carried (as it is when there is none). */
  resume<T>(carrier: Record<string, string> | undefined, fn: () => T): T;
}

/** A span that records nothing. */
export const NO_SPAN: TraceSpan = {
  within: (fn) => fn(),
  child: () => NO_SPAN,
  carrier: () => undefined,
  event: () => undefined,
  set: () => undefined,
  end: () => undefined,
};

/** Tracing switched off: no spans, nothing carried in jobs. */
export const NO_TRACING: Tracing = {
  enabled: false,
  rollbackSpans: false,
  start: () => NO_SPAN,
  carrier: () => undefined,
  resume: (_carrier, fn) => fn(),
};

class OpenTelemetrySpan implements TraceSpan {
  /** The context with this span active. */
  private readonly active: Context;

  constructor(
    private readonly span: Span,
    parent: Context,
  ) {
    this.active = trace.setSpan(parent, span);
  }

  within<T>(fn: () => T): T {
    return context.with(this.active, fn);
  }

  child(name: string, attributes: TraceAttributes): TraceSpan {
    // A span that records nothing (no SDK registered, or not sampled) has children that would
    // record nothing either: none is made (a step costs no span then).
    if (!this.span.isRecording()) return NO_SPAN;
    return startSpan(name, attributes, this.active, SpanKind.INTERNAL);
  }

  carrier(): Record<string, string> | undefined {
    return carrierOf(this.active);
  }

  event(name: string, attributes?: TraceAttributes): void {
    this.span.addEvent(name, attributes);
  }

  set(attributes: TraceAttributes): void {
    this.span.setAttributes(attributes);
  }

  end(error?: string): void {
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

const SPAN_KINDS: Record<TraceSpanKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

function startSpan(name: string, attributes: TraceAttributes, parent: Context, kind: SpanKind): TraceSpan {
  // NOTE: the tracer is looked up per span, not cached: a cached one would keep the provider that
  // was global when it was made (tests register and disable providers).
  const span = trace.getTracer(REACTOR_TRACER_NAME).startSpan(name, { kind, attributes }, parent);
  return new OpenTelemetrySpan(span, parent);
}

/** The trace context `active` carries, for a job payload (see {@link openTelemetryTracing}). */
function carrierOf(active: Context): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(active, carrier);
  if (carrier[TRACEPARENT] === undefined) {
    const spanContext = trace.getSpanContext(active);
    if (spanContext && isSpanContextValid(spanContext)) carrier[TRACEPARENT] = traceparentOf(spanContext);
  }
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

const TRACEPARENT = 'traceparent';

const PROBE = createContextKey('nest-reactor.context-manager-probe');
const PROBE_CONTEXT = ROOT_CONTEXT.setValue(PROBE, true);

/**
 * Whether the global OpenTelemetry API can record or carry nothing now: no tracer provider is
 * registered (its spans would record nothing) and no context manager (a context made active is
 * not: a job's trace context could not reach the spans and jobs after it). Then a span, a job's
 * carrier and a resumed context would each do nothing, so none is made (DD-speed22-10). Asked per
 * job and per run: an SDK registered later is used from then on. Another copy of the API (not a
 * `ProxyTracerProvider` of this one) counts as registered.
 */
function inert(): boolean {
  const provider = trace.getTracerProvider();
  if (!(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(REACTOR_TRACER_NAME) !== undefined)
    return false;
  return !context.with(PROBE_CONTEXT, probeIsActive);
}

function probeIsActive(): boolean {
  return context.active() === PROBE_CONTEXT;
}

/**
 * The global OpenTelemetry API: spans from the global tracer provider, jobs carrying the context
 * through the global propagator. When no propagator is registered (a bare tracer provider), the
 * span context still travels as a W3C `traceparent`, so the engine's own jobs stay in one trace.
 * `enabled` is false while nothing is registered to record or carry a span ({@link inert}).
 */
export const openTelemetryTracing: Tracing = globalApiTracing(false);

function globalApiTracing(rollbackSpans: boolean): Tracing {
  return {
    get enabled() {
      return !inert();
    },
    rollbackSpans,
    start: (name, attributes, kind = 'internal') => startSpan(name, attributes, context.active(), SPAN_KINDS[kind]),
    carrier: () => carrierOf(context.active()),
    resume: (carrier, fn) => {
      if (carrier === undefined) return fn();
      let extracted = propagation.extract(context.active(), carrier);
      if (trace.getSpanContext(extracted) === undefined && typeof carrier[TRACEPARENT] === 'string') {
        const parsed = parseTraceparent(carrier[TRACEPARENT]);
        if (parsed) extracted = trace.setSpanContext(extracted, parsed);
      }
      return context.with(extracted, fn);
    },
  };
}

/** Tracing through the global OpenTelemetry API as `option` says, or none (`false`). */
export function tracingOf(option: TracingOption): Tracing {
  if (option === false) return NO_TRACING;
  if (option === true || option.rollbackSpans !== true) return openTelemetryTracing;
  return globalApiTracing(true);
}

function traceparentOf(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

const TRACEPARENT_FORMAT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function parseTraceparent(value: string): SpanContext | undefined {
  const match = TRACEPARENT_FORMAT.exec(value.trim());
  if (!match) return undefined;
  const spanContext: SpanContext = {
    traceId: match[1],
    spanId: match[2],
    traceFlags: parseInt(match[3], 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}
