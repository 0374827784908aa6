import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder, ReactorClass } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { BackgroundRetryReactor, LetterStep, createRedisApp, pollUntil, useRedisPrefixes } from '../e2e/e2e.fixtures';
import { eventsOf, only, parentOf, recordedStrings, useInMemoryTracing } from './otel.harness';

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
    // The worker ends its run span just after the final save the producer's wait reads.
    await pollUntil(() => ofTrace().filter((s) => s.name.startsWith('reactor.run ')).length >= runSpans, 5_000);
    return { done, runId, traceId, spanId, spans: ofTrace() };
  }

  it('caller span → run span (worker) → step spans → the step’s own span: one trace, no input values', async () => {
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
        'reactor.run otel-e2e-checkout',
        'reactor.step a',
        'reactor.step charge',
      ].sort(),
    );
    const caller = only(spans, 'POST /checkout');
    const run = only(spans, 'reactor.run otel-e2e-checkout');
    const a = only(spans, 'reactor.step a');
    const charge = only(spans, 'reactor.step charge');
    const http = only(spans, 'POST /charges');
    expect(parentOf(caller)).toBeUndefined();
    expect(caller.spanContext().spanId).toBe(spanId);
    expect(parentOf(run)).toBe(spanId);
    expect(parentOf(a)).toBe(run.spanContext().spanId);
    expect(parentOf(charge)).toBe(run.spanContext().spanId);
    expect(parentOf(http)).toBe(charge.spanContext().spanId);

    expect(run.attributes).toEqual({
      'reactor.name': 'otel-e2e-checkout',
      'reactor.run_id': runId,
      'reactor.resumed': true,
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

  it('a retry in the worker goes on in a delayed job of the same trace: each execution the child of the one before', async () => {
    const { done, spanId, spans } = await startInCallerSpan(BackgroundRetryReactor, {}, 3);

    expect(done.status).toBe('completed');
    const runs = spans.filter((s) => s.name === 'reactor.run e2e-bg-retry');
    const steps = spans.filter((s) => s.name === 'reactor.step flaky');
    expect(runs).toHaveLength(3);
    expect(steps).toHaveLength(3);
    expect(runs.map(parentOf)).toEqual([spanId, runs[0].spanContext().spanId, runs[1].spanContext().spanId]);
    expect(runs.map((s) => s.attributes['reactor.outcome'])).toEqual(['dispatched', 'dispatched', 'completed']);
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
