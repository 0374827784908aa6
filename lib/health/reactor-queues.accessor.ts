import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue, Worker } from 'bullmq';
import { ReactorQueues } from '../queue/reactor-queues';
import { RunProcessor } from '../queue/run.processor';

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
 * The BullMQ workers and queues of the module, read for the health indicator (Redis runtime):
 * the module's own `RunProcessor` (the default queue's worker, and the workers of the reactors'
 * own queues it runs, `queueWorkers`) and its `ReactorQueues`. Nothing of the application's own
 * BullMQ setup is looked at.
 *
 * NOTE: tolerant by design: on the embedded runtime there is no processor and no queue, and a
 * worker not created yet (before `@nestjs/bullmq` built it) is skipped, never an error.
 * @internal
 */
@Injectable()
export class ReactorQueuesAccessor {
  private processor?: RunProcessor | null;

  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly reactorQueues: ReactorQueues,
  ) {}

  /** The module's workers, one view each. */
  workers(): ReactorWorkerView[] {
    const host = this.runProcessor();
    if (!host) return [];
    return [workerOf(host), ...host.queueWorkers]
      .filter((worker): worker is Worker => worker !== undefined)
      .map((worker) => viewOf(host, worker))
      .sort((a, b) => a.queue.localeCompare(b.queue));
  }

  /** The module's queues (the default one first). */
  queues(): Queue[] {
    return this.reactorQueues.all();
  }

  /** The module's processor (Redis runtime only; not exported by the module, so looked up). */
  private runProcessor(): RunProcessor | undefined {
    if (this.processor === undefined) {
      try {
        this.processor = this.moduleRef.get(RunProcessor, { strict: false });
      } catch {
        this.processor = null; // the embedded runtime has none
      }
    }
    return this.processor ?? undefined;
  }
}

function workerOf(host: RunProcessor): Worker | undefined {
  try {
    const worker = host.worker;
    return typeof worker?.isRunning === 'function' ? worker : undefined;
  } catch {
    return undefined; // not created yet
  }
}

function viewOf(host: RunProcessor, worker: Worker): ReactorWorkerView {
  const closing = worker.closing !== undefined;
  const paused = worker.isPaused();
  const running = worker.isRunning() && !paused && !closing;
  const derived = closing ? 'closing' : paused ? 'paused' : running ? 'running' : 'idle';
  // A host that says `running` while BullMQ is not fetching (paused, or its loop ended) is not believed.
  const state = host.state !== 'running' || running ? host.state : derived;
  return { queue: worker.name, state, running };
}
