/** Inline maps: elements run in this process, `concurrency` at a time, pulling the source lazily. */
import type { MapSpec, StepDefinition } from '../definition/definition';
import { redactedElementInputs } from '../definition/redaction';
import { elementRunId, mapIdOf } from '../model/keys';
import type { ElementRecord } from '../model/map';
import type { MapRecord } from '../model/run-state';
import { newRunState, type RunState } from '../model/run-state';
import { Halt, type StepOutcome } from '../results/step-outcome';
import { describeFieldErrors, validateReactorInputs } from '../validation/validate';
import type { NestedExecution, MapHost } from './map-host';
import { elementInputs, failedRecord, finishResults, mapFailure, recordOf, rollbackStateOf } from './map-elements';
import { ArrayResults } from './map-results';
/** Run one element in this process; returns its record and its final state. */
async function runElementInline(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  mapId: string,
  index: number,
  element: unknown,
  /** Element inputs given from a redacted value (the same for every element of the map). */
  redacted: readonly string[],
): Promise<{ record: ElementRecord; state?: RunState; execution?: NestedExecution }> {
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
  const state = newRunState(elementDef, elementRunId(mapId, index), inputs, host.now(), {
    redactedInputs: redacted,
    encryptInputs: host.state.encryptInputs,
  });
  state.status = 'running';
  const execution = host.child(elementDef, state, 'none');
  const outcome = await execution.execute(false);
  return { record: recordOf(outcome), state, execution };
}

export async function runInline(
  host: MapHost,
  step: StepDefinition,
  spec: MapSpec,
  source: AsyncIterable<unknown> | Iterable<unknown>,
): Promise<StepOutcome<unknown>> {
  const mapId = mapIdOf(host.state.runId, step.name);
  const redacted = redactedElementInputs(host.def, spec, host.state.redactedInputs);
  const record: MapRecord = { mapId, mode: 'inline', elements: {}, values: spec.undoAll ? {} : undefined };
  host.state.maps = { ...host.state.maps, [step.name]: record };
  const records: ElementRecord[] = [];
  const running = new Set<Promise<void>>();
  let stop = false;
  let index = 0;

  const settle = (i: number, result: { record: ElementRecord; state?: RunState; execution?: NestedExecution }) => {
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
    const task: Promise<void> = runElementInline(host, step, spec, mapId, i, element, redacted).then((r) =>
      settle(i, r),
    );
    running.add(task);
    void task.finally(() => running.delete(task));
    if (stop) break;
  }
  await Promise.all(running);

  const halted = records.find((r) => r?.status === 'halted');
  if (halted && halted.status === 'halted') return new Halt(halted.reason, halted.details);
  const failedAt = spec.atomic ? records.findIndex((r) => r?.status === 'failed') : -1;
  if (failedAt >= 0) return mapFailure(failedAt, records[failedAt] as Extract<ElementRecord, { status: 'failed' }>);
  return finishResults(spec, new ArrayResults(records), { $mapRecords: records });
}
