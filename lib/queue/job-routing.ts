import { DefinitionError, type JobRoute, type JobRouting, type ReactorDefinition } from '../core';
import { messages } from '../config';
import { REACTOR_QUEUE_NAME } from './queue.constants';

/** The highest BullMQ job priority number (BullMQ's `PRIORITY_LIMIT`, 2^21). */
export const MAX_JOB_PRIORITY = 2 ** 21;

/** A queue name: safe in a BullMQ key (no `:`) and inside the module's hash-tagged prefix (no braces). */
const QUEUE_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * Validate the `queue`, `concurrency` and `priority` options of every registered definition and
 * resolve the routing of jobs by reactor name. Called at boot, after discovery, whatever the
 * runtime (a bad option fails the boot on the embedded runtime too, so tests do not lie).
 *
 * - Every version in `definitions` is validated; a reactor's route is that of its `current`
 *   version (the one new runs take), so a deploy can move a reactor to another queue.
 * - An inline async unit (`r.asyncStep`) is part of its reactor and takes its route; a unit that
 *   runs another reactor (`r.asyncReactor`) takes that reactor's route, like a run of it would.
 * - Reactors sharing a queue declare the same `concurrency`, or some of them none.
 *
 * @param definitions every registered definition (every version)
 * @param current the definition new runs of each name take (the highest version)
 * @throws DefinitionError naming the reactor and the option
 */
export function resolveJobRouting(
  definitions: readonly ReactorDefinition[],
  current: readonly ReactorDefinition[],
): JobRouting {
  for (const def of definitions) checkRouting(def);
  const routes = new Map<string, JobRoute>();
  const queues = new Map<string, { concurrency?: number; declaredBy?: string }>();
  for (const def of current) {
    const routing = checkRouting(def);
    if (!routing) continue;
    const { queue, concurrency, priority } = routing;
    const route: JobRoute = {
      ...(queue !== undefined ? { queue } : {}),
      ...(priority !== undefined ? { priority } : {}),
    };
    routes.set(def.name, route);
    for (const step of def.steps) {
      if (step.handler.kind === 'async' && step.handler.inlineUnit) routes.set(step.handler.inlineUnit.name, route);
    }
    if (queue === undefined) continue;
    const known = queues.get(queue) ?? {};
    if (concurrency !== undefined) {
      if (known.concurrency !== undefined && known.concurrency !== concurrency) {
        throw new DefinitionError(
          messages.reactorQueueConcurrencyConflict(
            queue,
            known.declaredBy ?? '',
            known.concurrency,
            def.name,
            concurrency,
          ),
          def.name,
        );
      }
      known.concurrency = concurrency;
      known.declaredBy = def.name;
    }
    queues.set(queue, known);
  }
  return {
    routes,
    queues: new Map(
      [...queues].map(([name, { concurrency }]) => [name, concurrency === undefined ? {} : { concurrency }]),
    ),
  };
}

/** A definition's routing options, checked; undefined when it declares none. */
function checkRouting(def: ReactorDefinition): ReactorDefinition['routing'] {
  const routing = def.routing;
  if (!routing) return undefined;
  const { queue, concurrency, priority } = routing;
  const invalid = (field: 'queue' | 'concurrency' | 'priority', value: unknown) =>
    new DefinitionError(messages.reactorQueueOptionInvalid(def.name, field, value), def.name);
  if (queue !== undefined) {
    if (typeof queue !== 'string' || !QUEUE_NAME.test(queue)) throw invalid('queue', queue);
    if (queue === REACTOR_QUEUE_NAME)
      throw new DefinitionError(messages.reactorQueueNameReserved(def.name, queue), def.name);
  }
  if (concurrency !== undefined) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw invalid('concurrency', concurrency);
    if (queue === undefined) throw new DefinitionError(messages.reactorConcurrencyWithoutQueue(def.name), def.name);
  }
  if (priority !== undefined && (!Number.isInteger(priority) || priority < 1 || priority > MAX_JOB_PRIORITY)) {
    throw invalid('priority', priority);
  }
  return routing;
}
