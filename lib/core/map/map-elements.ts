/** What inline and fan-out maps share: element inputs, element records, results and failures. */
import type { MapSpec, StepDefinition } from '../definition/definition';
import type { ElementRecord } from '../model/map';
import type { RunState } from '../model/run-state';
import type { RunOutcome } from '../results/run-outcome';
import { Failure, Success, type StepOutcome } from '../results/step-outcome';
import { NestedFailure } from '../results/nested-failure';
import { InternalError } from '../errors/internal.error';
import { describeError, runFailure } from '../model/failure';
import type { ArrayResults, ResultEnumerator } from './map-results';
import type { NestedExecution, MapHost } from './map-host';

/** The inputs of one element: element sources read the element, others the parent run. */
export function elementInputs(host: MapHost, spec: MapSpec, element: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, source] of Object.entries(spec.inputs)) out[key] = host.resolveSource(source, element);
  return out;
}

/** The record of an element that failed before its reactor ran (its inputs could not be made). */
export function failedRecord(
  host: MapHost,
  step: StepDefinition,
  index: number,
  error: unknown,
  code: string,
): ElementRecord {
  const { message } = describeError(error);
  return {
    status: 'failed',
    failure: runFailure({
      message: `Reactor '${host.def.name}' map '${step.name}' element ${index}: ${message}`,
      code,
      reactorName: host.def.name,
      stepName: step.name,
      error,
    }),
  };
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
      throw new InternalError(`A map element ended ${outcome.status}, which a map element cannot.`);
  }
}

/** What of an element's final state is kept for its rollback (nothing when it has nothing to undo). */
export function rollbackStateOf(
  state: RunState | undefined,
  execution: NestedExecution | undefined,
): RunState | undefined {
  if (!state || !execution || !execution.hasUndoWork()) return undefined;
  return { ...state, trace: [], results: {} };
}

export async function finishResults(
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
 * A map failed because an element failed: the element's failure (its reactor, step, exception
 * class, field errors) becomes the cause of the map step's failure, and the map is compensated.
 */
export function mapFailure(index: number, record: Extract<ElementRecord, { status: 'failed' }>): Failure {
  return new NestedFailure(record.failure, true, index);
}
