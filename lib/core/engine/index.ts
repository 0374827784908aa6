export { ReactorEngine, type RunOnOtherDefinition } from './reactor-engine';
export type { ListQuery, RunList } from './run-list';
export { ENGINE_DEFAULTS } from './engine-options';
export type { EngineLogger, ReactorEngineOptions, RunOptions } from './engine-options';
export type { RecoveryOptions } from './recovery';
export type { AsyncUnitView, RunView } from './run-view';
export type { RunRetryOptions, UndoOptions } from './run-control';
export type { ContinueOptions, ContinueResult } from './resumes';
export type { DrainOptions, DrainResult } from './executions';
