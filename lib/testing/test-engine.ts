import { ReactorEngine, type ReactorEngineOptions } from '../core';
import { InProcessJobDispatcher } from '../runtime/in-process-job.dispatcher';
import { createMemoryAdapters } from '../storage/memory/create-memory-adapters';
import { FakeClock } from './fake-clock';
import { RecordingMiddleware } from './recording.middleware';

/** What {@link createTestEngine} returns. */
export interface TestEngine {
  engine: ReactorEngine;
  clock: FakeClock;
  recorder: RecordingMiddleware;
  dispatcher: InProcessJobDispatcher;
  /** Resolves when no background job is pending. */
  idle(): Promise<void>;
}

/**
 * An engine on the embedded runtime for unit tests, without Nest: a {@link FakeClock} (retries do
 * not wait), a {@link RecordingMiddleware}, and an in-process dispatcher already handling jobs.
 */
export function createTestEngine(options: Partial<ReactorEngineOptions> = {}): TestEngine {
  const clock = new FakeClock();
  const { storage, locks } = createMemoryAdapters(clock);
  const recorder = new RecordingMiddleware();
  const dispatcher = new InProcessJobDispatcher(clock);
  const engine = new ReactorEngine({
    storage,
    locks,
    dispatcher,
    clock,
    ...options,
    middleware: [recorder, ...(options.middleware ?? [])],
  });
  dispatcher.setHandler((job) => engine.handleJob(job));
  return { engine, clock, recorder, dispatcher, idle: () => dispatcher.idle() };
}
