import { ReactorEngine, type ReactorEngineOptions } from '../../lib/core';
import type { InputCipher } from '../../lib/core/ports/input-cipher.port';
import type { ReactorStorage } from '../../lib/core/ports/reactor-storage.port';
import { InProcessJobDispatcher } from '../../lib/runtime/in-process-job.dispatcher';
import { createMemoryAdapters } from '../../lib/storage/memory';
import { FakeClock } from '../../lib/testing/fake-clock';
import { RecordingMiddleware } from '../../lib/testing/recording.middleware';

/** An engine on the embedded runtime with a fake clock, a recorder and a save counter. */
export function createHarness(
  options: Partial<ReactorEngineOptions> = {},
  adapters: { inputCipher?: InputCipher } = {},
) {
  const clock = new FakeClock();
  const { storage, locks, maps, interrupts, coordination } = createMemoryAdapters(clock, adapters);
  const recorder = new RecordingMiddleware();
  const dispatcher = new InProcessJobDispatcher(clock);
  const saves: string[] = [];
  const counting: ReactorStorage = {
    encryptsInputs: storage.encryptsInputs,
    save: (state, opts) => {
      saves.push(`${state.status}:${state.completed.join(',')}`);
      return storage.save(state, opts);
    },
    load: (id) => storage.load(id),
    acquireAndLoad: (id, lease, ttl) => storage.acquireAndLoad(id, lease, ttl),
    listActive: (limit) => storage.listActive(limit),
    markBroken: (id, name, reason) => storage.markBroken(id, name, reason),
    sizeOf: (state) => storage.sizeOf?.(state),
    requestCancel: (id, reason) => storage.requestCancel(id, reason),
    cancelRequest: (state) => storage.cancelRequest(state),
    claimIdempotencyKey: (reactor, key, runId, ttl) => storage.claimIdempotencyKey(reactor, key, runId, ttl),
    releaseIdempotencyKey: (reactor, key, runId) => storage.releaseIdempotencyKey(reactor, key, runId),
    listRuns: (query) => storage.listRuns(query),
  };
  const engine = new ReactorEngine({
    storage: counting,
    locks,
    maps,
    interrupts,
    coordination,
    dispatcher,
    clock,
    middleware: [recorder],
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    ...options,
  });
  dispatcher.setHandler((job) => engine.handleJob(job));
  return { engine, clock, storage, locks, maps, interrupts, coordination, recorder, dispatcher, saves };
}

/** A promise with its resolve and reject functions, to hold a step open until the test settles it. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}
