/**
 * `nest-reactor/testing`: helpers for testing reactors.
 *
 * ```ts
 * import { FakeClock, RecordingMiddleware, createTestEngine } from 'nest-reactor/testing';
 * ```
 *
 * @packageDocumentation
 */
export { FakeClock } from './fake-clock';
export { RecordingMiddleware } from './recording.middleware';
export { createTestEngine, type TestEngine } from './test-engine';
