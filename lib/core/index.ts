/**
 * The Nest-free engine, as the layers around it (Nest integration, runtimes, queue adapters,
 * storage adapters, sweepers, testing kit) see it. Those layers import core through this file
 * only, so core can rearrange its rooms without touching them; inside core, files import each
 * other directly (never this barrel).
 */
export * from './definition/builder';
export * from './definition/definition';
export * from './definition/contract-spec';
export * from './definition/input-spec';
export * from './definition/reactor-blueprint';
export * from './definition/ref';
export * from './definition/redaction';
export * from './definition/retry-policy';
export * from './definition/step';
export * from './engine';
export * from './errors';
export * from './validation/arguments';
export * from './definition/retry-policy';
export * from './definition/redaction';
export * from './model/run-state';
export * from './model/keys';
export * from './map/map-results';
export * from './middleware/events';
export * from './model';
export * from './ports';
export * from './results/run-outcome';
export * from './results/step-outcome';
export * from './results/step-signal';
export * from './definition/interrupt-spec';
export * from './definition/event-spec';
export { AsyncUnitFailedError } from './steps/async.step';
export type { SleepOptions, SleepResult } from './definition/sleep-spec';
export type { SleepingStep } from './steps/sleep.step';
export * from './definition/coordination-spec';
export * from './tracing';
export * from './definition/schedule-spec';
export * from './definition/flow-spec';
