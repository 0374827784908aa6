import type { ReactorBuilder } from './builder';
import type { Ref } from './ref';

export type { ReactorBlueprint, ReactorClass } from './builder';
export { defineReactorMetadata, getReactorMetadata, type ReactorClassMetadata } from './reactor-metadata';

/** The input type of a reactor class. */
export type ReactorInputOf<C> = C extends new (...deps: never[]) => { build(r: ReactorBuilder<infer I>): unknown }
  ? I
  : never;

/** The result type of a reactor class. */
export type ReactorOutputOf<C> = C extends new (...deps: never[]) => { build(r: never): infer R }
  ? R extends Ref<infer O>
    ? O
    : Record<string, unknown>
  : never;
