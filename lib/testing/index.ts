/**
 * `nest-reactor/testing`: helpers for testing reactors.
 *
 * ```ts
 * import { ReactorTestingModule, ReactorTestingKit, reactorMatchers } from 'nest-reactor/testing';
 * import { FakeClock, RecordingMiddleware, createTestEngine } from 'nest-reactor/testing';
 * import { createMemoryAdapters, MemoryReactorStorage, MemoryLockManager } from 'nest-reactor/testing';
 * ```
 *
 * The matchers' types for jest's `expect` come with `nest-reactor/testing/jest`; this entry
 * compiles without any test framework's types.
 *
 * The memory adapters are those of the embedded runtime (`ReactorModule.forRoot()` without
 * `redis`, and {@link createTestEngine}): a test can build an engine on them, or look at what a
 * run stored. They keep everything in this process; they are not durable.
 *
 * @packageDocumentation
 */
export { FakeClock } from './fake-clock';
export { TestClock } from './test-clock';
export { RecordingMiddleware } from './recording.middleware';
export { createTestEngine, type TestEngine } from './test-engine';
export {
  MemoryReactorStorage,
  MemoryLockManager,
  MemoryMapStore,
  MemoryInterruptStore,
  MemoryCoordinationStore,
  MemoryFlowStore,
  MemoryRunEventBus,
  createMemoryAdapters,
  type MemoryAdapters,
  type MemoryReactorStorageOptions,
} from '../storage/memory';
export { ReactorTestingModule, type ReactorTestingModuleOptions } from './reactor-testing.module';
export { ReactorTestingKit, type ReactorFake, type StepFake, type StepMock } from './reactor-testing.kit';
export { validateReactors, type ReactorValidationReport, type ValidateReactorsOptions } from './validate-reactors';
export {
  reactorMatchers,
  type ReactorMatcherContext,
  type ReactorMatcherName,
  type ReactorMatcherResult,
  type RollbackFailureExpectation,
} from './matchers/reactor.matchers';
