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
 *   the run span (the rollback runs after the failing step's span ended);
 * - the active trace context in every job the engine enqueues (`ReactorJob.traceContext`), and the
 *   job handled in that context, so a background run is one trace with its caller.
 *
 * Inputs, arguments and results are never recorded: only names, ids, attempts, outcomes and error
 * messages.
 *
 * NOTE: the only file in lib/core that imports `@opentelemetry/*` (a lint rule): the loop, the step
 * runner and the rollback see the small {@link TraceSpan} and {@link Tracing} interfaces below.
 */
import {
  context,
  propagation,
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
  /** Retry events: the backoff before the next attempt. */
  RETRY_DELAY_MS: 'reactor.retry.delay_ms',
  /** Failure events (`*.fail`, retry): the error's message. */
  ERROR_MESSAGE: 'reactor.error.message',
  /** Failed run spans: the failure's code (`STEP_FAILED`, `INPUT_VALIDATION`, ...). */
  ERROR_TYPE: 'error.type',
} as const;

/** Names of the events on the engine's spans. */
export const ReactorTraceEvents = {
  RETRY: 'reactor.step.retry',
  COMPENSATION_START: 'reactor.compensation.start',
  COMPENSATION_COMPLETE: 'reactor.compensation.complete',
  COMPENSATION_FAIL: 'reactor.compensation.fail',
  UNDO_START: 'reactor.undo.start',
  UNDO_COMPLETE: 'reactor.undo.complete',
  UNDO_FAIL: 'reactor.undo.fail',
} as const;

/** Attribute values the engine records (never inputs, arguments or results). */
export type TraceAttributes = Record<string, string | number | boolean>;

/** A run's or a step's span, as the executor sees it. */
export interface TraceSpan {
  /** Call `fn` with this span active, so spans started inside it (the step's own) are its children. */
  within<T>(fn: () => T): T;
  /** Start a child span (not made active: see {@link within}). */
  child(name: string, attributes: TraceAttributes): TraceSpan;
  event(name: string, attributes?: TraceAttributes): void;
  set(attributes: TraceAttributes): void;
  /** End the span; with `error`, its status is ERROR with that message. */
  end(error?: string): void;
}

/** What the engine needs of a tracing backend. */
export interface Tracing {
  /** Start a span, a child of the active context. */
  start(name: string, attributes: TraceAttributes): TraceSpan;
  /** The active trace context for a job payload, or undefined when there is none to carry. */
  carrier(): Record<string, string> | undefined;
  /** Call `fn` in the trace context a job carried (as it is when there is none). */
  resume<T>(carrier: Record<string, string> | undefined, fn: () => T): T;
}

/** A span that records nothing. */
export const NO_SPAN: TraceSpan = {
  within: (fn) => fn(),
  child: () => NO_SPAN,
  event: () => undefined,
  set: () => undefined,
  end: () => undefined,
};

/** Tracing switched off: no spans, nothing carried in jobs. */
export const NO_TRACING: Tracing = {
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
    return startSpan(name, attributes, this.active);
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

function startSpan(name: string, attributes: TraceAttributes, parent: Context): TraceSpan {
  // NOTE: the tracer is looked up per span, not cached: a cached one would keep the provider that
  // was global when it was made (tests register and disable providers).
  const span = trace.getTracer(REACTOR_TRACER_NAME).startSpan(name, { kind: SpanKind.INTERNAL, attributes }, parent);
  return new OpenTelemetrySpan(span, parent);
}

const TRACEPARENT = 'traceparent';

/**
 * The global OpenTelemetry API: spans from the global tracer provider, jobs carrying the context
 * through the global propagator. When no propagator is registered (a bare tracer provider), the
 * span context still travels as a W3C `traceparent`, so the engine's own jobs stay in one trace.
 */
export const openTelemetryTracing: Tracing = {
  start: (name, attributes) => startSpan(name, attributes, context.active()),
  carrier: () => {
    const active = context.active();
    const carrier: Record<string, string> = {};
    propagation.inject(active, carrier);
    if (carrier[TRACEPARENT] === undefined) {
      const spanContext = trace.getSpanContext(active);
      if (spanContext && isSpanContextValid(spanContext)) carrier[TRACEPARENT] = traceparentOf(spanContext);
    }
    return Object.keys(carrier).length > 0 ? carrier : undefined;
  },
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

/** Tracing through the global OpenTelemetry API, or none. */
export function tracingOf(enabled: boolean): Tracing {
  return enabled ? openTelemetryTracing : NO_TRACING;
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
