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
