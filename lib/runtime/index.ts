/**
 * The runtimes a ReactorModule runs on, and the providers that pick one from the options:
 *
 * - {@link EmbeddedReactorRuntime}: in-memory storage, locks and maps, and the
 *   {@link InProcessJobDispatcher}; not durable (development, tests, single-process tools);
 * - {@link RedisReactorRuntime}: the Redis adapters on one ioredis connection and the BullMQ
 *   dispatcher on the module's queue, consumed by the `RunProcessor` of `../queue`.
 *
 * The `ReactorRuntime` contract both implement lives in `../config`, beside the tokens, since the
 * queue adapters need it too.
 */
export { EmbeddedReactorRuntime } from './embedded.runtime';
export { RedisReactorRuntime } from './redis.runtime';
export { InProcessJobDispatcher } from './in-process-job.dispatcher';
export { createReactorRuntime, reactorRuntimeProviders } from './reactor-runtime.providers';
