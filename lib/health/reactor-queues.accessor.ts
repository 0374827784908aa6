import { WorkerHost } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Queue, Worker } from 'bullmq';
import { type ReactorRuntime, type ResolvedReactorModuleOptions, REACTOR_OPTIONS, REACTOR_RUNTIME } from '../config';

/** One BullMQ worker of the module, as the health indicator reports it. */
export interface ReactorWorkerView {
  /** Name of the queue the worker consumes. */
  readonly queue: string;
  /**
   * Where the worker is: its host's own state when it names one (`RunProcessor`: `idle`,
   * `running`, `draining`, `stopped`), else `running`, `paused`, `closing` or `idle` from BullMQ.
   */
  readonly state: string;
  /** Whether the worker is fetching jobs now (started, not paused, not closing). */
  readonly running: boolean;
}

/**
 * The BullMQ workers and queues of the module, read for the health indicator (Redis runtime).
 *
 * Found, not injected: every `@nestjs/bullmq` processor (a `WorkerHost`) with the workers of the
 * reactors' own queues it runs (`queueWorkers`), and every BullMQ queue provider of the
 * application, whose key prefix lies under the module's `prefix` (the module puts all its keys
 * there: `<prefix>:{<prefix>:queue}`, `<prefix>:{<prefix>:queue:<name>}`), plus the runtime's
 * queues (`ReactorQueues`). The application's own queues (under another prefix) are not counted.
 *
 * NOTE: tolerant by design: a provider that is not built yet, or a worker whose getter throws
 * (before `@nestjs/bullmq` created it), is skipped, never an error.
 * @internal
 */
@Injectable()
export class ReactorQueuesAccessor {
  constructor(
    private readonly discovery: DiscoveryService,
    @Inject(REACTOR_OPTIONS) private readonly options: ResolvedReactorModuleOptions,
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
  ) {}

  /** The module's workers, one view each. */
  workers(): ReactorWorkerView[] {
    const seen = new Set<Worker>();
    const views: ReactorWorkerView[] = [];
    for (const instance of this.instances()) {
      if (!(instance instanceof WorkerHost)) continue;
      // The host's own worker, and the workers of the reactors' own queues it runs (`RunProcessor`).
      const named = (instance as { queueWorkers?: readonly Worker[] }).queueWorkers ?? [];
      for (const worker of [workerOf(instance), ...named]) {
        if (!worker || seen.has(worker) || !this.isOurs(worker.opts?.prefix)) continue;
        seen.add(worker);
        views.push(viewOf(instance, worker));
      }
    }
    return views.sort((a, b) => a.queue.localeCompare(b.queue));
  }

  /** The module's queues (the dispatcher's first), one per name. */
  queues(): Queue[] {
    const byName = new Map<string, Queue>();
    const dispatcherQueue = (this.runtime.dispatcher as { queue?: unknown }).queue;
    const reactorQueues = (this.runtime as { queues?: { all(): readonly unknown[] } }).queues?.all() ?? [];
    for (const candidate of [dispatcherQueue, ...reactorQueues, ...this.instances()]) {
      if (isQueue(candidate) && this.isOurs(candidate.opts?.prefix) && !byName.has(candidate.name)) {
        byName.set(candidate.name, candidate);
      }
    }
    return [...byName.values()];
  }

  private *instances(): Iterable<unknown> {
    for (const wrapper of this.discovery.getProviders()) {
      if (!wrapper.isAlias && wrapper.instance) yield wrapper.instance;
    }
  }

  private isOurs(bullPrefix: unknown): boolean {
    return typeof bullPrefix === 'string' && bullPrefix.startsWith(`${this.options.prefix}:`);
  }
}

function workerOf(host: WorkerHost): Worker | undefined {
  try {
    const worker = host.worker;
    return typeof worker?.isRunning === 'function' ? worker : undefined;
  } catch {
    return undefined; // not created yet
  }
}

function viewOf(host: WorkerHost, worker: Worker): ReactorWorkerView {
  const closing = worker.closing !== undefined;
  const paused = worker.isPaused();
  const running = worker.isRunning() && !paused && !closing;
  const derived = closing ? 'closing' : paused ? 'paused' : running ? 'running' : 'idle';
  const own = (host as { state?: unknown }).state;
  // A host that says `running` while BullMQ is not fetching (paused, or its loop ended) is not believed.
  const state = typeof own === 'string' && (own !== 'running' || running) ? own : derived;
  return { queue: worker.name, state, running };
}

function isQueue(value: unknown): value is Queue {
  // NOTE: not `instanceof`: a BullMQ Pro queue, or one from another copy of bullmq, is a queue too.
  const queue = value as Partial<Queue> | undefined;
  return (
    typeof queue === 'object' &&
    queue !== null &&
    typeof queue.getJobCounts === 'function' &&
    typeof queue.name === 'string' &&
    typeof queue.opts === 'object'
  );
}
