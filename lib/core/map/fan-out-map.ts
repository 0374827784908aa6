/** Fan-out maps: element jobs (`elementsPerJob` elements each), a window of `batchSize` elements, adopted by the owner when done. */
import { redactedElementInputs } from '../definition/redaction';
import type { MapSpec, StepDefinition } from '../definition/definition';
import { ArgumentResolutionError } from '../errors/argument-resolution.error';
import { InternalError } from '../errors/internal.error';
import { mapIdOf } from '../model/keys';
import type { MapRecord } from '../model/run-state';
import { Failure, Halt, type StepOutcome } from '../results/step-outcome';
import { Suspended } from '../results/suspension';
import type { MapHost } from './map-host';
import { elementInputs, finishResults, mapFailure } from './map-elements';
import { ResultEnumerator } from './map-results';
export async function dispatchFanOut(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  source: AsyncIterable<unknown> | Iterable<unknown>,
): Promise<StepOutcome<unknown> | Suspended> {
  const maps = host.maps!;
  const mapId = mapIdOf(host.state.runId, step.name);
  const chunk: Array<Record<string, unknown>> = [];
  let total = 0;
  let start = 0;
  // Element inputs are encrypted when the run that maps is, or when the element reactor asks.
  const stored = {
    encrypt: host.state.encryptInputs === true || host.definition(spec.elementReactor).encryptInputs,
  };
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
      await maps.putInputs(mapId, start, chunk.splice(0), stored);
      start = total;
    }
  }
  if (chunk.length > 0) await maps.putInputs(mapId, start, chunk.splice(0), stored);
  const redactedInputs = redactedElementInputs(host.def, spec, host.state.redactedInputs);
  await maps.create({
    mapId,
    ...(redactedInputs.length > 0 ? { redactedInputs } : {}),
    ...(stored.encrypt ? { encryptInputs: true as const } : {}),
    ownerRunId: host.owner.runId,
    ownerReactor: host.owner.reactorName,
    parentRunId: host.state.runId,
    step: step.name,
    elementReactor: spec.elementReactor,
    total,
    batchSize: spec.fanOut!.batchSize,
    elementsPerJob: spec.fanOut!.elementsPerJob,
    atomic: spec.atomic,
    createdAt: host.now(),
  });
  const record: MapRecord = { mapId, mode: 'fanOut', total };
  host.state.maps = { ...host.state.maps, [step.name]: record };
  // The map is recorded in the run before any element job exists.
  await host.save();
  const first = await maps.reserve(mapId, spec.fanOut!.batchSize);
  await host.dispatchMapJobs(mapId, first, 'map-element', spec.fanOut!.elementsPerJob);
  if (total === 0) return adopt(host, step, spec, record);
  return new Suspended('map');
}

export async function adopt(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  record: MapRecord,
): Promise<StepOutcome<unknown> | Suspended> {
  const maps = host.maps;
  if (!maps) throw new InternalError(`Map '${record.mapId}' was fanned out but this process has no map store.`);
  const meta = await maps.meta(record.mapId);
  if (!meta) {
    return new Failure(
      new InternalError(`The records of map '${record.mapId}' expired before the run adopted them (contextTtl).`),
      { retryable: false },
    );
  }
  const progress = await maps.progress(record.mapId);
  if (!progress.done) return new Suspended('map');
  await maps.close(record.mapId);
  if (spec.atomic && progress.failedIndex !== undefined) {
    const [failed] = await maps.records(record.mapId, progress.failedIndex, progress.failedIndex + 1);
    if (failed?.status === 'failed') return mapFailure(progress.failedIndex, failed);
  }
  if (progress.halted > 0) {
    for await (const o of new ResultEnumerator(maps, record.mapId, meta.total)) {
      if (o.status === 'halted') return new Halt(o.reason, o.details);
    }
  }
  const results = new ResultEnumerator(maps, record.mapId, meta.total);
  return finishResults(spec, results, results.toJSON());
}
