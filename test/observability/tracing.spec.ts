import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { failure, success } from '../../lib/core/results/step-outcome';
import { REACTOR_TRACER_NAME } from '../../lib/core/tracing';
import { createHarness } from '../core/harness';
import { ancestry, eventsOf, only, parentOf, recordedStrings, useInMemoryTracing } from './otel.harness';

const SECRET = 'SECRET-4111-1111';

type Order = { card: string; order: string };

/** reserve → charge (calls an HTTP API, traced by the application) → the run's value. */
const checkout = (tracer: () => import('@opentelemetry/api').Tracer) =>
  defineReactor('otel-checkout', (r: ReactorBuilder<Order>) => {
    const card = r.input('card', { type: 'string', redact: true });
    const order = r.input('order', { type: 'string' });
    const reserve = r.step('reserve', ({ order: o }: { order: string }) => success(`held ${o}`), { order });
    return r.step(
      'charge',
      async ({ card: c }: { card: string }) =>
        tracer().startActiveSpan('POST /charges', async (span) => {
          span.end();
          return success(`charged ${c.length} digits`);
        }),
      { card },
      { waitFor: [reserve] },
    );
  });

describe('OpenTelemetry spans of an embedded run', () => {
  const otel = useInMemoryTracing();

  it('a completed run: one run span, a span per step under it, the step’s own spans under the step, no inputs', async () => {
    const { engine } = createHarness();
    const def = checkout(otel.tracer);
    engine.register(def);

    const outcome = await engine.run(def, { card: SECRET, order: 'o-1' });

    expect(outcome.status).toBe('completed');
    const spans = otel.spans();
    // Exported as they end: the steps first, the application's span inside charge, the run last.
    expect(spans.map((s) => s.name)).toEqual([
      'reactor.step reserve',
      'POST /charges',
      'reactor.step charge',
      'reactor.run otel-checkout',
    ]);
    const run = only(spans, 'reactor.run otel-checkout');
    const reserve = only(spans, 'reactor.step reserve');
    const charge = only(spans, 'reactor.step charge');
    const http = only(spans, 'POST /charges');
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(parentOf(run)).toBeUndefined();
    expect(parentOf(reserve)).toBe(run.spanContext().spanId);
    expect(parentOf(charge)).toBe(run.spanContext().spanId);
    expect(parentOf(http)).toBe(charge.spanContext().spanId);

    expect(run.instrumentationScope.name).toBe(REACTOR_TRACER_NAME);
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.attributes).toEqual({
      'reactor.name': 'otel-checkout',
      'reactor.run_id': outcome.runId,
      'reactor.resumed': false,
      'reactor.mode': 'caller',
      'reactor.outcome': 'completed',
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
    expect(charge.attributes).toEqual({
      'reactor.name': 'otel-checkout',
      'reactor.run_id': outcome.runId,
      'reactor.step': 'charge',
      'reactor.step.attempt': 1,
      'reactor.outcome': 'success',
    });
    expect(reserve.attributes).toMatchObject({ 'reactor.step': 'reserve', 'reactor.outcome': 'success' });
    expect(run.events).toEqual([]);
    expect(recordedStrings(spans).filter((s) => s.includes(SECRET) || s.includes('o-1'))).toEqual([]);
  });

  it('a failing run: the retry on the step span, compensation and undo on the run span, status ERROR', async () => {
    const { engine, clock } = createHarness();
    const def = defineReactor('otel-refund', (r: ReactorBuilder<Order>) => {
      const card = r.input('card', { type: 'string', redact: true });
      const reserve = r.step('reserve', { run: () => success('held'), undo: () => undefined }, {});
      const notify = r.step(
        'notify',
        {
          run: () => success('mailed'),
          undo: () => {
            throw new Error('mail server down');
          },
        },
        {},
        { waitFor: [reserve] },
      );
      return r.step(
        'charge',
        { run: () => failure(new Error('card declined')), compensate: () => undefined },
        { card },
        { waitFor: [notify], retries: { maxAttempts: 2, backoff: 'fixed', baseDelayMs: 250 } },
      );
    });
    engine.register(def);

    const outcome = await engine.run(def, { card: SECRET, order: 'o-2' });

    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(clock.sleeps).toEqual([250]);
    const spans = otel.spans();
    expect(spans.map((s) => s.name)).toEqual([
      'reactor.step reserve',
      'reactor.step notify',
      'reactor.step charge',
      'reactor.run otel-refund',
    ]);
    const run = only(spans, 'reactor.run otel-refund');
    const charge = only(spans, 'reactor.step charge');
    expect(parentOf(charge)).toBe(run.spanContext().spanId);

    expect(charge.attributes).toMatchObject({ 'reactor.step.attempt': 2, 'reactor.outcome': 'failure' });
    expect(charge.status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(eventsOf(charge)).toEqual([
      {
        name: 'reactor.step.retry',
        attributes: {
          'reactor.step.attempt': 1,
          'reactor.retry.delay_ms': 250,
          'reactor.error.message': 'card declined',
        },
      },
    ]);

    expect(run.attributes).toMatchObject({ 'reactor.outcome': 'failed', 'error.type': 'STEP_FAILED' });
    expect(run.status).toEqual({ code: SpanStatusCode.ERROR, message: outcome.failure.message });
    expect(eventsOf(run)).toEqual([
      { name: 'reactor.compensation.start', attributes: { 'reactor.step': 'charge' } },
      { name: 'reactor.compensation.complete', attributes: { 'reactor.step': 'charge' } },
      { name: 'reactor.undo.start', attributes: { 'reactor.step': 'notify' } },
      {
        name: 'reactor.undo.fail',
        attributes: { 'reactor.step': 'notify', 'reactor.error.message': 'mail server down' },
      },
      { name: 'reactor.undo.start', attributes: { 'reactor.step': 'reserve' } },
      { name: 'reactor.undo.complete', attributes: { 'reactor.step': 'reserve' } },
    ]);
    expect(recordedStrings(spans).filter((s) => s.includes(SECRET))).toEqual([]);
  });

  it('a manual undo is a span of its own; a composed child’s run span nests under its compose step', async () => {
    const { engine } = createHarness();
    const leaf = defineReactor('otel-leaf', (r: ReactorBuilder<object>) =>
      r.step('ping', { run: () => success('pong'), undo: () => undefined }, {}),
    );
    const parent = defineReactor('otel-parent', (r: ReactorBuilder<object>) => r.compose('call-leaf', leaf, {}));
    engine.register(leaf);
    engine.register(parent);

    const outcome = await engine.run(parent, {});
    expect(outcome.status).toBe('completed');
    const composeStep = only(otel.spans(), 'reactor.step call-leaf');
    const childRun = only(otel.spans(), 'reactor.run otel-leaf');
    expect(parentOf(childRun)).toBe(composeStep.spanContext().spanId);
    expect(parentOf(only(otel.spans(), 'reactor.step ping'))).toBe(childRun.spanContext().spanId);

    const undone = await engine.undo(outcome.runId);
    expect(undone.status).toBe('cancelled');
    const undo = only(otel.spans(), 'reactor.undo otel-parent');
    expect(undo.attributes).toMatchObject({ 'reactor.run_id': outcome.runId, 'reactor.outcome': 'cancelled' });
    expect(eventsOf(undo).map((e) => `${e.name}:${e.attributes['reactor.step']}`)).toEqual([
      'reactor.undo.start:call-leaf',
      'reactor.undo.complete:call-leaf',
    ]);
  });

  it('a background run: PRODUCER span under the caller, CONSUMER span under it, the worker’s run under that', async () => {
    const jobs: ReactorJob[] = [];
    const dispatcher: JobDispatcher = { dispatch: async (job) => void jobs.push(job) };
    const { engine, clock } = createHarness({ dispatcher });
    let calls = 0;
    const def = defineReactor(
      'otel-background',
      (r: ReactorBuilder<object>) =>
        r.step(
          'flaky',
          () => (++calls === 1 ? failure(new Error('busy')) : success('done')),
          {},
          {
            retries: { maxAttempts: 2, backoff: 'fixed', baseDelayMs: 10 },
          },
        ),
      { background: { all: true } },
    );
    engine.register(def);

    const runId = await otel.tracer().startActiveSpan('POST /orders', async (span) => {
      const started = await engine.start(def, {});
      span.end();
      return started.runId;
    });
    const caller = only(otel.spans(), 'POST /orders');
    const handOff = only(otel.spans(), 'send nest-reactor');
    expect(jobs).toHaveLength(1);
    // The job carries the context of the PRODUCER span (the caller's child), not the caller's own.
    expect(parentOf(handOff)).toBe(caller.spanContext().spanId);
    expect(jobs[0].traceContext?.traceparent).toBe(
      `00-${handOff.spanContext().traceId}-${handOff.spanContext().spanId}-01`,
    );

    // Delivered outside the caller's context, as a worker would: first attempt fails, a retry is enqueued.
    await engine.handleJob(jobs[0]);
    expect(jobs).toHaveLength(2);
    clock.advance(10); // the retry is due
    await engine.handleJob(jobs[1]);
    expect((await engine.get(runId))?.status).toBe('completed');

    const spans = otel.spans();
    const runs = spans.filter((s) => s.name === 'reactor.run otel-background');
    const steps = spans.filter((s) => s.name === 'reactor.step flaky');
    expect(runs).toHaveLength(2);
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([caller.spanContext().traceId]));
    // The first execution is under the hand-off's PRODUCER and CONSUMER spans; the retry's execution
    // under the PRODUCER span its predecessor made for the delayed job, and that job's CONSUMER span.
    expect(ancestry(runs[0], spans)).toEqual([
      'reactor.run otel-background',
      'process nest-reactor',
      'send nest-reactor',
      'POST /orders',
    ]);
    expect(ancestry(runs[1], spans)).toEqual([
      'reactor.run otel-background',
      'process nest-reactor',
      'send nest-reactor',
      'reactor.run otel-background',
      'process nest-reactor',
      'send nest-reactor',
      'POST /orders',
    ]);
    // Handed off before it ever ran, the first execution is not resumed; the retry's is.
    expect(runs.map((s) => s.attributes)).toEqual([
      expect.objectContaining({ 'reactor.mode': 'worker', 'reactor.resumed': false, 'reactor.outcome': 'dispatched' }),
      expect.objectContaining({ 'reactor.mode': 'worker', 'reactor.resumed': true, 'reactor.outcome': 'completed' }),
    ]);
    expect(
      steps.map((s) => [parentOf(s), s.attributes['reactor.step.attempt'], s.attributes['reactor.outcome']]),
    ).toEqual([
      [runs[0].spanContext().spanId, 1, 'retry'],
      [runs[1].spanContext().spanId, 2, 'success'],
    ]);
  });

  it('a fan-out map: the element jobs are one PRODUCER span (a batch) under the map step; each element’s run under its CONSUMER span', async () => {
    const { engine, dispatcher } = createHarness();
    const item = defineReactor('otel-item', (r: ReactorBuilder<{ sku: string }>) =>
      r.step('reserve', ({ sku }: { sku: string }) => success(sku.length), { sku: r.input('sku', { type: 'string' }) }),
    );
    const importer = defineReactor('otel-import', (r: ReactorBuilder<{ skus: string[] }>) =>
      r.map('reserve-all', {
        source: r.input('skus', { type: 'array' }),
        element: item,
        inputs: (sku) => ({ sku }),
        fanOut: { batchSize: 3, elementsPerJob: 1 },
      }),
    );
    engine.register(item);
    engine.register(importer);

    const started = await otel.tracer().startActiveSpan('POST /imports', async (span) => {
      const outcome = await engine.run(importer, { skus: ['a', 'bb', 'ccc'] });
      span.end();
      return outcome;
    });
    const done = await engine.wait(started.runId, { timeoutMs: 5_000 });
    await dispatcher.idle();
    expect(done.status).toBe('completed');

    const spans = otel.spans();
    const caller = only(spans, 'POST /imports');
    const owners = spans.filter((s) => s.name === 'reactor.run otel-import');
    const mapSteps = spans.filter((s) => s.name === 'reactor.step reserve-all');
    const elements = spans.filter((s) => s.name === 'reactor.run otel-item');
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([caller.spanContext().traceId]));
    expect(owners.map((s) => s.attributes['reactor.outcome'])).toEqual(['dispatched', 'completed']);
    expect(mapSteps.map((s) => s.attributes['reactor.outcome'])).toEqual(['wait', 'success']);
    expect(parentOf(owners[0])).toBe(caller.spanContext().spanId);
    const sends = spans.filter((s) => s.name === 'send nest-reactor');
    const batch = sends.find((s) => s.attributes['reactor.job.kind'] === 'map-element')!;
    expect(batch.kind).toBe(SpanKind.PRODUCER);
    expect(parentOf(batch)).toBe(mapSteps[0].spanContext().spanId);
    expect(batch.attributes).toMatchObject({
      'messaging.system': 'in-process',
      'messaging.batch.message_count': 3,
      'reactor.run_id': started.runId,
    });
    expect(batch.attributes['messaging.message.id']).toBeUndefined(); // one span for three jobs
    expect(elements).toHaveLength(3);
    for (const element of elements) {
      expect(ancestry(element, spans)).toEqual([
        'reactor.run otel-item',
        'process nest-reactor',
        'send nest-reactor',
        'reactor.step reserve-all',
        'reactor.run otel-import',
        'POST /imports',
      ]);
    }
    expect(elements.map((s) => s.attributes['reactor.mode'])).toEqual(['worker', 'worker', 'worker']);
    // The owner is resumed by the job of the element that settled last: in the same trace, under
    // that element's CONSUMER span and the map step.
    expect(ancestry(owners[1], spans)).toEqual([
      'reactor.run otel-import',
      'process nest-reactor',
      'send nest-reactor',
      'process nest-reactor',
      'send nest-reactor',
      'reactor.step reserve-all',
      'reactor.run otel-import',
      'POST /imports',
    ]);
    expect(owners[1].attributes['reactor.resumed']).toBe(true);
    expect(recordedStrings(spans).filter((s) => s === 'bb' || s === 'ccc')).toEqual([]);
  });

  it('tracing: false makes no spans and carries no trace context', async () => {
    const jobs: ReactorJob[] = [];
    const dispatcher: JobDispatcher = { dispatch: async (job) => void jobs.push(job) };
    const { engine } = createHarness({ dispatcher, tracing: false });
    const def = defineReactor('otel-off', (r: ReactorBuilder<object>) => r.step('only', () => success(1), {}), {
      background: { all: true },
    });
    engine.register(def);

    await otel.tracer().startActiveSpan('caller', async (span) => {
      await engine.start(def, {});
      span.end();
    });
    await engine.handleJob(jobs[0]);

    expect(jobs[0].traceContext).toBeUndefined();
    expect(otel.spans().map((s) => s.name)).toEqual(['caller']);
  });
});

describe('OpenTelemetry without a registered propagator', () => {
  const otel = useInMemoryTracing({ propagator: false });

  it('a job still carries the span context as a W3C traceparent, and its run joins the trace', async () => {
    const jobs: ReactorJob[] = [];
    const dispatcher: JobDispatcher = { dispatch: async (job) => void jobs.push(job) };
    const { engine } = createHarness({ dispatcher });
    const def = defineReactor('otel-bare', (r: ReactorBuilder<object>) => r.step('only', () => success(1), {}), {
      background: { all: true },
    });
    engine.register(def);

    await otel.tracer().startActiveSpan('caller', async (span) => {
      await engine.start(def, {});
      span.end();
    });
    await engine.handleJob(jobs[0]);

    const spans = otel.spans();
    const caller = only(spans, 'caller');
    const run = only(spans, 'reactor.run otel-bare');
    expect(Object.keys(jobs[0].traceContext ?? {})).toEqual(['traceparent']);
    expect(run.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(ancestry(run, spans)).toEqual([
      'reactor.run otel-bare',
      'process nest-reactor',
      'send nest-reactor',
      'caller',
    ]);
  });
});
