/**
 * Typed references: what a step argument, a reactor input or a reactor result points at.
 * A `Ref<T>` carries the type of the value it resolves to, so wiring a step's arguments to refs of
 * the wrong type is a compile error.
 */

/** One operation applied after the source value is read. */
export type RefOp = { path: readonly string[] } | { transform: (value: unknown) => unknown; label: string };

/** Where a ref's value comes from. */
export type ArgSource =
  | { kind: 'input'; name: string; ops: readonly RefOp[] }
  | { kind: 'result'; step: string; ops: readonly RefOp[] }
  | { kind: 'value'; value: unknown; ops: readonly RefOp[] }
  /** The current element of a map (only in a map's element inputs). */
  | { kind: 'element'; ops: readonly RefOp[] };

type Primitive = string | number | boolean | bigint | symbol | null | undefined | Date;

/** Dot-separated paths into `T`, up to four levels deep. */
export type Path<T, Depth extends unknown[] = []> = Depth['length'] extends 4
  ? never
  : T extends Primitive | readonly unknown[]
    ? never
    : {
        [K in keyof T & string]:
          K | (NonNullable<T[K]> extends Primitive ? never : `${K}.${Path<NonNullable<T[K]>, [...Depth, 1]>}`);
      }[keyof T & string];

/** The type at dot-separated path `P` of `T` (nullable links make the result possibly undefined). */
export type PathValue<T, P extends string> = P extends `${infer K}.${infer Rest}`
  ? K extends keyof NonNullable<T>
    ? PathValue<NonNullable<T>[K], Rest> | (T extends null | undefined ? undefined : never)
    : never
  : P extends keyof NonNullable<T>
    ? NonNullable<T>[P] | (T extends null | undefined ? undefined : never)
    : never;

/**
 * A typed reference to a value of type `T`: a reactor input, a step's result, or a constant.
 * Refs are immutable; {@link path} and {@link transform} return new refs.
 */
export class Ref<T> {
  /** @internal phantom field that carries `T`. */
  declare readonly __type?: T;

  /** @internal */
  constructor(readonly source: ArgSource) {}

  /** A ref to the value at `path` (dot-separated) inside this ref's value. Nil-safe. */
  path<P extends Path<T>>(path: P): Ref<PathValue<T, P>> {
    return new Ref({ ...this.source, ops: [...this.source.ops, { path: String(path).split('.') }] } as ArgSource);
  }

  /** A ref to `fn(value)`. A throw here is an argument resolution error for the consuming step. */
  transform<U>(fn: (value: T) => U, label = fn.name || 'transform'): Ref<U> {
    return new Ref({
      ...this.source,
      ops: [...this.source.ops, { transform: fn as (value: unknown) => unknown, label }],
    } as ArgSource);
  }

  /** The step this ref depends on, if it reads a step result. */
  get dependsOn(): string | undefined {
    return this.source.kind === 'result' ? this.source.step : undefined;
  }
}

/** Maps each argument of a step to a ref of the same type. Optional arguments may be omitted. */
export type ArgRefs<A> = { [K in RequiredKeys<A>]: Ref<A[K]> } & { [K in OptionalKeys<A>]?: Ref<A[K]> };

type RequiredKeys<A> = { [K in keyof A]-?: undefined extends A[K] ? never : K }[keyof A];
type OptionalKeys<A> = Exclude<keyof A, RequiredKeys<A>>;

/** Describe a source for messages and definition hashes. */
export function describeSource(source: ArgSource): string {
  const base =
    source.kind === 'input' ? `input(${source.name})` : source.kind === 'result' ? `result(${source.step})` : 'value';
  return (
    base + source.ops.map((op) => ('path' in op ? `.path(${op.path.join('.')})` : `.transform(${op.label})`)).join('')
  );
}

/** Apply a ref's operations to the value read from its source. */
export function applyOps(value: unknown, ops: readonly RefOp[]): unknown {
  let current = value;
  for (const op of ops) {
    if ('path' in op) {
      for (const key of op.path) {
        if (current === null || current === undefined) return undefined;
        current = (current as Record<string, unknown>)[key];
      }
    } else {
      current = op.transform(current);
    }
  }
  return current;
}
