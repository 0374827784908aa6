import { ReactorEngine, type ReactorEngineOptions } from '../core';
import { InProcessJobDispatcher } from '../runtime/in-process-job.dispatcher';
import { createMemoryAdapters, type MemoryAdapters } from '../storage/memory/create-memory-adapters';
import { FakeClock } from './fake-clock';
import { RecordingMiddleware } from './recording.middleware';

/**
 * What {@link createTestEngine} returns: the engine, its clock, recorder and dispatcher, and the
 * memory adapters it runs on (the embedded runtime's: storage, locks, maps, interrupts,
 * coordination), for a test that looks at or seeds what is stored.
 */
export interface TestEngine extends MemoryAdapters {
  engine: ReactorEngine;
  clock: FakeClock;
  recorder: RecordingMiddleware;
  dispatcher: InProcessJobDispatcher;
  /** Resolves when no background job is pending. */
  idle(): Promise<void>;
}

/**
 * An engine on the embedded runtime for unit tests, without Nest: a {@link FakeClock} (retries do
 * not wait), a {@link RecordingMiddleware}, an in-process dispatcher already handling jobs, and the
 * same memory adapters `ReactorModule.forRoot()` wires on the embedded runtime (storage and locks,
 * the map store for fan-out maps, the interrupt store, the coordination store for locks,
 * semaphores, rate limits, periods and ordered locks), so a reactor behaves here as on the module.
 * `options` replace any of them (and set the rest of the engine's options).
 */
export function createTestEngine(options: Partial<ReactorEngineOptions> = {}): TestEngine {
  const clock = options.clock instanceof FakeClock ? options.clock : new FakeClock();
  const adapters = createMemoryAdapters(clock);
  const recorder = new RecordingMiddleware();
  const dispatcher = new InProcessJobDispatcher(clock);
  const engine = new ReactorEngine({
    storage: adapters.storage,
    locks: adapters.locks,
    maps: adapters.maps,
    interrupts: adapters.interrupts,
    coordination: adapters.coordination,
    flow: adapters.flow,
    dispatcher,
    clock,
    ...options,
    middleware: [recorder, ...(options.middleware ?? [])],
  });
  dispatcher.setHandler((job) => engine.handleJob(job));
  return { ...adapters, engine, clock, recorder, dispatcher, idle: () => dispatcher.idle() };
}
