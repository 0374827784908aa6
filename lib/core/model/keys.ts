/**
 * Every logical key name the engine uses for leases and ids, in one place. Storage adapters map
 * them onto their own keyspace (Redis: `RedisKeys`, with hash tags); nothing else builds them.
 */

/** The lease key of a run (its executions, undo, failRun and the sweeper take or read it). */
export function runLeaseKey(runId: string): string {
  return `run:${runId}`;
}

/** `<runId>:<step>`: the id of the map of step `step` in run (or composed child) `runId`. */
export function mapIdOf(runId: string, step: string): string {
  return `${runId}:${step}`;
}

/** The logical lease key of one map element (its job and its rollback job take it). */
export function elementLeaseKey(mapId: string, index: number): string {
  return `mapel:${mapId}:${index}`;
}

/** The run id of element `index` of map `mapId` (it is never stored as a run of its own). */
export function elementRunId(mapId: string, index: number): string {
  return `${mapId}#${index}`;
}

/** The run id of the child composed by step `step` of run `runId` (stored inside its parent). */
export function childRunId(runId: string, step: string): string {
  return `${runId}/${step}`;
}

/** Characters a run id or step name may not contain: they separate the ids above. */
export const ID_SEPARATORS = /[:/#{}]/;
