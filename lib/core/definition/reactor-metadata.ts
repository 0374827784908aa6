import type { ReactorOptions } from './definition';

/** Metadata recorded by `@Reactor`. */
export interface ReactorClassMetadata extends ReactorOptions {
  name: string;
}

const reactorMetadata = new WeakMap<object, ReactorClassMetadata>();

/** Record reactor metadata for a class (used by the `@Reactor` decorator). */
export function defineReactorMetadata(reactorClass: object, metadata: ReactorClassMetadata): void {
  reactorMetadata.set(reactorClass, metadata);
}

/** The metadata of a reactor class, or undefined when it is not a reactor. */
export function getReactorMetadata(reactorClass: object): ReactorClassMetadata | undefined {
  let current: object | null = reactorClass;
  while (current && current !== Function.prototype) {
    const found = reactorMetadata.get(current);
    if (found) return found;
    current = Object.getPrototypeOf(current) as object | null;
  }
  return undefined;
}
