import type { ReactorDefinition, RunView, StepContract, StepDefinition, TraceEntry } from '../core';

/** What kind of step a DAG node is (the reference's `type`). */
export type DashboardStepKind = 'step' | 'compose' | 'map' | 'async' | 'interrupt' | 'sleep';

/** Where a step of a run is, as the dashboard colours it. */
export type DashboardStepStatus =
  'pending' | 'running' | 'paused' | 'completed' | 'skipped' | 'failed' | 'halted' | 'undone';

/** One field of an interrupt's payload contract, for the answer form. */
export interface DashboardPayloadField {
  name: string;
  type: string;
  optional: boolean;
}

/** One step of a reactor's DAG: its kind and what it depends on. */
export interface DashboardStep {
  name: string;
  kind: DashboardStepKind;
  /** Every step this one depends on (results it reads and `waitFor`). */
  dependsOn: string[];
  /** The reactor a compose, map or async step runs. */
  reactor?: string;
  /** Map steps: whether elements run as jobs (fan-out). */
  fanOut?: boolean;
  /** Attempts the retry policy allows. */
  maxAttempts: number;
  /** Whether the step can be undone (a class or handler with `undo`, a compose or a map). */
  undoable: boolean;
  /** Interrupt steps: the payload contract (`dto` names its class; `fields` lists the short forms). */
  payload?:
    | { kind: 'any' }
    | { kind: 'dto'; name: string }
    | { kind: 'fields'; fields: DashboardPayloadField[] }
    | { kind: 'value'; type: string };
}

/** A reactor as the dashboard draws it. */
export interface DashboardReactor {
  name: string;
  version: string;
  description?: string;
  steps: DashboardStep[];
}

/** A DAG node of one run: the step, its status there, its attempts and timing. */
export interface DashboardStepState extends DashboardStep {
  status: DashboardStepStatus;
  attempts: number;
  /**
   * What the rollback did to the step, when it ran its callback: the failing step's `compensate`,
   * a completed step's `undo` (`undo-failed` and `compensate-failed` are in `rollbackFailures`).
   */
  rollback?: 'compensated' | 'compensate-failed' | 'undone' | 'undo-failed';
  /** When its first attempt started and when it finished (ms), from the trace. */
  startedAt?: number;
  finishedAt?: number;
}

function payloadOf(contract: StepContract | undefined): DashboardStep['payload'] {
  if (!contract) return { kind: 'any' };
  if (contract.kind === 'dto') return { kind: 'dto', name: contract.name };
  if (contract.kind === 'value') return { kind: 'value', type: contract.field.type };
  return {
    kind: 'fields',
    fields: contract.fields.map((f) => ({ name: f.name, type: f.type, optional: f.optional || f.hasDefault })),
  };
}

function undoable(step: StepDefinition): boolean {
  const h = step.handler;
  switch (h.kind) {
    case 'class':
      return typeof (h.stepClass.prototype as { undo?: unknown }).undo === 'function';
    case 'inline':
      return typeof (h.handler as { undo?: unknown }).undo === 'function';
    case 'compose':
    case 'map':
      return true;
    default:
      return false;
  }
}

/** A step as the dashboard shows it. */
export function describeStep(step: StepDefinition): DashboardStep {
  const h = step.handler;
  const base = {
    name: step.name,
    dependsOn: [...step.dependsOn],
    maxAttempts: step.retries.maxAttempts,
    undoable: undoable(step),
  };
  switch (h.kind) {
    case 'compose':
      return { ...base, kind: 'compose', reactor: h.reactorName };
    case 'map':
      return { ...base, kind: 'map', reactor: h.map.elementReactor, fanOut: h.map.fanOut !== undefined };
    case 'async':
      return { ...base, kind: 'async', reactor: h.reactorName };
    case 'interrupt':
      return { ...base, kind: 'interrupt', payload: payloadOf(h.interrupt.payload) };
    case 'sleep':
      return { ...base, kind: 'sleep' };
    default:
      return { ...base, kind: 'step' };
  }
}

/** A reactor as the dashboard shows it: its steps in declaration order. */
export function describeReactor(def: ReactorDefinition): DashboardReactor {
  return {
    name: def.name,
    version: def.version,
    ...(def.description !== undefined ? { description: def.description } : {}),
    steps: def.steps.map(describeStep),
  };
}

function lastIndex(trace: readonly TraceEntry[], step: string, types: ReadonlyArray<TraceEntry['type']>): number {
  for (let i = trace.length - 1; i >= 0; i--) if (trace[i].step === step && types.includes(trace[i].type)) return i;
  return -1;
}

/** The status of an async unit's node, by the status of its run (an expired one is unknown). */
const UNIT_STATUS: Partial<Record<RunView['asyncUnits'][string]['status'], DashboardStepStatus>> = {
  pending: 'running',
  running: 'running',
  rolling_back: 'running',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'failed',
  halted: 'halted',
};

/** Whether a compensate or undo trace entry is of a callback that ran (not "no undo defined"). */
function callbackRan(entry: TraceEntry | undefined): entry is TraceEntry {
  return entry !== undefined && !/^no (undo|compensate) defined$|nothing to undo/.test(entry.detail ?? '');
}

/**
 * Each step of `steps` with its status in the run `view`, read from the view: completed and
 * skipped steps, failed steps (compensated when their compensate succeeded), the halting step,
 * undos in the trace, the interrupt (or paused composed child) the run waits at, and steps at work while the run is live (an
 * attempt started, a map or an async unit in flight, or, in a running run, every dependency done).
 */
export function stepStates(steps: readonly DashboardStep[], view: RunView): DashboardStepState[] {
  const trace = view.trace;
  const live = view.status === 'running' || view.status === 'pending' || view.status === 'paused';
  return steps.map((step) => {
    const name = step.name;
    const started = lastIndex(trace, name, ['run', 'retry', 'resume', 'handoff', 'pause']);
    const finished = lastIndex(trace, name, ['complete', 'skip']);
    const failed = lastIndex(trace, name, ['fail']);
    const undo = lastIndex(trace, name, ['undo', 'undoAll']);
    const compensate = lastIndex(trace, name, ['compensate']);
    const undid = callbackRan(trace[undo]);
    const compensated = callbackRan(trace[compensate]);
    let rollback: DashboardStepState['rollback'];
    if (compensated) rollback = trace[compensate].ok === false ? 'compensate-failed' : 'compensated';
    if (undid && undo > finished) rollback = trace[undo].ok === false ? 'undo-failed' : 'undone';
    let status: DashboardStepStatus = 'pending';
    if (view.completed.includes(name)) {
      status = trace[finished]?.type === 'skip' ? 'skipped' : 'completed';
      if (rollback === 'undone') status = 'undone';
    } else if (view.failure?.stepName === name || (failed >= 0 && failed >= started)) {
      status = 'failed';
    } else if (view.halt?.step === name) {
      status = 'halted';
    } else if (
      view.status === 'paused' &&
      ((step.kind === 'interrupt' && name in view.interrupts) || view.children[name]?.status === 'paused')
    ) {
      status = 'paused';
    } else if (
      view.sleeping !== undefined &&
      (view.sleeping.step === name || view.sleeping.step.startsWith(`${name}.`))
    ) {
      // Parked at a sleep (its own, or a composed child's): waiting, no worker holds it (see RunView.sleeping).
      status = 'paused';
    } else if (rollback === 'undone') {
      status = 'undone';
    } else if (!live && view.asyncUnits[name] !== undefined) {
      // A unit nobody read when the run finished (it ran on by itself): as its own run goes.
      status = UNIT_STATUS[view.asyncUnits[name].status] ?? 'pending';
    } else if (
      live &&
      (started >= 0 ||
        // Executing: its dependencies are done (the trace of a step in flight is saved with its result).
        (view.status === 'running' && step.dependsOn.every((d) => view.completed.includes(d))) ||
        (view.maps[name] !== undefined && !view.maps[name].done) ||
        (view.asyncUnits[name] !== undefined && view.asyncUnits[name].status !== 'completed'))
    ) {
      status = 'running';
    }
    let startedAt: number | undefined;
    let finishedAt: number | undefined;
    for (const e of trace) {
      if (e.step !== name) continue;
      if (startedAt === undefined && (e.type === 'run' || e.type === 'pause' || e.type === 'handoff')) startedAt = e.at;
      if (e.type === 'complete' || e.type === 'fail' || e.type === 'skip' || e.type === 'halt') finishedAt = e.at;
    }
    return {
      ...step,
      status,
      attempts: view.attempts[name] ?? 0,
      ...(rollback ? { rollback } : {}),
      ...(startedAt !== undefined ? { startedAt } : {}),
      ...(finishedAt !== undefined ? { finishedAt } : {}),
    };
  });
}
