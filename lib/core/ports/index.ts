export * from './clock.port';
export * from './lock-manager.port';
export * from './reactor-storage.port';
export * from './job-dispatcher.port';
export * from './step-resolver.port';
export * from './map-store.port';
export * from './input-cipher.port';
export * from './interrupt-store.port';
