import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { success } from '../../lib/core/results/step-outcome';
import { openTelemetryTracing } from '../../lib/core/tracing/tracing';
import { createHarness } from '../core/harness';

/** A reactor every run of which goes to a worker, with a step that starts a child run in a job of its own. */
const parentAndUnit = (name: string) => {
  const unit = defineReactor(`${name}-unit`, (r: ReactorBuilder<object>) => r.step('u', () => success(1), {}));
  const parent = defineReactor(
    name,
    (r: ReactorBuilder<object>) => {
      r.step('only', () => success(1), {});
      r.asyncReactor('later', unit, {});
    },
    { background: { all: true } },
  );
  return { parent, unit };
};

/** A dispatcher that keeps the jobs (the test delivers them). */
function keepingDispatcher(): JobDispatcher & { jobs: ReactorJob[] } {
  const jobs: ReactorJob[] = [];
  return { jobs, dispatch: async (job) => void jobs.push(job) };
}

/** Start a run, deliver its jobs (and the jobs they dispatch) until none is left. */
async function runThrough(name: string): Promise<ReactorJob[]> {
  const dispatcher = keepingDispatcher();
  const { engine } = createHarness({ dispatcher, tracing: true });
  const { parent, unit } = parentAndUnit(name);
  engine.register(parent);
  engine.register(unit);
  await engine.start(parent, {});
  for (let i = 0; i < dispatcher.jobs.length; i++) await engine.handleJob(dispatcher.jobs[i]);
  return dispatcher.jobs;
}

describe('tracing with no OpenTelemetry SDK registered (DD-speed22-10)', () => {
  beforeAll(() => {
    trace.disable();
    context.disable();
    propagation.disable();
  });
  afterEach(() => {
    jest.restoreAllMocks();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('makes no span and carries no trace context in jobs while nothing is registered', async () => {
    expect(openTelemetryTracing.enabled).toBe(false);
    const getTracer = jest.spyOn(trace, 'getTracer');
    const jobs = await runThrough('no-sdk');
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    expect(getTracer).not.toHaveBeenCalled();
    expect(jobs.map((job) => job.traceContext)).toEqual(jobs.map(() => undefined));
  });

  it('traces the runs after an SDK is registered at run time: its spans, and the jobs carry them', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    expect(openTelemetryTracing.enabled).toBe(true);
    const jobs = await runThrough('sdk-later');
    const names = exporter.getFinishedSpans().map((span) => span.name);
    expect(names).toEqual(
      expect.arrayContaining(['reactor.run sdk-later', 'send nest-reactor', 'process nest-reactor']),
    );
    expect(jobs.every((job) => typeof job.traceContext?.traceparent === 'string')).toBe(true);
    await provider.shutdown();
  });

  it('records spans with a tracer provider and no context manager (it is registered: not skipped)', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    expect(openTelemetryTracing.enabled).toBe(true);
    await runThrough('provider-only');
    expect(exporter.getFinishedSpans().map((span) => span.name)).toContain('reactor.run provider-only');
    await provider.shutdown();
  });

  it('is on with a context manager and no tracer provider (a context a job carries could be made active)', () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    expect(openTelemetryTracing.enabled).toBe(true);
  });
});
