import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { JobDispatcher, ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import type { ReactorStorage } from '../../lib/core/ports/reactor-storage.port';
import { failure, success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from '../core/harness';
import { ancestry, eventsOf, only, parentOf, useInMemoryTracing } from './otel.harness';

/** A reactor every run of which goes to a worker (`start` and `run` alike). */
const backgroundOne = (name: string) =>
  defineReactor(name, (r: ReactorBuilder<object>) => r.step('only', () => success(1), {}), {
    background: { all: true },
  });

/** A dispatcher that only keeps the jobs (the test delivers them), and says nothing of itself. */
function keepingDispatcher(): JobDispatcher & { jobs: ReactorJob[] } {
  const jobs: ReactorJob[] = [];
  return { jobs, dispatch: async (job) => void jobs.push(job) };
}

/** A background reactor whose one step waits for `gate`: its run stays busy while the test holds it. */
const busyReactor = (name: string, gate: Promise<void>) =>
  defineReactor(
    name,
    (r: ReactorBuilder<object>) =>
      r.step(
        'slow',
        async () => {
          await gate;
          return success(1);
        },
        {},
      ),
    { background: { all: true } },
  );

/**
 * Start a run of a busy reactor and deliver its job twice (as a queue may): the second delivery
 * finds the run's lease held and snoozes. Returns the run id once the first delivery is done.
 */
async function deliverTwice(
  engine: ReturnType<typeof createHarness>['engine'],
  dispatcher: ReturnType<typeof keepingDispatcher>,
  name: string,
): Promise<string> {
  const gate = deferred();
  const def = busyReactor(name, gate.promise);
  engine.register(def);
  const { runId } = await engine.start(def, {});
  const [first] = dispatcher.jobs;
  const executing = engine.handleJob({ ...first, delivery: { messageId: 'job-1', attempt: 1 } });
  await engine.handleJob({ ...first, delivery: { messageId: 'job-1', attempt: 2 } });
  gate.resolve();
  await executing;
  return runId;
}

describe('OpenTelemetry spans of jobs (embedded runtime)', () => {
  const otel = useInMemoryTracing();

  it('in-process: a PRODUCER span per enqueue and a CONSUMER span per delivery, with messaging attributes and the job id', async () => {
    const { engine, dispatcher } = createHarness();
    const def = backgroundOne('otel-jobs-inprocess');
    engine.register(def);

    const runId = await otel.tracer().startActiveSpan('POST /orders', async (span) => {
      const started = await engine.start(def, {});
      span.end();
      return started.runId;
    });
    await engine.wait(runId, { timeoutMs: 5_000 });
    await dispatcher.idle();

    const spans = otel.spans();
    const send = only(spans, 'send nest-reactor');
    const processing = only(spans, 'process nest-reactor');
    const run = only(spans, 'reactor.run otel-jobs-inprocess');
    expect(ancestry(only(spans, 'reactor.step only'), spans)).toEqual([
      'reactor.step only',
      'reactor.run otel-jobs-inprocess',
      'process nest-reactor',
      'send nest-reactor',
      'POST /orders',
    ]);
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(processing.kind).toBe(SpanKind.CONSUMER);
    expect(run.kind).toBe(SpanKind.INTERNAL);
    const messageId = send.attributes['messaging.message.id'];
    expect(messageId).toMatch(/^\d+$/);
    expect(send.attributes).toEqual({
      'messaging.system': 'in-process',
      'messaging.destination.name': 'nest-reactor',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.message.id': messageId,
      'reactor.name': 'otel-jobs-inprocess',
      'reactor.run_id': runId,
      'reactor.job.kind': 'resume',
    });
    expect(processing.attributes).toEqual({
      'messaging.system': 'in-process',
      'messaging.destination.name': 'nest-reactor',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.message.id': messageId,
      'reactor.name': 'otel-jobs-inprocess',
      'reactor.run_id': runId,
      'reactor.job.kind': 'resume',
      'reactor.job.attempt': 1,
    });
    expect([send.status.code, processing.status.code]).toEqual([SpanStatusCode.UNSET, SpanStatusCode.UNSET]);
    expect(run.attributes).toMatchObject({ 'reactor.mode': 'worker', 'reactor.resumed': false });
  });

  it('reactor.resumed: false on a run’s first execution in a worker, true when it goes on after an interrupt (the reactor.start event says the same)', async () => {
    const { engine, dispatcher, recorder } = createHarness();
    const def = defineReactor(
      'otel-jobs-approval',
      (r: ReactorBuilder<object>) => {
        const decision = r.interrupt<{ ok: boolean }, object>('approve', { payload: { ok: { type: 'boolean' } } });
        return r.step('charge', ({ d }: { d: { ok: boolean } }) => success(d.ok), { d: decision });
      },
      { background: { all: true } },
    );
    engine.register(def);

    const { runId } = await engine.start(def, {});
    await dispatcher.idle();
    expect((await engine.get(runId))?.status).toBe('paused');

    const resumed = await otel.tracer().startActiveSpan('POST /webhook', async (span) => {
      const result = await engine.continue(runId, 'approve', { ok: true }, { execute: 'background' });
      span.end();
      return result;
    });
    expect(resumed.accepted).toBe('deferred');
    await dispatcher.idle();
    expect((await engine.get(runId))?.status).toBe('completed');

    const spans = otel.spans();
    const runs = spans.filter((s) => s.name === 'reactor.run otel-jobs-approval');
    expect(runs.map((s) => [s.attributes['reactor.outcome'], s.attributes['reactor.resumed']])).toEqual([
      ['paused', false],
      ['completed', true],
    ]);
    // The resume after `continue` is in the trace of the code that called it.
    expect(ancestry(runs[1], spans)).toEqual([
      'reactor.run otel-jobs-approval',
      'process nest-reactor',
      'send nest-reactor',
      'POST /webhook',
    ]);
    const starts = recorder.events.filter((e) => e.type === 'reactor.start' && e.runId === runId);
    expect(starts.map((e) => e.type === 'reactor.start' && e.resumed)).toEqual([false, true]);
  });

  it('a snooze (the run is busy elsewhere): its PRODUCER span is under the CONSUMER span of the delivery it snoozes; the delivery is never enqueued again', async () => {
    const dispatcher = keepingDispatcher();
    const { engine } = createHarness({ dispatcher });

    const runId = await deliverTwice(engine, dispatcher, 'otel-jobs-busy');

    expect(dispatcher.jobs).toHaveLength(2);
    const snoozed = dispatcher.jobs[1];
    expect(snoozed).toMatchObject({ kind: 'resume', runId, snoozes: 1 });
    expect(snoozed.delivery).toBeUndefined();

    const spans = otel.spans();
    const consumers = spans.filter((s) => s.name === 'process nest-reactor');
    const duplicate = consumers.find((s) => s.attributes['reactor.job.attempt'] === 2)!;
    // A dispatcher that says nothing of itself is traced as system and queue `nest-reactor`.
    expect(duplicate.attributes).toMatchObject({
      'messaging.system': 'nest-reactor',
      'messaging.message.id': 'job-1',
    });
    const snooze = spans.find((s) => s.name === 'send nest-reactor' && parentOf(s) === duplicate.spanContext().spanId)!;
    expect(snooze.attributes).toMatchObject({ 'reactor.job.snoozes': 1, 'reactor.job.kind': 'resume' });
    expect(snooze.attributes['reactor.job.delay_ms']).toBeGreaterThan(0);
    expect(snoozed.traceContext?.traceparent).toContain(snooze.spanContext().spanId);
  });

  it('an enqueue that fails: the PRODUCER span has status ERROR and the error’s type', async () => {
    const dispatcher: JobDispatcher = {
      dispatch: async () => {
        throw new TypeError('queue unreachable');
      },
    };
    const { engine } = createHarness({ dispatcher });
    const def = backgroundOne('otel-jobs-unreachable');
    engine.register(def);

    await expect(engine.start(def, {})).rejects.toThrow('queue unreachable');

    const send = only(otel.spans(), 'send nest-reactor');
    expect(send.status).toEqual({ code: SpanStatusCode.ERROR, message: 'queue unreachable' });
    expect(send.attributes['error.type']).toBe('TypeError');
  });

  it('a delivery whose handling throws (storage down): the CONSUMER span has status ERROR', async () => {
    const dispatcher = keepingDispatcher();
    const healthy = createHarness();
    let down = false;
    const storage: ReactorStorage = {
      ...healthy.storage,
      save: (state, opts) => healthy.storage.save(state, opts),
      load: (id) => healthy.storage.load(id),
      acquireAndLoad: (id, lease, ttl) =>
        down ? Promise.reject(new Error('storage down')) : healthy.storage.acquireAndLoad(id, lease, ttl),
      listActive: (limit) => healthy.storage.listActive(limit),
      markBroken: (id, name, reason) => healthy.storage.markBroken(id, name, reason),
      requestCancel: (id, reason) => healthy.storage.requestCancel(id, reason),
      cancelRequest: (state) => healthy.storage.cancelRequest(state),
    };
    const { engine } = createHarness({ dispatcher, storage, locks: healthy.locks });
    const def = backgroundOne('otel-jobs-storage-down');
    engine.register(def);
    await engine.start(def, {});

    down = true;
    await expect(engine.handleJob(dispatcher.jobs[0])).rejects.toThrow('storage down');

    const processing = only(otel.spans(), 'process nest-reactor');
    expect(processing.status).toEqual({ code: SpanStatusCode.ERROR, message: 'storage down' });
    expect(processing.attributes['error.type']).toBe('Error');
  });

  /** reserve (undo) → notify (undo fails, calls an API the app traces) → charge (fails, compensate). */
  const refund = () =>
    defineReactor('otel-jobs-refund', (r: ReactorBuilder<object>) => {
      const reserve = r.step('reserve', { run: () => success('held'), undo: () => undefined }, {});
      const notify = r.step(
        'notify',
        {
          run: () => success('mailed'),
          undo: () =>
            trace.getTracer('test-app').startActiveSpan('DELETE /mails/1', (span) => {
              span.end();
              throw new Error('mail server down');
            }),
        },
        {},
        { waitFor: [reserve] },
      );
      return r.step(
        'charge',
        { run: () => failure(new Error('card declined')), compensate: () => undefined },
        {},
        { waitFor: [notify] },
      );
    });

  it('rollbackSpans: a span per compensate and undo under the run span, with the outcome; the callback’s own spans under it', async () => {
    const { engine } = createHarness({ tracing: { rollbackSpans: true } });
    const def = refund();
    engine.register(def);

    const outcome = await engine.run(def, {});

    expect(outcome.status).toBe('failed');
    const spans = otel.spans();
    const run = only(spans, 'reactor.run otel-jobs-refund');
    const compensate = only(spans, 'reactor.step.compensate charge');
    const undoNotify = only(spans, 'reactor.step.undo notify');
    const undoReserve = only(spans, 'reactor.step.undo reserve');
    expect(spans.map((s) => s.name).filter((n) => n.startsWith('reactor.step.'))).toEqual([
      'reactor.step.compensate charge',
      'reactor.step.undo notify',
      'reactor.step.undo reserve',
    ]);
    for (const span of [compensate, undoNotify, undoReserve]) {
      expect(span.kind).toBe(SpanKind.INTERNAL);
      expect(parentOf(span)).toBe(run.spanContext().spanId);
    }
    expect(compensate.attributes).toEqual({
      'reactor.name': 'otel-jobs-refund',
      'reactor.run_id': outcome.runId,
      'reactor.step': 'charge',
      'reactor.outcome': 'success',
    });
    expect(undoNotify.attributes).toMatchObject({ 'reactor.step': 'notify', 'reactor.outcome': 'failure' });
    expect(undoNotify.status).toEqual({ code: SpanStatusCode.ERROR, message: 'mail server down' });
    expect(undoReserve.attributes).toMatchObject({ 'reactor.step': 'reserve', 'reactor.outcome': 'success' });
    expect(undoReserve.status.code).toBe(SpanStatusCode.UNSET);
    expect(parentOf(only(spans, 'DELETE /mails/1'))).toBe(undoNotify.spanContext().spanId);
    // The events on the run span are there as well.
    expect(eventsOf(run).map((e) => e.name)).toContain('reactor.undo.fail');
  });

  it('rollbackSpans off (the default): no compensate or undo spans, the events on the run span only', async () => {
    const { engine } = createHarness();
    const def = refund();
    engine.register(def);

    const outcome = await engine.run(def, {});

    expect(outcome.status).toBe('failed');
    const spans = otel.spans();
    expect(spans.map((s) => s.name).filter((n) => n.startsWith('reactor.step.'))).toEqual([]);
    const run = only(spans, 'reactor.run otel-jobs-refund');
    expect(parentOf(only(spans, 'DELETE /mails/1'))).toBe(run.spanContext().spanId);
    expect(eventsOf(run).map((e) => `${e.name}:${e.attributes['reactor.step']}`)).toEqual([
      'reactor.compensation.start:charge',
      'reactor.compensation.complete:charge',
      'reactor.undo.start:notify',
      'reactor.undo.fail:notify',
      'reactor.undo.start:reserve',
      'reactor.undo.complete:reserve',
    ]);
  });

  it('rollbackSpans on a manual undo: the undo spans are under the undo’s span', async () => {
    const { engine } = createHarness({ tracing: { rollbackSpans: true } });
    const def = defineReactor('otel-jobs-undo', (r: ReactorBuilder<object>) =>
      r.step('ping', { run: () => success('pong'), undo: () => undefined }, {}),
    );
    engine.register(def);
    const outcome = await engine.run(def, {});

    await engine.undo(outcome.runId);

    const spans = otel.spans();
    const undo = only(spans, 'reactor.step.undo ping');
    expect(parentOf(undo)).toBe(only(spans, 'reactor.undo otel-jobs-undo').spanContext().spanId);
    expect(undo.attributes).toMatchObject({ 'reactor.step': 'ping', 'reactor.outcome': 'success' });
  });

  it('tracing: false: no job spans, and a job is enqueued again without its delivery', async () => {
    const dispatcher = keepingDispatcher();
    const { engine } = createHarness({ dispatcher, tracing: false });

    const runId = await otel.tracer().startActiveSpan('caller', async (span) => {
      const id = await deliverTwice(engine, dispatcher, 'otel-jobs-off');
      span.end();
      return id;
    });

    expect(dispatcher.jobs).toEqual([
      { kind: 'resume', runId, reactorName: 'otel-jobs-off' },
      { kind: 'resume', runId, reactorName: 'otel-jobs-off', snoozes: 1 },
    ]);
    expect(otel.spans().map((s) => s.name)).toEqual(['caller']);
  });
});
