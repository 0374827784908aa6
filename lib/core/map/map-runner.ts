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
import type { MapSpec } from '../definition/definition';
import { ArgumentResolutionError } from '../errors/argument-resolution.error';
import { ReactorError } from '../errors/reactor.error';
import { Failure, type StepOutcome } from '../results/step-outcome';
import type { Suspended } from '../results/suspension';
import { adopt, dispatchFanOut } from './fan-out-map';
import { runInline } from './inline-map';
import type { MapHost, MapStep } from './map-host';

/** Run (or adopt) a map step. */
export async function runMap(
  host: MapHost,
  step: MapStep,
  args: Record<string, unknown>,
): Promise<StepOutcome<unknown> | Suspended> {
  const spec = step.handler.map;
  const record = host.state.maps?.[step.name];
  if (record?.mode === 'fanOut') return adopt(host, step, spec, record);
  const source = await resolveCollection(host, step, spec, args);
  if (source instanceof Failure) return source;
  if (spec.fanOut && !host.inElement && host.maps) return dispatchFanOut(host, step, spec, source);
  return runInline(host, step, spec, source);
}

async function resolveCollection(
  host: MapHost,
  step: MapStep,
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
