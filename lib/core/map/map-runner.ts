/**
 * Map steps: an element reactor mapped over a collection.
 *
 * Inline (no `fanOut`, or inside a map element): elements run in this process, `concurrency` at a
 * time, pulling the source lazily (an async iterable is never loaded whole). Atomic maps stop at
 * the first failed element: elements in flight finish, the element that failed has rolled itself
 * back, the map fails, and its compensation undoes the completed elements, highest index first.
 *
 * Fan-out: the map is a hand-off point.
 *  1. Stream the source, storing each element's inputs by index (memory stays bounded).
 *  2. Create the map's metadata, save the run (the map is recorded before any job exists), and
 *     dispatch the first `batchSize` element jobs. The run waits (no lease, no job).
 *  3. Each element job takes the element's lease, runs the element reactor, and settles: its
 *     record is written by index, the window slides by one (the next index is dispatched), and the
 *     element that completes the map claims the one owner signal and enqueues the owner's resume.
 *  4. The owner re-enters the map step and adopts the records: the first failure of an atomic map,
 *     a halt, or the results (a lazy `ResultEnumerator`, or what `collect` makes of it).
 * Rollback of a fan-out map runs through element rollback jobs (highest index first, `batchSize` in
 * flight); the run stays `rolling_back` until all report, then the owner carries on.
 */
import { ArgumentResolutionError } from '../errors/argument-resolution.error';
import { ReactorError } from '../errors/reactor.error';
import type { MapSpec, ReactorDefinition, StepDefinition } from '../definition/definition';
import type { ArgSource } from '../definition/ref';
import type { StepContext } from '../definition/step';
import { newRunState, type RunExecution } from '../executor/executor';
import type { RunState } from '../model/run-state';
import type { MapStore } from '../ports/map-store.port';
import type { ElementRecord } from '../model/map';
import type { RollbackFailure, RunOutcome } from '../results/run-outcome';
import { Failure, Halt, Success, type StepOutcome } from '../results/step-outcome';
import { NestedFailure } from '../results/nested-failure';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import { elementRunId, mapIdOf } from '../model/keys';
import { ArrayResults, isMapResultsRef, ResultEnumerator } from './map-results';

/** Returned by a fan-out map step that must wait for its elements (or its rollback). */
export class AwaitMap {
  readonly kind = 'await-map' as const;
}

/** Thrown when a rollback must wait for a fan-out map's element rollback jobs. */
export class AwaitMapRollback extends Error {
  constructor(readonly mapId: string) {
    super(`waiting for the rollback of map '${mapId}'`);
  }
}

/** What the map runner needs from the execution that runs the map step. */
export interface MapHost {
  readonly def: ReactorDefinition;
  readonly state: RunState;
  /** The top-level run (the owner a fan-out map resumes). */
  readonly owner: { runId: string; reactorName: string };
  /** Set when this execution is itself a map element (nested maps run inline). */
  readonly inElement: boolean;
  readonly maps?: MapStore;
  now(): number;
  definition(name: string): ReactorDefinition;
  resolveSource(source: ArgSource, element?: unknown): unknown;
  /** A child execution of an element, saving nowhere (inline elements are not checkpointed). */
  elementExecution(def: ReactorDefinition, state: RunState): RunExecution;
  save(): Promise<void>;
  dispatchElements(mapId: string, indices: number[], kind: 'map-element' | 'map-rollback'): Promise<void>;
  context(step: StepDefinition): StepContext;
}

/** The record kept in the run's state for a map step. */
export interface MapRecord {
  mapId: string;
  mode: 'inline' | 'fanOut';
  total?: number;
  /** Inline: final states of completed elements that have something to undo, by index. */
  elements?: Record<string, RunState>;
  /** Inline with `undoAll`: values of completed elements, by index. */
  values?: Record<string, unknown>;
}

/** A map value held in the state: inline records or a reference to fan-out records. */
export function hydrateMapValue(value: unknown, store: MapStore | undefined): unknown {
  if (isMapResultsRef(value)) {
    if (!store) throw new ReactorError('INTERNAL', `Map results '${value.$mapResults}' need a map store.`);
    return new ResultEnumerator(store, value.$mapResults, value.count);
  }
  if (typeof value === 'object' && value !== null && Array.isArray((value as { $mapRecords?: unknown }).$mapRecords)) {
    return new ArrayResults((value as { $mapRecords: ElementRecord[] }).$mapRecords);
  }
  return value;
}

/** Run (or adopt) a map step. */
export async function runMap(
  host: MapHost,
  step: StepDefinition,
  args: Record<string, unknown>,
): Promise<StepOutcome<unknown> | AwaitMap> {
  const spec = (step.handler as { map: MapSpec }).map;
  const record = host.state.maps?.[step.name];
  if (record?.mode === 'fanOut') return adopt(host, step, spec, record);
  const source = await resolveCollection(host, step, spec, args);
  if (source instanceof Failure) return source;
  if (spec.fanOut && !host.inElement && host.maps) return dispatchFanOut(host, step, spec, source);
  return runInline(host, step, spec, source);
}

async function resolveCollection(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  args: Record<string, unknown>,
): Promise<AsyncIterable<unknown> | Iterable<unknown> | Failure> {
  let source: unknown;
  try {
    source =
      typeof spec.source === 'function' ? await spec.source(args, host.context(step)) : host.resolveSource(spec.source);
  } catch (error) {
    return new Failure(
      new ArgumentResolutionError(
        `Reactor '${host.def.name}' map '${step.name}' could not resolve its source: ${(error as Error)?.message ?? String(error)}`,
        host.def.name,
        step.name,
        (error as Error)?.constructor?.name ?? typeof error,
      ),
      { retryable: false },
    );
  }
  if (source === null || source === undefined) {
    return new Failure(
      new ReactorError(
        'ARGUMENT_RESOLUTION',
        `Reactor '${host.def.name}' map '${step.name}': the source is ${String(source)}; it must be an array or an (async) iterable.`,
      ),
      { retryable: false },
    );
  }
  if (typeof (source as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function')
    return source as AsyncIterable<unknown>;
  if (typeof (source as Iterable<unknown>)[Symbol.iterator] === 'function' && typeof source !== 'string')
    return source as Iterable<unknown>;
  return new Failure(
    new ReactorError(
      'ARGUMENT_RESOLUTION',
      `Reactor '${host.def.name}' map '${step.name}': the source is not an array or an (async) iterable.`,
    ),
    { retryable: false },
  );
}

/** The inputs of one element: element sources read the element, others the parent run. */
function elementInputs(host: MapHost, spec: MapSpec, element: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, source] of Object.entries(spec.inputs)) out[key] = host.resolveSource(source, element);
  return out;
}

function failedRecord(host: MapHost, step: StepDefinition, index: number, error: unknown, code: string): ElementRecord {
  const message = (error as Error)?.message ?? String(error);
  return {
    status: 'failed',
    failure: {
      message: `Reactor '${host.def.name}' map '${step.name}' element ${index}: ${message}`,
      code,
      reactorName: host.def.name,
      stepName: step.name,
      exceptionClass: (error as Error)?.constructor?.name ?? 'Error',
      errorMessage: message,
      retryable: false,
      inputs: {},
      rollbackFailures: [],
    },
  };
}

/** Run one element in this process; returns its record and its final state. */
async function runElementInline(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  mapId: string,
  index: number,
  element: unknown,
): Promise<{ record: ElementRecord; state?: RunState; execution?: RunExecution }> {
  const elementDef = host.definition(spec.elementReactor);
  let raw: Record<string, unknown>;
  try {
    raw = elementInputs(host, spec, element);
  } catch (error) {
    return { record: failedRecord(host, step, index, error, 'ARGUMENT_RESOLUTION') };
  }
  const { inputs, errors } = await validateReactorInputs(elementDef.inputs, raw);
  if (Object.keys(errors).length > 0) {
    const record = failedRecord(
      host,
      step,
      index,
      new Error(`input validation failed: ${describeFieldErrors(errors)}`),
      'INPUT_VALIDATION',
    );
    if (record.status === 'failed') record.failure.fieldErrors = errors;
    return { record };
  }
  const state = newRunState(elementDef, elementRunId(mapId, index), inputs, host.now());
  state.status = 'running';
  const execution = host.elementExecution(elementDef, state);
  const outcome = await execution.execute(false);
  return { record: recordOf(outcome), state, execution };
}

/** The stored record of an element's outcome. */
export function recordOf(outcome: RunOutcome): ElementRecord {
  switch (outcome.status) {
    case 'completed':
      return { status: 'completed', value: outcome.value };
    case 'failed':
      return { status: 'failed', failure: outcome.failure };
    case 'halted':
      return { status: 'halted', reason: outcome.reason, details: outcome.details };
    default:
      throw new ReactorError('INTERNAL', `A map element ended ${outcome.status}, which a map element cannot.`);
  }
}

/** What of an element's final state is kept for its rollback (nothing when it has nothing to undo). */
export function rollbackStateOf(
  state: RunState | undefined,
  execution: RunExecution | undefined,
): RunState | undefined {
  if (!state || !execution || !execution.hasUndoWork()) return undefined;
  return { ...state, trace: [], results: {} };
}

async function runInline(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  source: AsyncIterable<unknown> | Iterable<unknown>,
): Promise<StepOutcome<unknown>> {
  const mapId = mapIdOf(host.state.runId, step.name);
  const record: MapRecord = { mapId, mode: 'inline', elements: {}, values: spec.undoAll ? {} : undefined };
  host.state.maps = { ...host.state.maps, [step.name]: record };
  const records: ElementRecord[] = [];
  const running = new Set<Promise<void>>();
  let stop = false;
  let index = 0;

  const settle = (i: number, result: { record: ElementRecord; state?: RunState; execution?: RunExecution }) => {
    records[i] = result.record;
    if (result.record.status === 'completed') {
      const kept = rollbackStateOf(result.state, result.execution);
      if (kept) record.elements![i] = kept;
      if (record.values) record.values[i] = result.record.value;
    }
    if (result.record.status === 'halted' || (result.record.status === 'failed' && spec.atomic)) stop = true;
  };

  for await (const element of source as AsyncIterable<unknown>) {
    while (running.size >= spec.concurrency) await Promise.race(running);
    if (stop) break;
    const i = index++;
    const task: Promise<void> = runElementInline(host, step, spec, mapId, i, element).then((r) => settle(i, r));
    running.add(task);
    void task.finally(() => running.delete(task));
    if (stop) break;
  }
  await Promise.all(running);

  const halted = records.find((r) => r?.status === 'halted');
  if (halted && halted.status === 'halted') return new Halt(halted.reason, halted.details);
  const failedAt = spec.atomic ? records.findIndex((r) => r?.status === 'failed') : -1;
  if (failedAt >= 0)
    return mapFailure(host, step, failedAt, records[failedAt] as Extract<ElementRecord, { status: 'failed' }>);
  return finishResults(spec, new ArrayResults(records), { $mapRecords: records });
}

async function finishResults(
  spec: MapSpec,
  results: ArrayResults<unknown> | ResultEnumerator<unknown>,
  stored: unknown,
): Promise<StepOutcome<unknown>> {
  if (!spec.collect) return new Success(stored);
  try {
    return new Success(await spec.collect(results));
  } catch (error) {
    return new Failure(error, { retryable: false });
  }
}

/**
 * A map failed because an element failed: keep the element's failure (its reactor, step, exception
 * class, field errors), say which map and element in the message, and compensate the map.
 */
function mapFailure(
  host: MapHost,
  step: StepDefinition,
  index: number,
  record: Extract<ElementRecord, { status: 'failed' }>,
): Failure {
  const message = `Reactor '${host.def.name}' map '${step.name}' element ${index}: ${record.failure.message}`;
  return new NestedFailure({ ...record.failure, message }, true);
}

async function dispatchFanOut(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  source: AsyncIterable<unknown> | Iterable<unknown>,
): Promise<StepOutcome<unknown> | AwaitMap> {
  const maps = host.maps!;
  const mapId = mapIdOf(host.state.runId, step.name);
  const chunk: Array<Record<string, unknown>> = [];
  let total = 0;
  let start = 0;
  for await (const element of source as AsyncIterable<unknown>) {
    let inputs: Record<string, unknown>;
    try {
      inputs = elementInputs(host, spec, element);
    } catch (error) {
      return new Failure(
        new ArgumentResolutionError(
          `Reactor '${host.def.name}' map '${step.name}' could not resolve the inputs of element ${total}: ${(error as Error)?.message}`,
          host.def.name,
          step.name,
          (error as Error)?.constructor?.name ?? 'Error',
        ),
        { retryable: false },
      );
    }
    chunk.push(inputs);
    total++;
    if (chunk.length >= 1000) {
      await maps.putInputs(mapId, start, chunk.splice(0));
      start = total;
    }
  }
  if (chunk.length > 0) await maps.putInputs(mapId, start, chunk.splice(0));
  await maps.create({
    mapId,
    ownerRunId: host.owner.runId,
    ownerReactor: host.owner.reactorName,
    parentRunId: host.state.runId,
    step: step.name,
    elementReactor: spec.elementReactor,
    total,
    batchSize: spec.fanOut!.batchSize,
    atomic: spec.atomic,
    createdAt: host.now(),
  });
  const record: MapRecord = { mapId, mode: 'fanOut', total };
  host.state.maps = { ...host.state.maps, [step.name]: record };
  // The map is recorded in the run before any element job exists.
  await host.save();
  const first = await maps.reserve(mapId, spec.fanOut!.batchSize);
  await host.dispatchElements(mapId, first, 'map-element');
  if (total === 0) return adopt(host, step, spec, record);
  return new AwaitMap();
}

async function adopt(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  record: MapRecord,
): Promise<StepOutcome<unknown> | AwaitMap> {
  const maps = host.maps;
  if (!maps)
    throw new ReactorError('INTERNAL', `Map '${record.mapId}' was fanned out but this process has no map store.`);
  const meta = await maps.meta(record.mapId);
  if (!meta) {
    return new Failure(
      new ReactorError(
        'INTERNAL',
        `The records of map '${record.mapId}' expired before the run adopted them (contextTtl).`,
      ),
      { retryable: false },
    );
  }
  const progress = await maps.progress(record.mapId);
  if (!progress.done) return new AwaitMap();
  await maps.close(record.mapId);
  if (spec.atomic && progress.failedIndex !== undefined) {
    const [failed] = await maps.records(record.mapId, progress.failedIndex, progress.failedIndex + 1);
    if (failed?.status === 'failed') return mapFailure(host, step, progress.failedIndex, failed);
  }
  if (progress.halted > 0) {
    for await (const o of new ResultEnumerator(maps, record.mapId, meta.total)) {
      if (o.status === 'halted') return new Halt(o.reason, o.details);
    }
  }
  const results = new ResultEnumerator(maps, record.mapId, meta.total);
  return finishResults(spec, results, results.toJSON());
}

/**
 * Roll back a map's completed elements (its compensation, or its undo), highest index first.
 * Inline: in this process. Fan-out: through element rollback jobs; throws {@link AwaitMapRollback}
 * until every element has reported, and returns the failures once they all have.
 */
export async function rollbackMap(host: MapHost, step: StepDefinition): Promise<RollbackFailure[]> {
  const spec = (step.handler as { map: MapSpec }).map;
  const record = host.state.maps?.[step.name];
  if (!record) return [];
  const tag = (failures: RollbackFailure[], index: number) =>
    failures.map((f) => ({ ...f, mapStep: step.name, elementIndex: index }));

  if (spec.undoAll) {
    const completed = record.mode === 'inline' ? inlineValues(record) : fanOutValues(host.maps!, record);
    try {
      const result = await spec.undoAll(completed);
      if (result instanceof Failure) {
        return [
          {
            step: step.name,
            kind: 'undoAll',
            reason: 'returnedFailure',
            message: String((result.error as Error)?.message ?? result.error),
            reactorName: host.def.name,
            mapStep: step.name,
          },
        ];
      }
      return [];
    } catch (error) {
      return [
        {
          step: step.name,
          kind: 'undoAll',
          reason: 'raised',
          message: (error as Error)?.message ?? String(error),
          reactorName: host.def.name,
          mapStep: step.name,
        },
      ];
    }
  }

  if (record.mode === 'inline') {
    const failures: RollbackFailure[] = [];
    const indices = Object.keys(record.elements ?? {})
      .map(Number)
      .sort((a, b) => b - a);
    const elementDef = host.definition(spec.elementReactor);
    for (const index of indices) {
      const state = record.elements![index];
      failures.push(...tag(await host.elementExecution(elementDef, state).undoAll(), index));
      delete record.elements![index];
      await host.save();
    }
    return failures;
  }

  const maps = host.maps!;
  let progress = await maps.rollbackProgress(record.mapId);
  if (!progress) {
    const first = await maps.startRollback(record.mapId, (await maps.meta(record.mapId))?.batchSize ?? 50);
    await host.dispatchElements(record.mapId, first, 'map-rollback');
    progress = await maps.rollbackProgress(record.mapId);
  }
  if (progress && progress.reported < progress.total) throw new AwaitMapRollback(record.mapId);
  await maps.close(record.mapId);
  return progress?.failures ?? [];
}

async function* inlineValues(record: MapRecord): AsyncIterable<{ index: number; value: unknown }> {
  const values = record.values ?? {};
  for (const index of Object.keys(values)
    .map(Number)
    .sort((a, b) => a - b))
    yield { index, value: values[index] };
}

async function* fanOutValues(maps: MapStore, record: MapRecord): AsyncIterable<{ index: number; value: unknown }> {
  for await (const o of new ResultEnumerator(maps, record.mapId, record.total ?? 0)) {
    if (o.status === 'completed') yield { index: o.index, value: o.value };
  }
}
