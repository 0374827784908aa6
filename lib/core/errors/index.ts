export * from './reactor.error';
export * from './definition.error';
export * from './input-validation.error';
export * from './argument-resolution.error';
export * from './run-state.error';
export * from './step.error';
export * from './configuration.error';
export * from './internal.error';
