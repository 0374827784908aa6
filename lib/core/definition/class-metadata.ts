/**
 * Metadata recorded on classes by a decorator (`@Step`, `@Reactor`) and read back by class,
 * walking up the prototype chain so subclasses inherit it. Kept in a WeakMap: no globals, no
 * reflect-metadata keys, nothing kept alive.
 */
export function classMetadata<T>(): {
  define(target: object, metadata: T): void;
  get(target: object): T | undefined;
} {
  const store = new WeakMap<object, T>();
  return {
    define: (target, metadata) => void store.set(target, metadata),
    get: (target) => {
      let current: object | null = target;
      while (current && current !== Function.prototype) {
        const found = store.get(current);
        if (found) return found;
        current = Object.getPrototypeOf(current) as object | null;
      }
      return undefined;
    },
  };
}
