/**
 * ReactorMetricsModule on the embedded runtime (issue 25): the counters and the histogram recorded
 * from the lifecycle events of real runs, exact step timings from the events' clock, the lease loss
 * event, the sweeper's results, no queue gauge (the embedded runtime has no queue), the options,
 * and the registry's metrics taken off when the app closes.
 */
import { Test, type TestingModule } from '@nestjs/testing';
import { Registry, register as globalRegistry } from 'prom-client';
import { ConfigurationError, type ReactorEvent } from '../../lib/core';
import { ReactorMetrics, ReactorMetricsModule, type ReactorMetricsOptions } from '../../lib/metrics';
import { MAX_TRACKED_RUNS, StepTimings } from '../../lib/metrics/step-timings';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { ReactorSweeper } from '../../lib/sweepers/reactor.sweeper';
import { CapturingLogger } from '../nest/fixtures';
import {
  METRICS_REACTORS,
  OkReactor,
  RetryReactor,
  RollbackReactor,
  expectRunMetrics,
  sampleOf,
  seriesOf,
} from './metrics.fixtures';

async function embeddedApp(options: ReactorMetricsOptions = {}): Promise<TestingModule> {
  const app = await Test.createTestingModule({
    imports: [ReactorModule.forRoot(), ReactorMetricsModule.forRoot(options)],
    providers: METRICS_REACTORS,
  })
    .setLogger(new CapturingLogger())
    .compile();
  await app.init();
  return app;
}

const RUN = { runId: 'r-1', reactorName: 'metrics-x' };

/** An event of the run above, without its run and reactor. */
type RunEventOf<E> = E extends unknown ? Omit<E, 'runId' | 'reactorName'> : never;

describe('ReactorMetricsModule on the embedded runtime', () => {
  let app: TestingModule;
  let registry: Registry;

  beforeEach(async () => {
    registry = new Registry();
    app = await embeddedApp({ registry });
  });
  afterEach(async () => {
    await app?.close();
  });

  it('counts runs started and finished by reactor and status, retries, compensations and undos, and times each attempt', async () => {
    const client = app.get(ReactorClient);
    expect((await client.run(OkReactor, {})).status).toBe('completed');
    expect((await client.run(RetryReactor, {})).status).toBe('completed');
    expect((await client.run(RollbackReactor, {})).status).toBe('failed');
    expect((await client.run(OkReactor, {})).status).toBe('completed');

    await expectRunMetrics(registry);
    // No attempt is left in flight.
    expect((app.get(ReactorMetrics) as unknown as { timings: StepTimings }).timings.size).toBe(0);
  });

  it('reports no queue gauge: the embedded runtime has no queue', async () => {
    await app.get(ReactorClient).run(OkReactor, {});
    expect(await seriesOf(registry, 'reactor_queue_jobs')).toEqual({});
    expect(await seriesOf(registry, 'reactor_queue_oldest_waiting_age_seconds')).toEqual({});
    const text = await registry.metrics();
    expect(text).toContain('# TYPE reactor_queue_jobs gauge');
    expect(text).toContain('# TYPE reactor_step_duration_seconds histogram');
  });

  it('times attempts by the events clock: success, retry, a failure ended by the rollback, and nothing for a snooze', async () => {
    const metrics = app.get(ReactorMetrics);
    const emit = (event: RunEventOf<ReactorEvent>) => metrics.onEvent({ ...RUN, ...event } as ReactorEvent);
    emit({ type: 'reactor.start', at: 0, resumed: false, inputs: {} });
    emit({ type: 'step.start', step: 'a', at: 1_000, attempt: 1, arguments: {} });
    emit({ type: 'step.retry', step: 'a', at: 1_250, attempt: 1, delayMs: 10, error: 'x' });
    emit({ type: 'reactor.start', at: 1_300, resumed: true, inputs: {} });
    emit({ type: 'step.start', step: 'a', at: 2_000, attempt: 2, arguments: {} });
    emit({ type: 'step.complete', step: 'a', at: 2_500, outcome: 'success' });
    emit({ type: 'step.start', step: 'b', at: 3_000, attempt: 1, arguments: {} });
    emit({ type: 'step.snooze', step: 'b', at: 3_000, key: 'k', code: 'LOCK_CONTENDED', delayMs: 5, snoozes: 1 });
    emit({ type: 'step.start', step: 'c', at: 4_000, attempt: 1, arguments: {} });
    emit({ type: 'step.start', step: 'd', at: 4_000, attempt: 1, arguments: {} });
    emit({ type: 'step.complete', step: 'd', at: 4_100, outcome: 'halt' });
    // c failed: the rollback starts (an undo of a) 2 s after c began; c's step.fail comes after it.
    emit({ type: 'undo.start', step: 'a', at: 6_000 });
    emit({ type: 'undo.complete', step: 'a', at: 9_000 });
    emit({ type: 'step.fail', step: 'c', at: 9_500, error: 'boom', attempts: 1 });
    emit({ type: 'reactor.fail', at: 9_600, failure: {} as never });
    // A caller retries in place: the next attempt starts when the delay is over, with no step.start.
    emit({ type: 'step.start', step: 'e', at: 10_000, attempt: 1, arguments: {} });
    emit({ type: 'step.retry', step: 'e', at: 10_100, attempt: 1, delayMs: 400, error: 'x' });
    emit({ type: 'step.complete', step: 'e', at: 10_800, outcome: 'success' });

    const h = 'reactor_step_duration_seconds';
    expect(await sampleOf(registry, `${h}_sum`, { reactor: 'metrics-x', step: 'a', outcome: 'retry' })).toBe(0.25);
    expect(await sampleOf(registry, `${h}_sum`, { reactor: 'metrics-x', step: 'a', outcome: 'success' })).toBe(0.5);
    expect(await sampleOf(registry, `${h}_sum`, { reactor: 'metrics-x', step: 'c', outcome: 'failed' })).toBe(2);
    expect(await sampleOf(registry, `${h}_count`, { reactor: 'metrics-x', step: 'c', outcome: 'failed' })).toBe(1);
    expect(await sampleOf(registry, `${h}_sum`, { reactor: 'metrics-x', step: 'd', outcome: 'halt' })).toBeCloseTo(0.1);
    expect(
      await sampleOf(registry, `${h}_bucket`, { reactor: 'metrics-x', step: 'a', outcome: 'success', le: 0.5 }),
    ).toBe(1);
    expect(
      await sampleOf(registry, `${h}_bucket`, { reactor: 'metrics-x', step: 'a', outcome: 'success', le: 0.25 }),
    ).toBe(0);
    expect(
      await sampleOf(registry, `${h}_count`, { reactor: 'metrics-x', step: 'b', outcome: 'success' }),
    ).toBeUndefined();
    expect(await sampleOf(registry, `${h}_sum`, { reactor: 'metrics-x', step: 'e', outcome: 'retry' })).toBeCloseTo(
      0.1,
    );
    expect(await sampleOf(registry, `${h}_sum`, { reactor: 'metrics-x', step: 'e', outcome: 'success' })).toBeCloseTo(
      0.3,
    );
    expect(await seriesOf(registry, 'reactor_runs_started_total')).toEqual({ 'reactor=metrics-x': 1 });
    expect(await seriesOf(registry, 'reactor_runs_finished_total')).toEqual({ 'reactor=metrics-x,status=failed': 1 });
  });

  it('counts lease losses by reactor, and forgets the attempts the lost execution had in flight', async () => {
    const metrics = app.get(ReactorMetrics);
    metrics.onEvent({ ...RUN, type: 'step.start', step: 'a', at: 0, attempt: 1, arguments: {} });
    metrics.onEvent({ ...RUN, type: 'lease.lost', at: 10 });
    metrics.onEvent({ runId: 'r-2', reactorName: 'metrics-y', type: 'lease.lost', at: 10 });
    metrics.onEvent({ ...RUN, type: 'step.complete', step: 'a', at: 20, outcome: 'success' });
    expect(await seriesOf(registry, 'reactor_lease_losses_total')).toEqual({
      'reactor=metrics-x': 1,
      'reactor=metrics-y': 1,
    });
    expect(await seriesOf(registry, 'reactor_step_duration_seconds_count')).toEqual({});
  });

  it("counts the recovery sweeper's results once per sweep, with the last sweep's time", async () => {
    expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({});
    expect(await seriesOf(registry, 'reactor_sweeper_last_sweep_timestamp_seconds')).toEqual({ '': 0 });
    const before = Date.now();
    const client = app.get(ReactorClient);
    await client.sweepOnce();
    expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({ 'kind=runs': 0, 'kind=maps': 0 });
    // Each sweep is counted, however many run between two scrapes.
    const sweeper = app.get(ReactorSweeper);
    jest.spyOn(sweeper['engine'], 'recoverStalled').mockResolvedValueOnce(2).mockResolvedValueOnce(3);
    jest.spyOn(sweeper['engine'], 'recoverMaps').mockResolvedValueOnce(1).mockResolvedValueOnce(0);
    await client.sweepOnce();
    await client.sweepOnce();
    expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({ 'kind=runs': 5, 'kind=maps': 1 });
    expect(await seriesOf(registry, 'reactor_sweeper_recovered_total')).toEqual({ 'kind=runs': 5, 'kind=maps': 1 });
    const at = (await sampleOf(registry, 'reactor_sweeper_last_sweep_timestamp_seconds'))!;
    expect(at * 1000).toBeGreaterThanOrEqual(before);
    expect(at * 1000).toBeLessThanOrEqual(Date.now());
  });

  it('takes its metrics off the registry when the app closes, so that another app registers them again', async () => {
    expect(registry.getSingleMetric('reactor_runs_started_total')).toBeDefined();
    const sweeper = app.get(ReactorSweeper);
    expect(Object.hasOwn(sweeper, 'sweepOnce')).toBe(true);
    await app.close();
    expect(registry.getMetricsAsArray()).toEqual([]);
    expect(Object.hasOwn(sweeper, 'sweepOnce')).toBe(false); // the sweeper is as it was
    app = await embeddedApp({ registry });
    expect(registry.getSingleMetric('reactor_runs_started_total')).toBeDefined();
  });

  it('serves an OpenMetrics registry in its format, and still takes every metric off at close', async () => {
    const openMetrics = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
    openMetrics.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const other = await embeddedApp({ registry: openMetrics, prefix: 'om_' });
    await other.get(ReactorClient).run(OkReactor, {});
    const text = await other.get(ReactorMetrics).scrape();
    expect(text).toContain('# TYPE om_runs_started counter');
    expect(text).toContain('om_runs_started_total{reactor="metrics-ok"} 1');
    expect(text.endsWith('# EOF\n')).toBe(true);
    await other.close();
    expect(openMetrics.getMetricsAsArray()).toEqual([]);
  });

  it('refuses a second module on the same registry and prefix, naming the option; another prefix is fine', async () => {
    await expect(embeddedApp({ registry })).rejects.toThrow(
      /ReactorMetricsModule cannot register reactor_runs_started_total, .*another 'prefix'/,
    );
    const other = await embeddedApp({ registry, prefix: 'other_' });
    try {
      await other.get(ReactorClient).run(OkReactor, {});
      expect(await seriesOf(registry, 'other_runs_started_total')).toEqual({ 'reactor=metrics-ok': 1 });
      expect(await seriesOf(registry, 'reactor_runs_started_total')).toEqual({});
    } finally {
      await other.close();
    }
  });
});

describe('ReactorMetricsModule options', () => {
  it("registers on prom-client's global registry by default", async () => {
    const app = await embeddedApp();
    try {
      await app.get(ReactorClient).run(OkReactor, {});
      expect(await sampleOf(globalRegistry, 'reactor_runs_started_total', { reactor: 'metrics-ok' })).toBe(1);
      expect(app.get(ReactorMetrics).registry).toBe(globalRegistry);
    } finally {
      await app.close();
    }
    expect(globalRegistry.getSingleMetric('reactor_runs_started_total')).toBeUndefined();
  });

  it.each([
    [{ prefix: '1x_' }, 'prefix'],
    [{ prefix: 'a-b' }, 'prefix'],
    [{ registry: {} }, 'registry'],
    [{ controller: 'yes' }, 'controller'],
    [{ path: '../x' }, 'path'],
    [{ path: 'a b' }, 'path'],
    [{ buckets: [] }, 'buckets'],
    [{ buckets: [1, 0.5] }, 'buckets'],
    [{ queueTimeoutMs: 0 }, 'queueTimeoutMs'],
    [{ colour: 'red' }, 'colour'],
  ])('refuses %j, naming the option', (options, option) => {
    let error: unknown;
    try {
      ReactorMetricsModule.forRoot(options as ReactorMetricsOptions);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).option).toBe(option);
  });

  it('accepts an empty prefix, and a path with slashes around it', () => {
    expect(() =>
      ReactorMetricsModule.forRoot({ prefix: '', path: '/internal/metrics/', registry: new Registry() }),
    ).not.toThrow();
  });

  it('fails at boot, saying what to import, without ReactorModule', async () => {
    const registry = new Registry();
    const module = await Test.createTestingModule({ imports: [ReactorMetricsModule.forRoot({ registry })] })
      .setLogger(new CapturingLogger())
      .compile();
    await expect(module.init()).rejects.toThrow(
      /ReactorMetricsModule needs ReactorModule: import ReactorModule.forRoot/,
    );
    expect(registry.getMetricsAsArray()).toEqual([]);
  });
});

describe('StepTimings', () => {
  it(`remembers at most ${MAX_TRACKED_RUNS} runs (the oldest is forgotten)`, () => {
    const timings = new StepTimings(2);
    timings.start('r1', 's', 0);
    timings.start('r2', 's', 0);
    timings.start('r3', 's', 0);
    expect(timings.size).toBe(2);
    expect(timings.end('r1', 's', 1_000)).toBeUndefined();
    expect(timings.end('r3', 's', 1_000)).toBe(1);
  });
});
