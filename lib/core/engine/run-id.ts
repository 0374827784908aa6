import { InvalidRunIdError } from '../errors/run-state.error';
import { runIdProblem, storedRunIdProblem } from '../model/keys';

/**
 * Refuse a run id that cannot name a run, with a coded error that says why (`where` names what
 * gave it, as in `Reactor 'x': option runId`; `hint` says what to do instead).
 */
export function checkRunId(runId: unknown, where?: string, hint?: string): asserts runId is string {
  const problem = runIdProblem(runId);
  if (problem) throw new InvalidRunIdError(runId, problem, where, hint);
}

/**
 * Refuse an id that cannot name a stored run `get`, `wait` or `cancel` may reach: a run's, or an
 * async unit's (`<runId>/<step>`, see `storedRunIdProblem`).
 */
export function checkStoredRunId(runId: unknown): asserts runId is string {
  const problem = storedRunIdProblem(runId);
  if (problem) throw new InvalidRunIdError(runId, problem);
}
