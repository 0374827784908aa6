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

/** A lone UTF-16 surrogate: such a string has no UTF-8 form, so two ids could share one key. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `runId` cannot be a run id (for the error message), or undefined when it can. */
export function runIdProblem(runId: unknown): string | undefined {
  if (typeof runId !== 'string' || runId.length === 0) return 'it must be a non-empty string';
  if (ID_SEPARATORS.test(runId)) return "it must not contain ':', '/', '#', '{' or '}'";
  if (LONE_SURROGATE.test(runId)) return 'it must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}

/**
 * Why `runId` cannot name a stored run that `get`, `wait` and `cancel` may reach, or undefined when
 * it can: a run id, or an async unit's (`<runId>/<step>`, one `/<step>` more for a unit dispatched
 * by a unit or from a composed child). A new run's id is checked with {@link runIdProblem}: the
 * `/` shape is the engine's own, so a unit's id never collides with one a caller chose.
 */
export function storedRunIdProblem(runId: unknown): string | undefined {
  if (typeof runId !== 'string' || !runId.includes('/')) return runIdProblem(runId);
  const [root, ...steps] = runId.split('/');
  if (runIdProblem(root) !== undefined || steps.some((step) => step.length === 0 || ID_SEPARATORS.test(step))) {
    return "it must be a run id, or an async unit's run id ('<runId>/<step>'), with no ':', '#', '{' or '}'";
  }
  if (LONE_SURROGATE.test(runId)) return 'it must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}
