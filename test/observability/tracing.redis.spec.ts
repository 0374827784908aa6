import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder, ReactorClass } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { BackgroundRetryReactor, LetterStep, createRedisApp, pollUntil, useRedisPrefixes } from '../e2e/e2e.fixtures';
import { ancestry, eventsOf, only, parentOf, recordedStrings, useInMemoryTracing } from './otel.harness';

const SECRET = 'SECRET-4242-4242';
const WAIT = { timeoutMs: 10_000 };

/** Charges the card through an HTTP API the application traces itself (its span nests under the step's). */
@Step('otel-e2e-charge')
class TracedChargeStep {
  async run({ card }: { card: string }, _ctx: StepContext) {
    return trace.getTracer('test-app').startActiveSpan('POST /charges', async (span) => {
      span.end();
      return success(`charged ${card.length} digits`);
    });
  }
}

type Checkout = { card: string; word: string };

/** In the caller nothing runs: `a`, then `charge` with the redacted card, in a worker. */
@Reactor('otel-e2e-checkout', { background: { all: true } })
class TracedCheckoutReactor implements ReactorBlueprint<Checkout> {
  build(r: ReactorBuilder<Checkout>) {
    const card = r.input('card', { type: 'string', redact: true });
    const word = r.input('word', { type: 'string' });
    const a = r.step('a', LetterStep, { word, at: r.value(0) });
    return r.step('charge', TracedChargeStep, { card }, { waitFor: [a] });
  }
}

/**
 * A background run on the Redis runtime, as two processes would run it: the producer app
 * (`workers: false`) starts it inside the caller's span; the worker app's BullMQ worker executes
 * it. The trace context crosses Redis in the job's payload, so the exported spans are one trace.
 */
describe('OpenTelemetry trace of a background run through BullMQ (Redis)', () => {
  const otel = useInMemoryTracing();
  const redis = useRedisPrefixes();
  let producerApp: TestingModule;
  let workerApp: TestingModule;
  let producer: ReactorClient;

  beforeAll(async () => {
    const prefix = redis.prefix('otel-bullmq');
    const extra = { providers: [TracedChargeStep, TracedCheckoutReactor] };
    ({ app: producerApp, client: producer } = await createRedisApp(prefix, { workers: false }, extra));
    ({ app: workerApp } = await createRedisApp(prefix, {}, extra));
  });

  afterAll(async () => {
    await producerApp?.close();
    await workerApp?.close();
  });

  /** Start `reactor` inside a caller span; wait for the run and for `runSpans` run spans of its trace. */
  async function startInCallerSpan(reactor: ReactorClass, input: object, runSpans: number) {
    const { runId, traceId, spanId } = await otel.tracer().startActiveSpan('POST /checkout', async (span) => {
      const started = await producer.start(reactor, input as never);
      span.end();
      return { runId: started.runId, ...span.spanContext() };
    });
    const done = await producer.wait(runId, WAIT);
    const ofTrace = () => otel.spans().filter((s) => s.spanContext().traceId === traceId);
    // The worker ends its run span just after the final save the producer's wait reads, and the
    // job's CONSUMER span after that.
    const ended = (prefix: string) => ofTrace().filter((s) => s.name.startsWith(prefix)).length >= runSpans;
    await pollUntil(() => ended('reactor.run ') && ended('process '), 5_000);
    return { done, runId, traceId, spanId, spans: ofTrace() };
  }

  it('caller span → PRODUCER (send) → CONSUMER (process, in the worker) → run span → step spans → the step’s own span: one trace, no input values', async () => {
    const { done, runId, spanId, spans } = await startInCallerSpan(
      TracedCheckoutReactor,
      { card: SECRET, word: 'zed' },
      1,
    );

    expect(done.status).toBe('completed');
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        'POST /charges',
        'POST /checkout',
        'process nest-reactor',
        'reactor.run otel-e2e-checkout',
        'reactor.step a',
        'reactor.step charge',
        'send nest-reactor',
      ].sort(),
    );
    const caller = only(spans, 'POST /checkout');
    const send = only(spans, 'send nest-reactor');
    const processing = only(spans, 'process nest-reactor');
    const run = only(spans, 'reactor.run otel-e2e-checkout');
    const a = only(spans, 'reactor.step a');
    const charge = only(spans, 'reactor.step charge');
    const http = only(spans, 'POST /charges');
    expect(parentOf(caller)).toBeUndefined();
    expect(caller.spanContext().spanId).toBe(spanId);
    expect(parentOf(send)).toBe(spanId);
    expect(parentOf(processing)).toBe(send.spanContext().spanId);
    expect(parentOf(run)).toBe(processing.spanContext().spanId);
    expect(parentOf(a)).toBe(run.spanContext().spanId);
    expect(parentOf(charge)).toBe(run.spanContext().spanId);
    expect(parentOf(http)).toBe(charge.spanContext().spanId);

    // The enqueue, as OpenTelemetry's messaging conventions name it, with BullMQ's id of the job.
    expect(send.kind).toBe(SpanKind.PRODUCER);
    const jobId = send.attributes['messaging.message.id'];
    expect(typeof jobId).toBe('string');
    expect(send.attributes).toEqual({
      'messaging.system': 'bullmq',
      'messaging.destination.name': 'nest-reactor',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.message.id': jobId,
      'reactor.name': 'otel-e2e-checkout',
      'reactor.run_id': runId,
      'reactor.job.kind': 'resume',
    });
    // Its handling in the worker: the same job, first delivery.
    expect(processing.kind).toBe(SpanKind.CONSUMER);
    expect(processing.attributes).toEqual({
      'messaging.system': 'bullmq',
      'messaging.destination.name': 'nest-reactor',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.message.id': jobId,
      'reactor.name': 'otel-e2e-checkout',
      'reactor.run_id': runId,
      'reactor.job.kind': 'resume',
      'reactor.job.attempt': 1,
    });
    expect(processing.status.code).toBe(SpanStatusCode.UNSET);

    // Handed to a worker before it ever ran: its first execution there is not resumed.
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.attributes).toEqual({
      'reactor.name': 'otel-e2e-checkout',
      'reactor.run_id': runId,
      'reactor.resumed': false,
      'reactor.mode': 'worker',
      'reactor.outcome': 'completed',
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
    expect(a.attributes).toEqual({
      'reactor.name': 'otel-e2e-checkout',
      'reactor.run_id': runId,
      'reactor.step': 'a',
      'reactor.step.attempt': 1,
      'reactor.outcome': 'success',
    });
    expect(charge.attributes).toEqual({
      'reactor.name': 'otel-e2e-checkout',
      'reactor.run_id': runId,
      'reactor.step': 'charge',
      'reactor.step.attempt': 1,
      'reactor.outcome': 'success',
    });
    expect(recordedStrings(spans).filter((s) => s.includes(SECRET) || s.includes('zed'))).toEqual([]);
  });

  it('a retry in the worker goes on in a delayed job of the same trace: each execution under the PRODUCER span of the one before', async () => {
    const { done, spanId, spans } = await startInCallerSpan(BackgroundRetryReactor, {}, 3);

    expect(done.status).toBe('completed');
    const runs = spans.filter((s) => s.name === 'reactor.run e2e-bg-retry');
    const steps = spans.filter((s) => s.name === 'reactor.step flaky');
    expect(runs).toHaveLength(3);
    expect(steps).toHaveLength(3);
    const sends = spans.filter((s) => s.name === 'send nest-reactor');
    const consumers = spans.filter((s) => s.name === 'process nest-reactor');
    expect(sends).toHaveLength(3);
    expect(consumers).toHaveLength(3);
    const id = (s: (typeof spans)[number]) => s.spanContext().spanId;
    // caller → send → process → run 1 → send (delayed) → process → run 2 → send (delayed) → process → run 3
    const sendOf = (parent: string) => sends.find((s) => parentOf(s) === parent)!;
    const chain = [spanId];
    for (let i = 0; i < 3; i++) {
      const send = sendOf(chain[chain.length - 1]);
      const consumer = consumers.find((s) => parentOf(s) === id(send))!;
      expect(consumer).toBeDefined();
      expect(parentOf(runs[i])).toBe(id(consumer));
      expect(consumer.attributes['messaging.message.id']).toBe(send.attributes['messaging.message.id']);
      chain.push(id(runs[i]));
    }
    expect(ancestry(runs[2], spans)).toHaveLength(10);
    // The retries' jobs are delayed by the backoff; the hand-off's is not.
    expect(sends.map((s) => s.attributes['reactor.job.delay_ms'])).toEqual([undefined, 50, 100]);
    expect(runs.map((s) => s.attributes['reactor.outcome'])).toEqual(['dispatched', 'dispatched', 'completed']);
    // The first execution in a worker is not resumed; the ones after a retry delay are.
    expect(runs.map((s) => s.attributes['reactor.resumed'])).toEqual([false, true, true]);
    expect(
      steps.map((s) => [parentOf(s), s.attributes['reactor.step.attempt'], s.attributes['reactor.outcome']]),
    ).toEqual([
      [runs[0].spanContext().spanId, 1, 'retry'],
      [runs[1].spanContext().spanId, 2, 'retry'],
      [runs[2].spanContext().spanId, 3, 'success'],
    ]);
    expect(steps.map((s) => eventsOf(s).map((e) => [e.name, e.attributes['reactor.retry.delay_ms']]))).toEqual([
      [['reactor.step.retry', 50]],
      [['reactor.step.retry', 100]],
      [],
    ]);
  });
});
