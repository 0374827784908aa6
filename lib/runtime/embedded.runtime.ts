import type { LoggerService } from '@nestjs/common';
import type { Clock, InputCipher, JobHandler, ScheduleBackend } from '../core';
import { InProcessJobDispatcher } from './in-process-job.dispatcher';
import { InProcessScheduleTicker } from './in-process-scheduler';
import { MemoryScheduleStore } from '../storage/memory/memory-schedule.store';
import { MemoryRunEventBus } from '../storage/memory/memory-run-events';
import { createMemoryAdapters } from '../storage/memory/create-memory-adapters';
import type { RetentionOptions } from '../storage/run-state.codec';
import type { MemoryLockManager } from '../storage/memory/memory-lock.manager';
import type { MemoryMapStore } from '../storage/memory/memory-map.store';
import type { MemoryInterruptStore } from '../storage/memory/memory-interrupt.store';
import type { MemoryCoordinationStore } from '../storage/memory/memory-coordination.store';
import type { MemoryFlowStore } from '../storage/memory/memory-flow.store';
import type { MemoryReactorStorage } from '../storage/memory/memory-reactor.storage';
import { type ReactorRuntime, messages } from '../config';

/**
 * The embedded runtime: in-memory storage and locks sharing one lease table, and an in-process
 * dispatcher. Not durable; for development, tests and single-process tools.
 *
 * NOTE: the dispatcher holds jobs delivered before {@link startWorkers} (a background run started
 * from some provider's `onModuleInit`) until bootstrap gives it the handler.
 */
export class EmbeddedReactorRuntime implements ReactorRuntime {
  readonly kind = 'embedded' as const;
  readonly storage: MemoryReactorStorage;
  readonly locks: MemoryLockManager;
  readonly maps: MemoryMapStore;
  readonly interrupts: MemoryInterruptStore;
  readonly coordination: MemoryCoordinationStore;
  readonly flow: MemoryFlowStore;
  readonly dispatcher: InProcessJobDispatcher;
  /** Schedules in memory, ticking on the runtime's clock. */
  readonly schedules: ScheduleBackend;
  /** Live run events in memory, kept on the runtime's clock. */
  readonly runEvents: MemoryRunEventBus;

  constructor(
    clock: Clock,
    logger: LoggerService,
    options: {
      maxContextBytes?: number;
      inputCipher?: InputCipher;
      contextTtlMs?: number;
      retention?: RetentionOptions;
    } = {},
  ) {
    this.runEvents = new MemoryRunEventBus({ clock, retentionMs: options.contextTtlMs });
    const { storage, locks, maps, interrupts, coordination, flow } = createMemoryAdapters(clock, options);
    this.flow = flow;
    this.maps = maps;
    this.interrupts = interrupts;
    this.coordination = coordination;
    this.storage = storage;
    this.locks = locks;
    this.dispatcher = new InProcessJobDispatcher(clock, (error, job) =>
      logger.error(messages.jobFailed(job.kind, job.runId, job.reactorName, error)),
    );
    const ticker = new InProcessScheduleTicker(
      clock,
      (work) => this.dispatcher.track(work),
      (error, tick) => logger.error(messages.scheduleTickFailed(tick.scheduleId, tick.at, error)),
    );
    this.schedules = { store: new MemoryScheduleStore(), ticker };
  }

  startWorkers(handler: JobHandler): void {
    this.dispatcher.setHandler(handler);
  }

  async stopWorkers(): Promise<void> {
    this.dispatcher.close();
  }

  async close(): Promise<void> {
    await this.stopWorkers();
    await this.runEvents.close();
  }
}
