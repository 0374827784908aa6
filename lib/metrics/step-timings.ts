/** How many runs with a step attempt in flight are remembered; past it the oldest is forgotten. */
export const MAX_TRACKED_RUNS = 10_000;

/**
 * When each step attempt in flight started (event clock time), per run, so that its end can be
 * timed. Bounded: a run whose end this process never sees (its lease lost, the process asked to
 * stop, a step paused at an interrupt) is forgotten with the run's end, or when
 * {@link MAX_TRACKED_RUNS} newer runs have started steps since.
 * @internal
 */
export class StepTimings {
  private readonly runs = new Map<string, Map<string, number>>();

  constructor(private readonly maxRuns = MAX_TRACKED_RUNS) {}

  /** An attempt of `step` started at `at` (a later start of the same step replaces it). */
  start(runId: string, step: string, at: number): void {
    let steps = this.runs.get(runId);
    if (!steps) {
      steps = new Map();
      this.runs.set(runId, steps);
      if (this.runs.size > this.maxRuns) this.runs.delete(this.runs.keys().next().value!);
    }
    steps.set(step, at);
  }

  /** The attempt of `step` ended at `at`: its duration in seconds, or undefined when its start was not seen. */
  end(runId: string, step: string, at: number): number | undefined {
    const steps = this.runs.get(runId);
    const started = steps?.get(step);
    if (started === undefined) return undefined;
    steps!.delete(step);
    if (steps!.size === 0) this.runs.delete(runId);
    return seconds(started, at);
  }

  /** Every attempt of the run in flight ended at `at`: each step and its duration in seconds. */
  endAll(runId: string, at: number): Array<[step: string, seconds: number]> {
    const steps = this.runs.get(runId);
    if (!steps) return [];
    this.runs.delete(runId);
    return [...steps].map(([step, started]) => [step, seconds(started, at)]);
  }

  /** Forget the run's attempts in flight without timing them. */
  forget(runId: string, step?: string): void {
    if (step === undefined) {
      this.runs.delete(runId);
      return;
    }
    const steps = this.runs.get(runId);
    steps?.delete(step);
    if (steps?.size === 0) this.runs.delete(runId);
  }

  /** How many runs have an attempt in flight (for tests). */
  get size(): number {
    return this.runs.size;
  }
}

function seconds(from: number, to: number): number {
  return Math.max(0, to - from) / 1000;
}
