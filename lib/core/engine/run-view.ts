import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import { REDACTED, redactedArgNames, redactInputs } from '../definition/redaction';
import { hydrateMapValue, returnsMapMarker, storesMapMarker } from '../map/map-results';
import type { RollbackFailure, RunFailure } from '../model/failure';
import { inlineProgress, type ElementRecord, type MapProgress } from '../model/map';
import type { InterruptRecord, RunState, RunStatus, TraceEntry } from '../model/run-state';
import type { MapStore } from '../ports/map-store.port';
import type { ReactorStorage } from '../ports/reactor-storage.port';
import { publicResults, publicValue } from '../results/async-unit-result';
import { outcomeOf, type RunOutcome } from '../results/run-outcome';
import type { DefinitionRegistry } from './registry';
import { sleepingStep, type SleepingStep } from '../steps/sleep.step';

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
  /** The run's tags (`tags` on start, `ctx.tag` from its steps); absent when none. */
  tags?: Record<string, string>;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
  /** Progress of each map step: total, succeeded, failed, in flight (`dispatched - settled`). */
  maps: Record<string, MapProgress>;
  /** The async units the run dispatched, by step: their run, status and, once finished, value or failure. */
  asyncUnits: Record<string, AsyncUnitView>;
  /** The interrupts the run reached, by step: path, correlation id, when, deadline. */
  interrupts: Record<string, InterruptRecord>;
  /**
   * Set while the run sleeps at a `r.sleep` step: its path and when it wakes (epoch ms). The run's
   * status stays `running` (parked, no worker holds it), as while it waits for a scheduled retry.
   */
  sleeping?: SleepingStep;
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
    if (outcome.status === 'dispatched') {
      const sleeping = sleepingStep(state, this.definitionOf);
      if (sleeping) outcome.sleeping = sleeping;
    }
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

  /** {@link value} as a view shows it: an inline map's element records redacted. */
  private viewValue(state: RunState, redaction: DerivedRedaction): unknown {
    if (redaction.empty || !returnsMapMarker(this.definitionOf(state.reactorName), this.definitionOf))
      return this.value(state);
    // Stored as the marker, or (a run that finished in this shape) as the results object's JSON.
    const stored = state.value as { records?: unknown } | null | undefined;
    if (stored && Array.isArray(stored.records))
      return { ...stored, records: stored.records.map((r: unknown) => redaction.element(r)) };
    const [marker] = Object.values(redaction.mapRecords({ value: state.value }));
    return hydrateMapValue(marker, this.maps);
  }

  private readonly definitionOf = (name: string): ReactorDefinition | undefined =>
    this.registry.has(name) ? this.registry.get(name) : undefined;

  /**
   * The run as shown to people: inputs redacted, children and map progress included, and every
   * value derived from a redacted input redacted too (see {@link derivedRedaction}).
   */
  async view(state: RunState): Promise<RunView> {
    return this.build(state, derivedRedaction(state, this.definitionOf));
  }

  private async build(state: RunState, redaction: DerivedRedaction): Promise<RunView> {
    const def = this.registry.has(state.reactorName) ? this.registry.get(state.reactorName) : undefined;
    const inputs = def
      ? redactInputs(def, state.inputs, state.redactedInputs)
      : Object.fromEntries(Object.keys(state.inputs).map((k) => [k, REDACTED]));
    const children: Record<string, RunView> = {};
    for (const [k, child] of Object.entries(state.children)) children[k] = await this.build(child, redaction);
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
    const value = this.viewValue(state, redaction);
    const outcome = redaction.outcome(this.outcome(state));
    if (outcome.status === 'completed') outcome.value = value;
    return {
      runId: state.runId,
      reactorName: state.reactorName,
      status: state.status,
      inputs,
      asyncUnits: redaction.asyncUnits(asyncUnits),
      ...sleepingIn(state, this.definitionOf),
      interrupts: Object.fromEntries(
        Object.entries(state.interrupts ?? {}).map(([step, { applied: _applied, ...record }]) => [
          step,
          redaction.interrupt(record),
        ]),
      ),
      results: redaction.mapRecords(publicResults(state)),
      completed: state.completed,
      attempts: state.attempts,
      trace: redaction.trace(state.trace),
      value,
      failure: redaction.value(state.failure),
      halt: redaction.value(state.halt),
      cancellation: redaction.value(state.cancellation),
      children,
      maps,
      ...(state.retriedFrom !== undefined ? { retriedFrom: state.retriedFrom, retryCount: state.retryCount } : {}),
      ...(state.tags !== undefined ? { tags: { ...state.tags } } : {}),
      createdAt: state.createdAt,
      updatedAt: state.updatedAt,
      finishedAt: state.finishedAt,
      outcome,
    };
  }
}

/** `{ sleeping }` when the run sleeps at a `r.sleep` step, else nothing. */
function sleepingIn(
  state: RunState,
  definitionOf: (name: string) => ReactorDefinition | undefined,
): { sleeping?: SleepingStep } {
  const sleeping = sleepingStep(state, definitionOf);
  return sleeping ? { sleeping } : {};
}

/**
 * A redacted value shorter than this is redacted only where a whole string equals it: looked for
 * inside longer strings, `"7"` would blank every message with a 7 in it.
 */
const MIN_CONTAINED_LENGTH = 3;
/** At most this many strings are taken from a run's redacted values (a huge redacted array is not walked whole). */
const MAX_SECRETS = 256;
/** Nested values deeper than this are not walked: shown as `[REDACTED]` when redaction applies. */
const MAX_DEPTH = 64;
/**
 * Fields kept as they are when a failure, halt or outcome is redacted: names of steps and reactors,
 * codes and classes (never derived from a run's inputs), and the run's own value (user data, like
 * the results: not redacted).
 */
const STRUCTURAL = new Set([
  'code',
  'reactorName',
  'stepName',
  'step',
  'exceptionClass',
  'kind',
  'mapStep',
  'path',
  'type',
  'runId',
  'status',
]);

const NOTHING_KEPT: ReadonlySet<string> = new Set();
/** Kept in an outcome: the structural fields and the run's value. */
const OUTCOME_KEPT = new Set([...STRUCTURAL, 'value']);

/**
 * What a view must not show of a run beyond its redacted inputs themselves: the values derived
 * from them. A string (anywhere in a failure, a halt's details, a cancellation, a trace entry's
 * detail and arguments, an interrupt's correlation id, an async unit's failure) is replaced by
 * `[REDACTED]` as a whole when it contains a secret of the run: the text of a redacted input's value
 * (each string and number in it), or a coordination key a key function of its reactor computed
 * while reading a redacted input (a hash of a card number is as secret as the number). An
 * interrupt's correlation id is redacted when its function reads a redacted input or argument.
 * Secrets are collected over the whole run (composed children included), and shorter than 3
 * characters they are matched only by a whole string equal to them.
 */
export class DerivedRedaction {
  private readonly contained: string[];

  constructor(private readonly secrets: ReadonlySet<string>) {
    this.contained = [...secrets].filter((s) => s.length >= MIN_CONTAINED_LENGTH);
  }

  /** Whether there is anything to redact. */
  get empty(): boolean {
    return this.secrets.size === 0;
  }

  /** `text`, or `[REDACTED]` when it holds a secret of the run. */
  string(text: string): string {
    if (this.empty || text === REDACTED) return text;
    if (this.secrets.has(text) || this.contained.some((secret) => text.includes(secret))) return REDACTED;
    return text;
  }

  /** A copy of `value` with every string that holds a secret replaced (structural fields kept). */
  value<T>(value: T, keep: ReadonlySet<string> = STRUCTURAL): T {
    if (this.empty || value === undefined) return value;
    return this.walk(value, keep, 0) as T;
  }

  /** Trace entries with their detail and arguments redacted. */
  trace(entries: TraceEntry[]): TraceEntry[] {
    if (this.empty) return entries;
    return entries.map((entry) => ({
      ...entry,
      ...(entry.detail !== undefined ? { detail: this.string(entry.detail) } : {}),
      ...(entry.arguments !== undefined ? { arguments: this.value(entry.arguments, NOTHING_KEPT) } : {}),
    }));
  }

  /** Async units with their failures redacted (their values are user data, as results are). */
  asyncUnits(units: Record<string, AsyncUnitView>): Record<string, AsyncUnitView> {
    if (this.empty) return units;
    return Object.fromEntries(
      Object.entries(units).map(([step, unit]) => [
        step,
        unit.failure ? { ...unit, failure: this.value(unit.failure) } : unit,
      ]),
    );
  }

  /** The outcome with its failure, halt and cancellation redacted (its value kept). */
  outcome<O>(outcome: RunOutcome<O>): RunOutcome<O> {
    if (this.empty) return outcome;
    return this.value(outcome, OUTCOME_KEPT);
  }

  /**
   * Results with the element records of inline map steps (`$mapRecords`) redacted: a failed
   * element's failure, a halted one's reason and details (written by the engine, not user data);
   * completed elements' values are kept, as results are.
   */
  mapRecords(results: Record<string, unknown>): Record<string, unknown> {
    if (this.empty) return results;
    let out: Record<string, unknown> | undefined;
    for (const [step, result] of Object.entries(results)) {
      const records = (result as { $mapRecords?: unknown } | null)?.$mapRecords;
      if (!Array.isArray(records)) continue;
      out ??= { ...results };
      out[step] = { ...(result as object), $mapRecords: records.map((r: unknown) => this.element(r)) };
    }
    return out ?? results;
  }

  /** One map element's record, its failure or halt redacted. */
  element<R>(record: R): R {
    if (this.empty || !record || typeof record !== 'object') return record;
    const r = record as Partial<ElementRecord> & Record<string, unknown>;
    if (r.status === 'failed') return { ...record, failure: this.value(r.failure) };
    if (r.status === 'halted')
      return {
        ...record,
        reason: this.value(r.reason),
        ...(r.details !== undefined ? { details: this.value(r.details) } : {}),
      };
    return record;
  }

  /** An interrupt's record, its correlation id redacted when it holds a secret. */
  interrupt(record: Omit<InterruptRecord, 'applied'>): Omit<InterruptRecord, 'applied'> {
    if (record.correlationId === undefined || this.empty) return record;
    const correlationId = this.string(record.correlationId);
    return correlationId === record.correlationId ? record : { ...record, correlationId };
  }

  private walk(value: unknown, keep: ReadonlySet<string>, depth: number): unknown {
    if (typeof value === 'string') return this.string(value);
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return REDACTED;
    if (Array.isArray(value)) return value.map((v) => this.walk(v, keep, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = keep.has(k) ? v : this.walk(v, keep, depth + 1);
    return out;
  }
}

/** The {@link DerivedRedaction} of run `state` (its composed children included). */
export function derivedRedaction(
  state: RunState,
  definitionOf: (name: string) => ReactorDefinition | undefined,
): DerivedRedaction {
  const secrets = new Set<string>();
  collectSecrets(state, definitionOf, secrets, 0);
  return new DerivedRedaction(secrets);
}

/** The inputs of `state` that are redacted: declared, given from a redacted value, or all of them (unknown reactor). */
function redactedInputNames(def: ReactorDefinition | undefined, state: RunState): Set<string> {
  if (!def) return new Set(Object.keys(state.inputs));
  return new Set([...def.inputs.filter((i) => i.redact).map((i) => i.name), ...(state.redactedInputs ?? [])]);
}

function collectSecrets(
  state: RunState,
  definitionOf: (name: string) => ReactorDefinition | undefined,
  secrets: Set<string>,
  depth: number,
): void {
  const def = definitionOf(state.reactorName);
  const redacted = redactedInputNames(def, state);
  for (const name of redacted) if (name in state.inputs) leaves(state.inputs[name], secrets, 0);
  const coordination = def?.coordination;
  if (coordination && redacted.size > 0) {
    for (const fn of [
      coordination.lock?.key,
      coordination.semaphore?.key,
      coordination.rateLimit?.key,
      coordination.period?.key,
      coordination.orderedLock?.key,
    ]) {
      if (!fn) continue;
      const read = new Set<string>();
      let key: unknown;
      try {
        key = fn(tracked(state.inputs, read));
      } catch {
        continue; // the engine refused it too: no key was computed
      }
      if (typeof key === 'string' && key.length > 0 && [...read].some((name) => redacted.has(name))) secrets.add(key);
    }
  }
  // A correlation id its function computed while reading a redacted input or argument.
  if (def) {
    for (const [step, record] of Object.entries(state.interrupts ?? {})) {
      const stepDef = def.stepsByName.get(step);
      if (record.correlationId !== undefined && stepDef && correlationReadsSecret(def, stepDef, state))
        secrets.add(record.correlationId);
    }
  }
  if (depth < MAX_DEPTH)
    for (const child of Object.values(state.children ?? {})) collectSecrets(child, definitionOf, secrets, depth + 1);
}

/** The strings (and numbers, as text) in `value`, into `into`, up to {@link MAX_SECRETS}. */
function leaves(value: unknown, into: Set<string>, depth: number): void {
  if (into.size >= MAX_SECRETS) return;
  if (typeof value === 'string') {
    if (value.length > 0 && value !== REDACTED) into.add(value);
  } else if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'bigint' || Number.isFinite(value)) into.add(String(value));
  } else if (value !== null && typeof value === 'object' && depth < MAX_DEPTH) {
    for (const v of Object.values(value)) leaves(v, into, depth + 1);
  }
}

/** `object` as a key function sees it, noting in `read` every property it reads or asks about. */
function tracked<T extends object>(object: T, read: Set<string>): T {
  const note = (key: string | symbol) => {
    if (typeof key === 'string') read.add(key);
  };
  return new Proxy(object, {
    get(target, key, receiver) {
      note(key);
      return Reflect.get(target, key, receiver) as unknown;
    },
    has(target, key) {
      note(key);
      return Reflect.has(target, key);
    },
    getOwnPropertyDescriptor(target, key) {
      note(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
}

/** Whether interrupt `step`'s `correlationId` function reads a redacted input or a redacted argument of it. */
function correlationReadsSecret(def: ReactorDefinition, step: StepDefinition, state: RunState): boolean {
  const spec = step.handler.kind === 'interrupt' ? step.handler.interrupt : undefined;
  if (!spec?.correlationId) return false;
  const redactedInputs = redactedInputNames(def, state);
  const redactedArgs = new Set(redactedArgNames(step, state.redactedInputs ?? []));
  if (redactedInputs.size === 0 && redactedArgs.size === 0) return false;
  const args: Record<string, unknown> = {};
  for (const [name, source] of Object.entries(step.args)) {
    args[name] =
      source.kind === 'input'
        ? state.inputs[source.name]
        : source.kind === 'result'
          ? state.results[source.step]
          : source.kind === 'value'
            ? source.value
            : undefined;
  }
  const inputsRead = new Set<string>();
  const argsRead = new Set<string>();
  try {
    spec.correlationId({
      runId: state.runId,
      reactorName: state.reactorName,
      stepName: step.name,
      attempt: 1,
      signal: new AbortController().signal,
      inputs: tracked({ ...state.inputs }, inputsRead),
      args: tracked(args, argsRead),
      results: { ...state.results },
    });
  } catch {
    // What it read before it threw still counts.
  }
  return [...inputsRead].some((n) => redactedInputs.has(n)) || [...argsRead].some((n) => redactedArgs.has(n));
}
