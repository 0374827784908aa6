import { InvalidRunIdError } from '../errors/run-state.error';
import { runIdProblem } from '../model/keys';

/** Refuse a run id that cannot name a run, with a coded error that says why. */
export function checkRunId(runId: unknown): asserts runId is string {
  const problem = runIdProblem(runId);
  if (problem) throw new InvalidRunIdError(runId, problem);
}
