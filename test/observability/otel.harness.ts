import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/**
 * For a test file: a global tracer provider exporting to memory and an AsyncLocalStorage context
 * manager (what an application's OpenTelemetry SDK setup registers), with the W3C propagator unless
 * `propagator: false`. Registered before the file's tests and taken down after them (the globals
 * disabled), so no other test file sees them. Spans are cleared before each test.
 */
export function useInMemoryTracing(options: { propagator?: boolean } = {}): {
  spans: () => ReadableSpan[];
  tracer: () => Tracer;
} {
  const exporter = new InMemorySpanExporter();
  let provider: BasicTracerProvider;
  beforeAll(() => {
    provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    if (options.propagator !== false) propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  beforeEach(() => exporter.reset());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });
  return { spans: () => exporter.getFinishedSpans(), tracer: () => trace.getTracer('test-app') };
}

/** The one span named `name`; fails naming the spans there are when there is not exactly one. */
export function only(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) {
    throw new Error(`expected one span '${name}', found ${found.length} among: ${spans.map((s) => s.name).join(', ')}`);
  }
  return found[0];
}

/** Whether `child`'s parent is `parent` (same trace, parent span id). */
export function parentOf(child: ReadableSpan): string | undefined {
  return child.parentSpanContext?.spanId;
}

/** Every string recorded anywhere on the spans: attribute values, event attributes, status messages. */
export function recordedStrings(spans: ReadableSpan[]): string[] {
  const out: string[] = [];
  const add = (attributes: Record<string, unknown> | undefined) => {
    for (const value of Object.values(attributes ?? {})) out.push(String(value));
  };
  for (const span of spans) {
    out.push(span.name, span.status.message ?? '');
    add(span.attributes);
    for (const event of span.events) add(event.attributes);
  }
  return out;
}

/** `{ name, attributes }` of each event of `span`, in order. */
export function eventsOf(span: ReadableSpan): Array<{ name: string; attributes: Record<string, unknown> }> {
  return span.events.map((e) => ({ name: e.name, attributes: { ...(e.attributes ?? {}) } }));
}

/**
 * The names of `span` and of its ancestors among `spans`, up to the root of the trace (or to the
 * first parent that is not among them, shown as `?<span id>`).
 */
export function ancestry(span: ReadableSpan, spans: ReadableSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const names = [span.name];
  let parent = parentOf(span);
  while (parent !== undefined) {
    const next = byId.get(parent);
    if (!next) {
      names.push(`?${parent}`);
      break;
    }
    names.push(next.name);
    parent = parentOf(next);
  }
  return names;
}
