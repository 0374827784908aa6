export * from './failure';
export * from './keys';
export * from './map';
export * from './run-state';
export * from './json-values';
export * from './interrupt';
export * from './thenable';
