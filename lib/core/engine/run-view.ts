import type { ReactorDefinition } from '../definition/definition';
import { REDACTED, redactInputs } from '../definition/redaction';
import { hydrateMapValue, returnsMapMarker, storesMapMarker } from '../map/map-results';
import type { RollbackFailure, RunFailure } from '../model/failure';
import { inlineProgress, type ElementRecord, type MapProgress } from '../model/map';
import type { InterruptRecord, RunState, RunStatus, TraceEntry } from '../model/run-state';
import type { MapStore } from '../ports/map-store.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import { publicResults, publicValue } from '../results/async-unit-result';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import type { DefinitionRegistry } from './registry';

/** A run as shown to people: inputs and step arguments are redacted. */
export interface RunView {
  runId: string;
  reactorName: string;
  status: RunStatus;
  /** Inputs with redacted fields replaced by `[REDACTED]`. */
  inputs: Record<string, unknown>;
  /** Step results; an async unit's is its value, or a `Failure` or `Halt` (as in outcomes). */
  results: Record<string, unknown>;
  /** Completed steps in completion order. */
  completed: string[];
  attempts: Record<string, number>;
  trace: TraceEntry[];
  value?: unknown;
  failure?: RunFailure;
  halt?: { step: string; reason: string; details?: unknown };
  cancellation?: { reason: string; rollbackFailures: RollbackFailure[] };
  /** Composed children, by compose step name. */
  children: Record<string, RunView>;
  /** For a run started by `retry(runId)`: the failed run it retries, and how many retries led here. */
  retriedFrom?: string;
  retryCount?: number;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
  /** Progress of each map step: total, succeeded, failed, in flight (`dispatched - settled`). */
  maps: Record<string, MapProgress>;
  /** The async units the run dispatched, by step: their run, status and, once finished, value or failure. */
  asyncUnits: Record<string, AsyncUnitView>;
  /** The interrupts the run reached, by step: path, correlation id, when, deadline. */
  interrupts: Record<string, InterruptRecord>;
  /** The outcome a caller would see. */
  outcome: RunOutcome;
}

/** An async unit as `client.get` shows it. */
export interface AsyncUnitView {
  runId: string;
  reactorName: string;
  dispatchedAt: number;
  /** Its run's status; `expired` when its record is gone. */
  status: RunStatus | 'expired';
  value?: unknown;
  failure?: RunFailure;
}

/** Runs as callers and people see them: outcomes with map values as results objects, and views. */
export class RunViewer {
  constructor(
    private readonly registry: DefinitionRegistry,
    private readonly maps: MapStore | undefined,
    private readonly storage?: ReactorStorage,
  ) {}

  /** The caller-facing outcome, with a map value turned into its results object. */
  outcome<O = unknown>(state: RunState): RunOutcome<O> {
    const outcome = outcomeOf<O>(state);
    if (outcome.status === 'completed') outcome.value = this.value(state) as O;
    return outcome;
  }

  /**
   * The run's value, with a map step's marker turned into its results object: only when the
   * reactor returns a map step's result as it is (see {@link storesMapMarker}); a value a step or
   * collector returned is user data and is never read as a marker.
   */
  private value(state: RunState): unknown {
    return returnsMapMarker(this.definitionOf(state.reactorName), this.definitionOf)
      ? hydrateMapValue(state.value, this.maps)
      : publicValue(state, state.value);
  }

  private readonly definitionOf = (name: string): ReactorDefinition | undefined =>
    this.registry.has(name) ? this.registry.get(name) : undefined;

  /** The run as shown to people: inputs redacted, children and map progress included. */
  async view(state: RunState): Promise<RunView> {
    const def = this.registry.has(state.reactorName) ? this.registry.get(state.reactorName) : undefined;
    const inputs = def
      ? redactInputs(def, state.inputs, state.redactedInputs)
      : Object.fromEntries(Object.keys(state.inputs).map((k) => [k, REDACTED]));
    const children: Record<string, RunView> = {};
    for (const [k, child] of Object.entries(state.children)) children[k] = await this.view(child);
    const maps: Record<string, MapProgress> = {};
    for (const [step, record] of Object.entries(state.maps ?? {})) {
      if (record.mode === 'fanOut' && this.maps) {
        const progress = await this.maps.progress(record.mapId).catch(() => undefined);
        if (progress) maps[step] = progress;
      } else {
        const stepDef = def?.stepsByName.get(step);
        const records = storesMapMarker(stepDef, this.definitionOf)
          ? (state.results[step] as { $mapRecords?: ElementRecord[] } | undefined)?.$mapRecords
          : undefined;
        if (records) maps[step] = inlineProgress(records);
      }
    }
    const asyncUnits: Record<string, AsyncUnitView> = {};
    for (const [step, ref] of Object.entries(state.asyncUnits ?? {})) {
      const unit = await this.storage?.load(ref.runId).catch(() => undefined);
      asyncUnits[step] = {
        ...ref,
        status: unit?.status ?? 'expired',
        ...(unit?.status === 'completed' ? { value: unit.value } : {}),
        ...(unit?.failure ? { failure: unit.failure } : {}),
      };
    }
    return {
      runId: state.runId,
      reactorName: state.reactorName,
      status: state.status,
      inputs,
      asyncUnits,
      interrupts: Object.fromEntries(
        Object.entries(state.interrupts ?? {}).map(([step, { applied: _applied, ...record }]) => [step, record]),
      ),
      results: publicResults(state),
      completed: state.completed,
      attempts: state.attempts,
      trace: state.trace,
      value: this.value(state),
      failure: state.failure,
      halt: state.halt,
      cancellation: state.cancellation,
      children,
      maps,
      ...(state.retriedFrom !== undefined ? { retriedFrom: state.retriedFrom, retryCount: state.retryCount } : {}),
      createdAt: state.createdAt,
      updatedAt: state.updatedAt,
      finishedAt: state.finishedAt,
      outcome: this.outcome(state),
    };
  }
}
