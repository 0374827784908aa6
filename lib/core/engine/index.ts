export { ReactorEngine, type ListQuery, type RunList, type RunOnOtherDefinition } from './reactor-engine';
export { ENGINE_DEFAULTS } from './engine-options';
export type { EngineLogger, ReactorEngineOptions, RunOptions } from './engine-options';
export type { RecoveryOptions } from './recovery';
export type { RunView } from './run-view';
export type { UndoOptions } from './run-control';
