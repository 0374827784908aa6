import type { Registry } from 'prom-client';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { failure, success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';

/** Two steps that succeed. */
@Reactor('metrics-ok')
export class OkReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const a = r.step('a', () => success(1), {});
    return r.step('b', (args: { a: number }) => success(args.a + 1), { a });
  }
}

/** One step that fails its first two attempts (retried 20 ms later each time), then succeeds. */
@Reactor('metrics-retry')
export class RetryReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step(
      'flaky',
      (_args: object, ctx: StepContext) =>
        ctx.attempt < 3 ? failure(new Error(`flake ${ctx.attempt}`)) : success('ok'),
      {},
      { retries: { maxAttempts: 3, backoff: 'fixed', baseDelayMs: 20 } },
    );
  }
}

/**
 * `reserve`, `notify`, then a declined `charge`: the charge is compensated (ok), `notify`'s undo
 * throws, `reserve` is undone (ok); the run fails.
 */
@Reactor('metrics-rollback')
export class RollbackReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const reserve = r.step('reserve', { run: () => success('reserved'), undo: () => undefined }, {});
    const notify = r.step(
      'notify',
      {
        run: () => success('notified'),
        undo: () => {
          throw new Error('cannot unsend');
        },
      },
      {},
      { waitFor: [reserve] },
    );
    return r.step(
      'charge',
      { run: () => failure(new Error('card declined'), { retryable: false }), compensate: () => undefined },
      {},
      { waitFor: [notify] },
    );
  }
}

export const METRICS_REACTORS = [OkReactor, RetryReactor, RollbackReactor];

type Labels = Record<string, string | number>;

/**
 * The value of one sample of `registry` (a scrape, collect functions included): the series `name`
 * (for a histogram, `<name>_count`, `<name>_sum` or `<name>_bucket`) with exactly `labels`, or
 * undefined when there is none.
 */
export async function sampleOf(registry: Registry, name: string, labels: Labels = {}): Promise<number | undefined> {
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const value of metric.values) {
      const series = (value as { metricName?: string }).metricName ?? metric.name;
      if (series === name && sameLabels(value.labels as Labels, labels)) return value.value;
    }
  }
  return undefined;
}

/** Every sample of the series `name`: its labels (as `k=v,k=v`, sorted) and value. */
export async function seriesOf(registry: Registry, name: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const value of metric.values) {
      const series = (value as { metricName?: string }).metricName ?? metric.name;
      if (series !== name) continue;
      const key = Object.entries(value.labels)
        .filter(([label]) => label !== 'le')
        .map(([label, v]) => `${label}=${String(v)}`)
        .sort()
        .join(',');
      out[key] = value.value;
    }
  }
  return out;
}

function sameLabels(actual: Labels, expected: Labels): boolean {
  const a = Object.keys(actual);
  return a.length === Object.keys(expected).length && a.every((k) => String(actual[k]) === String(expected[k]));
}

/** More series for {@link expectRunMetrics}, from reactors a spec adds to {@link METRICS_REACTORS}. */
export interface MoreRunSeries {
  started?: Record<string, number>;
  finished?: Record<string, number>;
  steps?: Record<string, number>;
}

/**
 * Expect the run, step, retry, compensation, undo and lease-loss series that {@link OkReactor} run
 * twice, {@link RetryReactor} and {@link RollbackReactor} once each leave in `registry`, plus `more`
 * (the series of a spec's own reactors), and no other series of those metrics.
 */
export async function expectRunMetrics(registry: Registry, more: MoreRunSeries = {}): Promise<void> {
  expect(await seriesOf(registry, 'reactor_runs_started_total')).toEqual({
    'reactor=metrics-ok': 2,
    'reactor=metrics-retry': 1,
    'reactor=metrics-rollback': 1,
    ...more.started,
  });
  expect(await seriesOf(registry, 'reactor_runs_finished_total')).toEqual({
    'reactor=metrics-ok,status=completed': 2,
    'reactor=metrics-retry,status=completed': 1,
    'reactor=metrics-rollback,status=failed': 1,
    ...more.finished,
  });
  expect(await seriesOf(registry, 'reactor_step_duration_seconds_count')).toEqual({
    'outcome=success,reactor=metrics-ok,step=a': 2,
    'outcome=success,reactor=metrics-ok,step=b': 2,
    'outcome=retry,reactor=metrics-retry,step=flaky': 2,
    'outcome=success,reactor=metrics-retry,step=flaky': 1,
    'outcome=success,reactor=metrics-rollback,step=reserve': 1,
    'outcome=success,reactor=metrics-rollback,step=notify': 1,
    'outcome=failed,reactor=metrics-rollback,step=charge': 1,
    ...more.steps,
  });
  expect(await seriesOf(registry, 'reactor_step_retries_total')).toEqual({ 'reactor=metrics-retry,step=flaky': 2 });
  expect(await seriesOf(registry, 'reactor_compensations_total')).toEqual({
    'ok=true,reactor=metrics-rollback,step=charge': 1,
  });
  expect(await seriesOf(registry, 'reactor_undos_total')).toEqual({
    'ok=false,reactor=metrics-rollback,step=notify': 1,
    'ok=true,reactor=metrics-rollback,step=reserve': 1,
  });
  expect(await seriesOf(registry, 'reactor_lease_losses_total')).toEqual({});
}
