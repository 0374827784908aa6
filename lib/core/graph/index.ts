export * from './dependency-graph';
