import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import type { MapStore } from '../ports/map-store.port';
import { InternalError } from '../errors/internal.error';
import type { ElementRecord } from '../model/map';
import type { RunFailure } from '../model/failure';
import type { ElementOutcome, MapResults } from '../results/map-results';

export type { ElementOutcome, MapResults } from '../results/map-results';

function withIndex<T>(index: number, record: ElementRecord): ElementOutcome<T> {
  return { index, ...record } as ElementOutcome<T>;
}

abstract class BaseResults<T> implements MapResults<T> {
  abstract readonly count: number;
  abstract [Symbol.asyncIterator](): AsyncIterator<ElementOutcome<T>>;
  abstract at(index: number): Promise<ElementOutcome<T> | undefined>;

  async *successes(): AsyncIterable<T> {
    for await (const o of this) if (o.status === 'completed') yield o.value;
  }

  async *failures(): AsyncIterable<{ index: number; failure: RunFailure }> {
    for await (const o of this) if (o.status === 'failed') yield { index: o.index, failure: o.failure };
  }

  async values(): Promise<T[]> {
    const out: T[] = [];
    for await (const v of this.successes()) out.push(v);
    return out;
  }

  protected position(index: number): number | undefined {
    const i = index < 0 ? this.count + index : index;
    return i >= 0 && i < this.count ? i : undefined;
  }
}

/** {@link MapResults} over records held in memory (inline maps). */
export class ArrayResults<T> extends BaseResults<T> {
  constructor(private readonly records: readonly ElementRecord[]) {
    super();
  }

  get count(): number {
    return this.records.length;
  }

  async at(index: number): Promise<ElementOutcome<T> | undefined> {
    const i = this.position(index);
    return i === undefined ? undefined : withIndex<T>(i, this.records[i]);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ElementOutcome<T>> {
    for (let i = 0; i < this.records.length; i++) yield withIndex<T>(i, this.records[i]);
  }
}

/** What a fan-out map's value is stored as: a reference to its records. */
export interface MapResultsRef {
  $mapResults: string;
  count: number;
}

/** Whether a stored value is a reference to a fan-out map's records. */
export function isMapResultsRef(value: unknown): value is MapResultsRef {
  return typeof value === 'object' && value !== null && typeof (value as MapResultsRef).$mapResults === 'string';
}

/**
 * The results of a fan-out map, read from storage lazily in pages of {@link pageSize}: a map of a
 * million elements can be walked without loading them all.
 */
export class ResultEnumerator<T> extends BaseResults<T> {
  constructor(
    private readonly store: MapStore,
    readonly mapId: string,
    readonly count: number,
    private readonly pageSize = 500,
  ) {
    super();
  }

  async at(index: number): Promise<ElementOutcome<T> | undefined> {
    const i = this.position(index);
    if (i === undefined) return undefined;
    const [record] = await this.store.records(this.mapId, i, i + 1);
    return record ? withIndex<T>(i, record) : undefined;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ElementOutcome<T>> {
    for (let from = 0; from < this.count; from += this.pageSize) {
      const page = await this.store.records(this.mapId, from, Math.min(this.count, from + this.pageSize));
      for (let j = 0; j < page.length; j++) if (page[j]) yield withIndex<T>(from + j, page[j]!);
    }
  }

  /** The stored reference (what the run's state keeps). */
  toJSON(): MapResultsRef {
    return { $mapResults: this.mapId, count: this.count };
  }
}

/**
 * Whether `step`'s stored value is a map marker (a reference to fan-out records, or inline
 * records): a map step without a collector stores one, and so does a compose step whose child
 * returns such a step's result as it is. Everything else a step returns is user data, and user data
 * shaped like a marker must stay user data, so callers ask this (from definitions, which users
 * cannot forge) before they read a stored value as a marker.
 */
export function storesMapMarker(
  step: StepDefinition | undefined,
  definitionOf: (reactorName: string) => ReactorDefinition | undefined,
  depth = 0,
): boolean {
  if (step === undefined || depth > 32) return false;
  if (step.handler.kind === 'map') return !step.handler.map.collect;
  if (step.handler.kind !== 'compose') return false;
  return returnsMapMarker(definitionOf(step.handler.reactorName), definitionOf, depth + 1);
}

/** Whether a run of `def` returns a map marker as its value (see {@link storesMapMarker}). */
export function returnsMapMarker(
  def: ReactorDefinition | undefined,
  definitionOf: (reactorName: string) => ReactorDefinition | undefined,
  depth = 0,
): boolean {
  const returns = def?.returns;
  if (returns?.kind !== 'result' || returns.ops.length > 0) return false;
  return storesMapMarker(def!.stepsByName.get(returns.step), definitionOf, depth);
}

/**
 * The value a map step stored, as its results object. Call only for a step that
 * {@link storesMapMarker}; any other value is returned as it is.
 */
export function hydrateMapValue(value: unknown, store: MapStore | undefined): unknown {
  if (isMapResultsRef(value)) {
    if (!store) throw new InternalError(`Map results '${value.$mapResults}' need a map store.`);
    return new ResultEnumerator(store, value.$mapResults, value.count);
  }
  if (typeof value === 'object' && value !== null && Array.isArray((value as { $mapRecords?: unknown }).$mapRecords)) {
    return new ArrayResults((value as { $mapRecords: ElementRecord[] }).$mapRecords);
  }
  return value;
}
