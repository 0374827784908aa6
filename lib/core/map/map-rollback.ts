/**
 * Roll back a map's completed elements (its compensation, or its undo), highest index first.
 * Inline: in this process. Fan-out: through element rollback jobs; throws {@link AwaitMapRollback}
 * until every element has reported, and returns the failures once they all have.
 */
import type { RollbackFailure } from '../model/failure';
import type { MapRecord } from '../model/run-state';
import type { MapStore } from '../ports/map-store.port';
import { Failure } from '../results/step-outcome';
import { RollbackSuspended } from '../results/suspension';
import type { MapHost, MapStep } from './map-host';
import { ResultEnumerator } from './map-results';
export async function rollbackMap(host: MapHost, step: MapStep): Promise<RollbackFailure[]> {
  const spec = step.handler.map;
  const record = host.state.maps?.[step.name];
  if (!record) return [];
  const tag = (failures: RollbackFailure[], index: number) =>
    failures.map((f) => ({ ...f, mapStep: step.name, elementIndex: index }));

  if (spec.undoAll) {
    // As the reference: not called when no element completed; the trace says how many it received.
    const count =
      record.mode === 'inline'
        ? Object.keys(record.values ?? {}).length
        : (await host.maps!.progress(record.mapId)).succeeded;
    if (count === 0) return [];
    const completed = record.mode === 'inline' ? inlineValues(record) : fanOutValues(host.maps!, record);
    const failures = await callUndoAll(host, step, completed);
    host.trace({ type: 'undoAll', step: step.name, count, ok: failures.length === 0 });
    return failures;
  }

  if (record.mode === 'inline') {
    const failures: RollbackFailure[] = [];
    const indices = Object.keys(record.elements ?? {})
      .map(Number)
      .sort((a, b) => b - a);
    const elementDef = host.definition(spec.elementReactor);
    for (const index of indices) {
      const state = record.elements![index];
      failures.push(...tag(await host.child(elementDef, state, 'none').undoAll(), index));
      delete record.elements![index];
      await host.save();
    }
    return failures;
  }

  const maps = host.maps!;
  let progress = await maps.rollbackProgress(record.mapId);
  if (!progress) {
    const first = await maps.startRollback(record.mapId, (await maps.meta(record.mapId))?.batchSize ?? 50);
    await host.dispatchMapJobs(record.mapId, first, 'map-rollback');
    progress = await maps.rollbackProgress(record.mapId);
  }
  if (progress && progress.reported < progress.total)
    throw new RollbackSuspended(`the element rollbacks of map '${record.mapId}'`);
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

/** Call a map's `undoAll` with the completed results; a raise or a returned Failure is one rollback failure. */
async function callUndoAll(
  host: MapHost,
  step: MapStep,
  completed: AsyncIterable<{ index: number; value: unknown }>,
): Promise<RollbackFailure[]> {
  const failed = (reason: 'raised' | 'returnedFailure', message: string): RollbackFailure[] => [
    { step: step.name, kind: 'undoAll', reason, message, reactorName: host.def.name, mapStep: step.name },
  ];
  try {
    const result = await step.handler.map.undoAll!(completed);
    return result instanceof Failure
      ? failed('returnedFailure', String((result.error as Error)?.message ?? result.error))
      : [];
  } catch (error) {
    return failed('raised', (error as Error)?.message ?? String(error));
  }
}
