/**
 * The BullMQ adapters of the Redis runtime: the dispatcher (one job per dispatch), the processor
 * whose worker `@nestjs/bullmq` builds, the module's queue registration under its own config key,
 * the module's queues (the default one and those of `@Reactor({ queue })`) and the routing of jobs
 * to them, and the queues' constants. The runtimes themselves are in `../runtime`.
 */
export { BullMqJobDispatcher, type BullMqJobDispatcherOptions } from './bullmq-job.dispatcher';
export { RunProcessor, JOB_RETRIES_EXHAUSTED, type RunWorkerState } from './run.processor';
export { ReactorQueues } from './reactor-queues';
export { resolveJobRouting, MAX_JOB_PRIORITY } from './job-routing';
export { reactorQueueImports, bullMqQueueOptions, ReactorBullConfigModule } from './reactor-queue.imports';
export {
  REACTOR_QUEUE_NAME,
  reactorQueueToken,
  REACTOR_BULL_CONFIG_KEY,
  JOB_BACKOFF_BASE_MS,
  FAILED_JOBS_KEPT,
  bullMqPrefix,
} from './queue.constants';
