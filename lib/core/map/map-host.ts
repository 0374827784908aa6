import type { MapSpec, ReactorDefinition, StepDefinition } from '../definition/definition';
import type { ArgSource } from '../definition/ref';
import type { StepContext } from '../definition/step';
import type { RollbackFailure } from '../model/failure';
import type { RunState, TraceEntry } from '../model/run-state';
import type { JobKind } from '../ports/job-dispatcher.port';
import type { MapStore } from '../ports/map-store.port';
import type { RunOutcome } from '../results/run-outcome';

/** A map step: a step whose handler is a map spec. */
export type MapStep = StepDefinition & { readonly handler: { readonly kind: 'map'; readonly map: MapSpec } };

/** An execution of a nested run in this process (a map element, a composed child). */
export interface NestedExecution {
  /** Run it until it completes, fails, halts or waits. */
  execute(resumed: boolean): Promise<RunOutcome>;
  /** Undo every step on its undo stack, newest first. */
  undoAll(): Promise<RollbackFailure[]>;
  /** Whether undoing it would do anything. */
  hasUndoWork(): boolean;
}

/**
 * What the map runner needs from the execution that runs the map step (a narrow view of the
 * step kinds' `StepScope`, which extends it).
 */
export interface MapHost {
  readonly def: ReactorDefinition;
  readonly state: RunState;
  /** The top-level run (the owner a fan-out map resumes). */
  readonly owner: { runId: string; reactorName: string };
  /** Set when this execution is itself a map element (nested maps run inline). */
  readonly inElement: boolean;
  readonly maps?: MapStore;
  now(): number;
  definition(name: string): ReactorDefinition;
  resolveSource(source: ArgSource, element?: unknown): unknown;
  /** An execution of an element in this process; `'none'`: it saves nowhere (inline elements are not checkpointed). */
  child(def: ReactorDefinition, state: RunState, saving: 'none'): NestedExecution;
  save(): Promise<void>;
  /** Append an entry to the run's trace. */
  trace(entry: Omit<TraceEntry, 'at'>): void;
  /** Enqueue the jobs of `indices` for the owner run, `perJob` elements to a `map-element` job. */
  dispatchMapJobs(
    mapId: string,
    indices: number[],
    kind: Extract<JobKind, 'map-element' | 'map-rollback'>,
    perJob?: number,
  ): Promise<void>;
  context(step: StepDefinition): StepContext;
}
