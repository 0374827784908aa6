/**
 * Events: named facts the application emits (`client.emit('order.paid', payload, { id })`). A
 * reactor declared with `on: { event }` starts on each one; an interrupt declared with `event`
 * is answered by one. This file holds the declarations and their checks; the engine's
 * `engine/events.ts` delivers them.
 */

import { isWellFormed } from '../validation/arguments';

/** Longest event name accepted. */
export const MAX_EVENT_NAME = 200;

/**
 * A reactor started by an event: `@Reactor('fulfil', { on: { event: 'order.paid' } })`.
 * `E` is the event's payload type.
 */
export interface ReactorEventTrigger<E = unknown> {
  /** The event's name, as given to `client.emit`. */
  event: string;
  /**
   * The run's inputs, from the event's payload (validated as any run's inputs). @default the
   * payload itself (an object of inputs)
   */
  input?(payload: E): unknown;
  /** Start a run only for the events it accepts. @default every event of that name */
  match?(payload: E): boolean;
}

/**
 * The run an event may answer, as an interrupt's `match` sees it: a run waiting at the interrupt
 * (its composed child's inputs and results for an interrupt inside a composed child).
 */
export interface EventWaitingRun {
  /** The top-level run's id. */
  readonly runId: string;
  /** The top-level run's reactor. */
  readonly reactor: string;
  /** The interrupt's path in the run (`approve`, `child.approve`). */
  readonly step: string;
  /** The inputs of the reactor that declares the interrupt (as steps read them; not redacted). */
  readonly inputs: Readonly<Record<string, unknown>>;
  /** The results of its steps that finished so far, by step name. */
  readonly results: Readonly<Record<string, unknown>>;
}

/** Why `name` cannot be an event name (for the error message), or undefined when it can. */
export function eventNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.trim().length === 0) return 'must be a non-empty string';
  if (name.length > MAX_EVENT_NAME) return `must be at most ${MAX_EVENT_NAME} characters (got ${name.length})`;
  if (!isWellFormed(name)) return 'must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}

/** Check and freeze a reactor's `on` option; returns an error message for a bad one. */
export function toEventTrigger(on: unknown): ReactorEventTrigger | string {
  if (typeof on !== 'object' || on === null || Array.isArray(on)) {
    return 'on must be an object ({ event, input?, match? })';
  }
  const known = ['event', 'input', 'match'];
  for (const key of Object.keys(on)) {
    if (!known.includes(key)) return `on: unknown option '${key}'. It takes ${known.join(', ')}`;
  }
  const { event, input, match } = on as ReactorEventTrigger;
  const problem = eventNameProblem(event);
  if (problem) return `on.event ${problem}`;
  if (input !== undefined && typeof input !== 'function') return 'on.input must be a function (payload) => inputs';
  if (match !== undefined && typeof match !== 'function') return 'on.match must be a function (payload) => boolean';
  return Object.freeze({ event, ...(input ? { input } : {}), ...(match ? { match } : {}) });
}
