import type { InterruptRecord, RunState } from './run-state';

export type { InterruptRecord, ResumeClaim } from './run-state';

/** An interrupt a run waits at, and the state (the run or a composed child) that holds it. */
export interface WaitingInterrupt {
  path: string;
  step: string;
  record: InterruptRecord;
  state: RunState;
}

/** Every interrupt `state` waits at (reached, not settled), its composed children's included. */
export function waitingInterrupts(state: RunState): WaitingInterrupt[] {
  const out: WaitingInterrupt[] = [];
  const visit = (run: RunState): void => {
    for (const [step, record] of Object.entries(run.interrupts ?? {})) {
      if (!run.completed.includes(step)) out.push({ path: record.path, step, record, state: run });
    }
    for (const child of Object.values(run.children)) if (child.status === 'paused') visit(child);
  };
  visit(state);
  return out;
}

/** The path of interrupt `step` of the run (or composed child) `runId`: `child.approve` for `<root>/child`. */
export function interruptPath(runId: string, step: string): string {
  const slash = runId.indexOf('/');
  return slash < 0
    ? step
    : `${runId
        .slice(slash + 1)
        .split('/')
        .join('.')}.${step}`;
}
