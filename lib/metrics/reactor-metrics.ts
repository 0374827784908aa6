import { Inject, Injectable, Logger, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Counter, Gauge, Histogram, type Metric } from 'prom-client';
import { ConfigurationError, ReactorEngine, type ReactorEvent, type ReactorMiddleware } from '../core';
import { REACTOR_LOGGER_CONTEXT } from '../config';
import { answerWithin } from '../health/answer-within';
import { ReactorQueues } from '../queue/reactor-queues';
import { ReactorSweeper, type LastSweep, type SweepResult } from '../sweepers/reactor.sweeper';
import { METRICS_OPTIONS, type MetricsRegistry, type ResolvedMetricsOptions } from './metrics.options';
import { QUEUE_JOB_STATES, snapshotQueue, type QueueSnapshot } from './queue-snapshot';
import { StepTimings } from './step-timings';
import { observeSweeps } from './sweep-observer';

/**
 * The reactor metrics on a prom-client registry, and the middleware that records them.
 *
 * Counters and the histogram are recorded from the lifecycle events of the runs this process
 * executes (each replica counts its own; Prometheus sums them). Gauges are read when the registry
 * is scraped: the module's BullMQ queues (Redis runtime) and the recovery sweeper of this process.
 * Labels are reactor, step and queue names only: never a run id, a key or an input.
 */
@Injectable()
export class ReactorMetrics implements ReactorMiddleware, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(REACTOR_LOGGER_CONTEXT);
  /** Each metric with its name as registered (an OpenMetrics scrape renames counters in place). */
  private readonly metrics: Array<[name: string, metric: Metric]> = [];
  private readonly timings = new StepTimings();
  private readonly runsStarted: Counter<'reactor'>;
  private readonly runsFinished: Counter<'reactor' | 'status'>;
  private readonly stepDuration: Histogram<'reactor' | 'step' | 'outcome'>;
  private readonly stepRetries: Counter<'reactor' | 'step'>;
  private readonly compensations: Counter<'reactor' | 'step' | 'ok'>;
  private readonly undos: Counter<'reactor' | 'step' | 'ok'>;
  private readonly leaseLosses: Counter<'reactor'>;
  private readonly sweeperRecovered: Counter<'kind'>;
  private stopObservingSweeps?: () => void;
  /** The scrape's read of the queues, shared by the queue gauges while it is in flight. */
  private queueRead?: Promise<QueueSnapshot[] | undefined>;
  private sweeper?: ReactorSweeper | null;
  private registered = false;

  constructor(
    @Inject(METRICS_OPTIONS) private readonly options: ResolvedMetricsOptions,
    private readonly moduleRef: ModuleRef,
    // Optional so that a missing ReactorModule gets the message below, not Nest's.
    @Optional() private readonly queues?: ReactorQueues,
  ) {
    const { prefix, buckets } = options;
    const p = (name: string) => `${prefix}${name}`;
    this.runsStarted = this.add(
      new Counter({
        name: p('runs_started_total'),
        help: 'Runs that began executing (their first execution; not resumes).',
        labelNames: ['reactor'],
        registers: [],
      }),
    );
    this.runsFinished = this.add(
      new Counter({
        name: p('runs_finished_total'),
        help: 'Runs that ended, by status: completed, failed, halted or cancelled.',
        labelNames: ['reactor', 'status'],
        registers: [],
      }),
    );
    this.stepDuration = this.add(
      new Histogram({
        name: p('step_duration_seconds'),
        help: 'Duration of step attempts, by how they ended: success, skipped, halt, retry or failed.',
        labelNames: ['reactor', 'step', 'outcome'],
        buckets,
        registers: [],
      }),
    );
    this.stepRetries = this.add(
      new Counter({
        name: p('step_retries_total'),
        help: 'Step attempts that failed and were scheduled to be tried again.',
        labelNames: ['reactor', 'step'],
        registers: [],
      }),
    );
    this.compensations = this.add(
      new Counter({
        name: p('compensations_total'),
        help: 'Compensations of failing steps, by whether they succeeded (ok="true") or failed.',
        labelNames: ['reactor', 'step', 'ok'],
        registers: [],
      }),
    );
    this.undos = this.add(
      new Counter({
        name: p('undos_total'),
        help: 'Undos of completed steps in a rollback, by whether they succeeded (ok="true") or failed.',
        labelNames: ['reactor', 'step', 'ok'],
        registers: [],
      }),
    );
    this.leaseLosses = this.add(
      new Counter({
        name: p('lease_losses_total'),
        help: 'Executions that stopped because their run lease was lost (expired or taken over by another process).',
        labelNames: ['reactor'],
        registers: [],
      }),
    );
    this.sweeperRecovered = this.add(
      new Counter({
        name: p('sweeper_recovered_total'),
        help: 'Recovery jobs the sweeps of this process enqueued: kind="runs" for stalled runs, kind="maps" for fan-out maps.',
        labelNames: ['kind'],
        registers: [],
      }),
    );
    const lastSweepAt: Gauge = this.add(
      new Gauge({
        name: p('sweeper_last_sweep_timestamp_seconds'),
        help: 'When the last sweep of this process finished (Unix time, seconds); 0 before the first.',
        registers: [],
        collect: () => {
          lastSweepAt.set((this.lastSweep()?.finishedAt ?? 0) / 1000);
        },
      }),
    );
    const queueJobs: Gauge<'queue' | 'state'> = this.add(
      new Gauge({
        name: p('queue_jobs'),
        help: 'Jobs in each BullMQ queue of the module, by state (waiting: ready for a worker, including paused and prioritized).',
        labelNames: ['queue', 'state'],
        registers: [],
        collect: async () => {
          const snapshots = await this.readQueues();
          queueJobs.reset();
          for (const snapshot of snapshots ?? []) {
            for (const state of QUEUE_JOB_STATES) queueJobs.set({ queue: snapshot.queue, state }, snapshot.jobs[state]);
          }
        },
      }),
    );
    const oldestAge: Gauge<'queue'> = this.add(
      new Gauge({
        name: p('queue_oldest_waiting_age_seconds'),
        help: 'How long the oldest job ready for a worker has waited in each BullMQ queue of the module (0 when none waits).',
        labelNames: ['queue'],
        registers: [],
        collect: async () => {
          const snapshots = await this.readQueues();
          oldestAge.reset();
          for (const snapshot of snapshots ?? [])
            oldestAge.set({ queue: snapshot.queue }, snapshot.oldestWaitingAgeSeconds);
        },
      }),
    );
  }

  /** The registry the metrics are on. */
  get registry(): MetricsRegistry {
    return this.options.registry;
  }

  /** The registry in Prometheus's text format (or OpenMetrics, for an OpenMetrics registry). */
  scrape(): Promise<string> {
    return this.options.registry.metrics();
  }

  /** Record one lifecycle event (the engine delivers each, in order, once the module is initialized). */
  onEvent(event: ReactorEvent): void {
    const reactor = event.reactorName;
    switch (event.type) {
      case 'reactor.start':
        if (!event.resumed) this.runsStarted.inc({ reactor });
        break;
      case 'reactor.complete':
      case 'reactor.fail':
        this.timings.forget(event.runId);
        this.runsFinished.inc({ reactor, status: event.type === 'reactor.fail' ? 'failed' : event.outcome.status });
        break;
      case 'step.start':
        this.timings.start(event.runId, event.step, event.at);
        break;
      case 'step.complete':
        this.observeStep(event, event.outcome);
        break;
      case 'step.retry':
        this.stepRetries.inc({ reactor, step: event.step });
        this.observeStep(event, 'retry');
        // A caller retries in place after the delay, with no new step.start; a worker's next
        // attempt is another execution, whose step.start replaces this.
        this.timings.start(event.runId, event.step, event.at + event.delayMs);
        break;
      case 'step.fail':
        this.observeStep(event, 'failed');
        break;
      case 'step.snooze':
        this.timings.forget(event.runId, event.step);
        break;
      case 'compensation.start':
      case 'undo.start':
        // The rollback begins once the run's steps in flight have settled: those not ended yet failed.
        for (const [step, seconds] of this.timings.endAll(event.runId, event.at)) {
          this.stepDuration.observe({ reactor, step, outcome: 'failed' }, seconds);
        }
        break;
      case 'compensation.complete':
      case 'compensation.fail':
        this.compensations.inc({ reactor, step: event.step, ok: String(event.type === 'compensation.complete') });
        break;
      case 'undo.complete':
      case 'undo.fail':
        this.undos.inc({ reactor, step: event.step, ok: String(event.type === 'undo.complete') });
        break;
      case 'lease.lost':
        this.timings.forget(event.runId);
        this.leaseLosses.inc({ reactor });
        break;
    }
  }

  /** Register the metrics, deliver the engine's lifecycle events here, and look at the sweeper's results from now on. */
  onModuleInit(): void {
    const engine = this.find(ReactorEngine);
    if (!engine || !this.queues) throw new ConfigurationError(NO_REACTOR_MODULE, 'imports');
    this.register(this.options.registry);
    engine.addMiddleware(this);
    const sweeper = this.sweeperOf();
    if (sweeper) this.stopObservingSweeps = observeSweeps(sweeper, (result) => this.countSweep(result));
  }

  /** Take the metrics off the registry (a new app in the same process registers them again). */
  onModuleDestroy(): void {
    this.stopObservingSweeps?.();
    this.stopObservingSweeps = undefined;
    if (!this.registered) return;
    this.registered = false;
    for (const [name, metric] of this.metrics) {
      if (this.options.registry.getSingleMetric(name) === metric) this.options.registry.removeSingleMetric(name);
    }
  }

  private add<M extends Metric>(metric: M): M {
    this.metrics.push([(metric as unknown as { name: string }).name, metric]);
    return metric;
  }

  private register(registry: MetricsRegistry): void {
    const taken = this.metrics.map(([name]) => name).filter((name) => registry.getSingleMetric(name) !== undefined);
    if (taken.length > 0) throw new ConfigurationError(metricsTaken(taken), 'prefix');
    for (const [, metric] of this.metrics) registry.registerMetric(metric);
    this.registered = true;
  }

  private observeStep(event: ReactorEvent & { step: string }, outcome: string): void {
    const seconds = this.timings.end(event.runId, event.step, event.at);
    if (seconds !== undefined) {
      this.stepDuration.observe({ reactor: event.reactorName, step: event.step, outcome }, seconds);
    }
  }

  /** Count what one sweep of this process re-enqueued (both series exist from the first sweep on). */
  private countSweep(result: SweepResult): void {
    this.sweeperRecovered.inc({ kind: 'runs' }, result.reactors);
    this.sweeperRecovered.inc({ kind: 'maps' }, result.maps);
  }

  private sweeperOf(): ReactorSweeper | undefined {
    if (this.sweeper === undefined) this.sweeper = this.find(ReactorSweeper) ?? null;
    return this.sweeper ?? undefined;
  }

  private lastSweep(): LastSweep | undefined {
    return this.sweeperOf()?.lastSweep;
  }

  /** One read of the queues per scrape (both queue gauges use it); undefined when they did not answer in time. */
  private readQueues(): Promise<QueueSnapshot[] | undefined> {
    this.queueRead ??= this.readQueuesNow().finally(() => (this.queueRead = undefined));
    return this.queueRead;
  }

  private async readQueuesNow(): Promise<QueueSnapshot[] | undefined> {
    const queues = this.queues?.all() ?? [];
    if (queues.length === 0) return [];
    const now = Date.now(); // BullMQ stamps jobs with the system clock
    const answer = await answerWithin(
      () => Promise.all(queues.map((queue) => snapshotQueue(queue, now))),
      this.options.queueTimeoutMs,
    );
    if (answer.ok) return answer.value;
    this.logger.warn(
      `Metrics: the BullMQ queues did not report their jobs ${
        answer.timedOut
          ? `within ${this.options.queueTimeoutMs} ms`
          : `(${String((answer.error as Error)?.message ?? answer.error)})`
      }; the queue gauges are left out of this scrape.`,
    );
    return undefined;
  }

  /** A provider of the ReactorModule (which does not export it), or `undefined` if it has none. */
  private find<T>(type: new (...args: never[]) => T): T | undefined {
    try {
      return this.moduleRef.get(type, { strict: false });
    } catch {
      return undefined;
    }
  }
}

const NO_REACTOR_MODULE =
  'ReactorMetricsModule needs ReactorModule: import ReactorModule.forRoot(...) in the application ' +
  "(it is global by default), or pass it in ReactorMetricsModule.forRoot({ imports }) when it is 'global: false'.";

function metricsTaken(names: string[]): string {
  return (
    `ReactorMetricsModule cannot register ${names.join(', ')}: the registry already holds metrics of these names ` +
    '(a second ReactorMetricsModule on the same registry, or metrics of your own). Give this one another ' +
    "'prefix' or another 'registry'."
  );
}
