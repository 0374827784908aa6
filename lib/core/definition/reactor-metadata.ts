import { classMetadata } from './class-metadata';
import type { ReactorOptions } from './definition';

/** Metadata recorded by `@Reactor`. */
export interface ReactorClassMetadata extends ReactorOptions {
  name: string;
}

const reactorMetadata = classMetadata<ReactorClassMetadata>();

/** Record reactor metadata for a class (used by the `@Reactor` decorator). */
export function defineReactorMetadata(reactorClass: object, metadata: ReactorClassMetadata): void {
  reactorMetadata.define(reactorClass, metadata);
}

/** The metadata of a reactor class (or of a class it extends), or undefined when it is not a reactor. */
export function getReactorMetadata(reactorClass: object): ReactorClassMetadata | undefined {
  return reactorMetadata.get(reactorClass);
}
