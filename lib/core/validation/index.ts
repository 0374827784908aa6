export * from './validate';
export * from './contract';
