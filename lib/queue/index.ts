export * from './in-process-job.dispatcher';
export { BullMqJobDispatcher, type BullMqJobDispatcherOptions } from './bullmq-job.dispatcher';
export { RunProcessor, JOB_RETRIES_EXHAUSTED, type RunWorkerState } from './run.processor';
export { RedisReactorRuntime } from './redis.runtime';
export { reactorQueueImports, bullMqQueueOptions, ReactorBullConfigModule } from './reactor-queue.imports';
export {
  REACTOR_QUEUE_NAME,
  REACTOR_BULL_CONFIG_KEY,
  JOB_BACKOFF_BASE_MS,
  FAILED_JOBS_KEPT,
  bullMqPrefix,
} from './queue.constants';
