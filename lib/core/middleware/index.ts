export * from './events';
export * from './middleware-runner';
