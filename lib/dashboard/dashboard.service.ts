import { performance } from 'node:perf_hooks';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  ConfigurationError,
  REDACTED,
  ReactorEngine,
  RunNotFoundError,
  type ElementRecord,
  type FlowKeyView,
  type ReactorDefinition,
  type InterruptRecord,
  type RunFailure,
  type RunState,
  type RunStatus,
  type RunSummary,
  type RunView,
} from '../core';
import { REACTOR_OPTIONS, REACTOR_RUNTIME, type ReactorRuntime, type ResolvedReactorModuleOptions } from '../config';
import { derivedRedaction } from '../core/engine/run-view';
import { ReactorClient } from '../nest';
import { describeReactor, stepStates, type DashboardReactor, type DashboardStepState } from './dashboard-dag';
import { DASHBOARD_OPTIONS, type ResolvedDashboardOptions } from './dashboard.options';

/** Every run status, in the order the dashboard lists them. */
export const RUN_STATUSES: readonly RunStatus[] = [
  'pending',
  'running',
  'paused',
  'rolling_back',
  'completed',
  'failed',
  'halted',
  'cancelled',
];

/** One row of the runs table. Nothing of the run's inputs or results. */
export interface DashboardRunRow extends RunSummary {
  updatedAt?: number;
  finishedAt?: number;
  /** Failed runs: the failing step and the failure's message (it names reactor and step). */
  failedStep?: string;
  failureMessage?: string;
  retriedFrom?: string;
}

/** A page of the runs table; pass `cursor` for the next page. */
export interface DashboardRunList {
  runs: DashboardRunRow[];
  cursor?: string;
}

/** The runs table's filters. */
export interface DashboardRunQuery {
  /** A reactor name; absent: every registered reactor. */
  reactor?: string;
  status?: RunStatus;
  /** Created at or after (ms since the epoch). */
  since?: number;
  /** Created at or before (ms since the epoch). */
  until?: number;
  cursor?: string;
  /** @default 50 */
  limit?: number;
  /** Search (issue 25): only runs tagged `key=value`. */
  tag?: string;
  /** Search: only this run. */
  runId?: string;
  /** Search: only the run this correlation id is bound to. */
  correlationId?: string;
}

/** Counts of runs by status, over at most `countLimit` newest runs of each reactor. */
export interface DashboardCounts {
  counts: Record<RunStatus, number>;
  total: number;
  /** Some reactor had more runs than `countLimit` in the range: the counts are of its newest runs. */
  capped: boolean;
  /** When these counts were read (ms since the epoch): they are shared and reused for a while. */
  computedAt: number;
  /** In how many ms newer counts can be read for the same filter: ask again no sooner (the page waits this long). */
  refreshAfterMs: number;
}

/** Counts are reused for this many times the time one reading took (at least `countsCacheMs`). */
const COUNTS_COST_FACTOR = 20;
/** Counts are never reused for longer than this. */
const COUNTS_MAX_AGE_MS = 60_000;
/** Filters whose counts are kept at once. */
const COUNTS_CACHE_ENTRIES = 64;

/** Counts of one filter: being read (`promise` only), or read at `computedAt` and reusable until `expiresAt`. */
interface CountsEntry {
  promise: Promise<Omit<DashboardCounts, 'refreshAfterMs'>>;
  expiresAt?: number;
}

/** An interrupt a paused run waits at, with what its payload must be. */
export interface DashboardPendingInterrupt extends InterruptRecord {
  /** The step's name at its own level (the last part of `path`). */
  step: string;
  payload?: DashboardStepState['payload'];
}

/** What can be done to the run now. */
export interface DashboardActions {
  retry: boolean;
  undo: boolean;
  cancel: boolean;
  /** Interrupt paths that can be answered. */
  continue: string[];
}

/** Progress of a map step, and where its elements are. */
export type DashboardMap = RunView['maps'][string] & { mode: 'inline' | 'fanOut' };

/**
 * A run in full: the client's view (inputs redacted) with the DAG of its reactor (each step's kind,
 * dependencies and status), the steps at work, its undo stack (step names), the interrupts it
 * waits at, composed children (in full, recursively) and what can be done to it.
 */
export interface DashboardRun extends Omit<RunView, 'children' | 'outcome' | 'maps'> {
  steps: DashboardStepState[];
  /** Steps at work or waiting (running, paused). */
  currentSteps: string[];
  /** Completed steps a rollback would undo, oldest first (names only: their arguments are never shown). */
  undoStack: string[];
  /** A rollback in progress: where it ends, and failing steps still to compensate. */
  rollback?: { target: 'failed' | 'cancelled'; compensate: string[] };
  maps: Record<string, DashboardMap>;
  pendingInterrupts: DashboardPendingInterrupt[];
  children: Record<string, DashboardRun>;
  actions: DashboardActions;
}

/** One element of a map, as the drill-down shows it. */
export interface DashboardMapElement {
  index: number;
  status: ElementRecord['status'];
  failure?: RunFailure;
  reason?: string;
}

/** A window of a map's elements. */
export interface DashboardMapElements {
  total: number;
  elements: DashboardMapElement[];
  /** Pass as `from` for the next window; absent at the end. */
  next?: number;
}

const ELEMENT_WINDOW = 500;

/**
 * The concurrency queues of a reactor (`api/flow/:reactor`): the engine's `FlowQueues`, each key
 * shown as `[REDACTED]` when its key function reads a redacted input. `limit` is absent, and
 * `keys` empty, for a reactor that declares no `concurrency: { key?, limit }`.
 */
export interface DashboardFlowQueues {
  reactorName: string;
  /** Live runs allowed per key; absent when the reactor declares no concurrency. */
  limit?: number;
  keys: FlowKeyView[];
}

/**
 * The dashboard's reads and actions. Reads go through the `ReactorClient`'s views (inputs and step
 * arguments redacted); the DAG comes from the registered definitions. From the stored record it
 * takes only what the view leaves out and is safe to show: undo-stack step names, map ids, a
 * rollback's targets.
 */
@Injectable()
export class DashboardService implements OnModuleInit {
  private engine!: ReactorEngine;

  constructor(
    private readonly client: ReactorClient,
    @Inject(REACTOR_RUNTIME) private readonly runtime: ReactorRuntime,
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    // NOTE: the engine is not exported by ReactorModule (apps use the client); the dashboard reads
    // only the registered definitions from it.
    this.engine = this.moduleRef.get(ReactorEngine, { strict: false });
  }

  /** Every registered reactor with its DAG. */
  reactors(): DashboardReactor[] {
    return this.engine
      .reactorNames()
      .sort()
      .map((name) => describeReactor(this.engine.definition(name)));
  }

  /**
   * The page's settings (nothing secret). `liveEvents`: the module logs every step's events, so a
   * run's page follows it by its event stream (`api/runs/:runId/events`) and polls only as a
   * fallback; without them the stream still tells it the run paused or ended.
   */
  settings(): { pollIntervalMs: number; statuses: readonly RunStatus[]; liveEvents: boolean } {
    return { pollIntervalMs: this.options.pollIntervalMs, statuses: RUN_STATUSES, liveEvents: this.liveEvents() };
  }

  private liveEvents(): boolean {
    try {
      return this.moduleRef.get<ResolvedReactorModuleOptions>(REACTOR_OPTIONS, { strict: false }).liveEvents === true;
    } catch {
      return false;
    }
  }

  /**
   * A page of runs, newest first: of one reactor, or of every reactor merged (each one's index read
   * from the same position, so the merged page is in the same order and the cursor continues it).
   */
  async list(query: DashboardRunQuery): Promise<DashboardRunList> {
    const limit = query.limit ?? 50;
    const names = query.reactor !== undefined ? [this.knownReactor(query.reactor)] : this.engine.reactorNames();
    // `until` is a starting position: the indexes are read from just after it, newest first.
    const cursor = query.cursor ?? (query.until !== undefined ? `${query.until + 1}:` : undefined);
    const pages = await Promise.all(
      names.map((reactor) =>
        this.client
          .list({ reactor, status: query.status, since: query.since, cursor, limit, ...search(query) })
          .then((page) => ({ ...page, reactor })),
      ),
    );
    const merged = pages.flatMap((p) => p.runs).sort(newestFirst);
    // A reactor with more runs than it returned bounds the page: nothing older than its last
    // position may be shown before it is read.
    let bound: Position | undefined;
    for (const page of pages) {
      if (page.cursor === undefined) continue;
      const at = positionOf(page.cursor);
      if (!bound || newestFirst(at, bound) < 0) bound = at;
    }
    let runs = bound ? merged.filter((r) => newestFirst(r, bound) <= 0) : merged;
    let next: Position | undefined = bound;
    if (runs.length > limit) {
      runs = runs.slice(0, limit);
      next = runs[runs.length - 1];
    } else if (bound && runs.length > 0 && newestFirst(runs[runs.length - 1], bound) === 0) {
      next = bound;
    }
    const rows = await Promise.all(runs.map((r) => this.row(r)));
    return { runs: rows, ...(next ? { cursor: `${next.createdAt}:${next.runId}` } : {}) };
  }

  /**
   * Counts by status over the newest runs in the range (at most `countLimit` per reactor). One
   * reading per filter at a time: concurrent requests share it, and its result is reused for
   * `countsCacheMs`, or 20 times as long as it took to read when that is longer (at most a minute),
   * so polling pages cost the app a bounded share of its event loop however many are open.
   */
  async counts(query: Pick<DashboardRunQuery, 'reactor' | 'since' | 'until'>): Promise<DashboardCounts> {
    const names = query.reactor !== undefined ? [this.knownReactor(query.reactor)] : this.engine.reactorNames();
    const key = JSON.stringify([query.reactor ?? null, query.since ?? null, query.until ?? null]);
    let entry = this.countsCache.get(key);
    if (!entry || (entry.expiresAt !== undefined && entry.expiresAt <= Date.now())) {
      entry = this.readCounts(key, names, query);
    }
    const read = await entry.promise;
    return { ...read, refreshAfterMs: Math.max(0, (entry.expiresAt ?? Date.now()) - Date.now()) };
  }

  private readonly countsCache = new Map<string, CountsEntry>();

  /** Start reading the counts of filter `key`, shared by every request until it expires. */
  private readCounts(key: string, names: string[], query: Pick<DashboardRunQuery, 'since' | 'until'>): CountsEntry {
    const started = performance.now();
    const entry: CountsEntry = {
      promise: this.countRuns(names, query).then(
        (counts) => {
          const costMs = performance.now() - started;
          const maxAgeMs = Math.min(
            COUNTS_MAX_AGE_MS,
            Math.max(this.options.countsCacheMs, COUNTS_COST_FACTOR * costMs),
          );
          entry.expiresAt = Date.now() + maxAgeMs;
          return counts;
        },
        (error: unknown) => {
          if (this.countsCache.get(key) === entry) this.countsCache.delete(key);
          throw error;
        },
      ),
    };
    this.countsCache.delete(key);
    this.countsCache.set(key, entry);
    if (this.countsCache.size > COUNTS_CACHE_ENTRIES) {
      const now = Date.now();
      for (const [k, e] of this.countsCache)
        if (e.expiresAt !== undefined && e.expiresAt <= now) this.countsCache.delete(k);
      // Still too many: drop the oldest (a request holding its promise still gets its answer).
      for (const k of this.countsCache.keys()) {
        if (this.countsCache.size <= COUNTS_CACHE_ENTRIES) break;
        this.countsCache.delete(k);
      }
    }
    return entry;
  }

  /** One reading of the counts: the runs index of each reactor, newest first, `countLimit` at most. */
  private async countRuns(
    names: string[],
    query: Pick<DashboardRunQuery, 'since' | 'until'>,
  ): Promise<Omit<DashboardCounts, 'refreshAfterMs'>> {
    const counts = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;
    let total = 0;
    let capped = false;
    await Promise.all(
      names.map(async (reactor) => {
        let cursor = query.until !== undefined ? `${query.until + 1}:` : undefined;
        let seen = 0;
        for (;;) {
          const limit = Math.min(1000, this.options.countLimit - seen);
          const page = await this.client.list({ reactor, since: query.since, cursor, limit });
          for (const run of page.runs) counts[run.status] = (counts[run.status] ?? 0) + 1;
          seen += page.runs.length;
          if (page.cursor === undefined) break;
          if (seen >= this.options.countLimit) {
            capped = true;
            break;
          }
          cursor = page.cursor;
        }
        total += seen;
      }),
    );
    return { counts, total, capped, computedAt: Date.now() };
  }

  /**
   * The concurrency queues of `reactor` (at most `limit` keys, the first `peek` queued run ids of
   * each): what `client.flowQueues` answers, with no key derived from a redacted input. Empty (no
   * `limit`) for a reactor without concurrency. @throws UnknownReactorError
   */
  async flowQueues(reactor: string, options: { limit?: number; peek?: number } = {}): Promise<DashboardFlowQueues> {
    const name = this.knownReactor(reactor);
    const queues = await this.client.flowQueues(name, options);
    if (!queues) return { reactorName: name, keys: [] };
    const def = this.engine.definition(name);
    const keys = await Promise.all(queues.keys.map(async (view) => ({ ...view, key: await this.shownKey(def, view) })));
    return { reactorName: queues.reactorName, limit: queues.limit, keys };
  }

  /**
   * A concurrency key as it may be shown: `[REDACTED]` when the reactor's key function reads a
   * redacted input (the key may quote it, or be made of it), as it did for a run of the key (the
   * first live or queued one; flow control applies to top-level starts, whose redacted inputs are
   * the declared ones). A key with no run to tell by is redacted when the reactor has any redacted
   * input.
   */
  private async shownKey(def: ReactorDefinition, view: FlowKeyView): Promise<string> {
    const fn = def.flow?.concurrency?.key;
    const redacted = new Set(def.inputs.filter((input) => input.redact).map((input) => input.name));
    if (!fn || redacted.size === 0 || view.key === '') return view.key;
    const runId = view.live[0]?.runId ?? view.next[0];
    const state = runId === undefined ? undefined : await this.runtime.storage.load(runId).catch(() => undefined);
    if (!state) return REDACTED;
    for (const name of state.redactedInputs ?? []) redacted.add(name);
    const read = new Set<string>();
    try {
      fn(readsOf(state.inputs, read));
    } catch {
      return REDACTED;
    }
    return [...read].some((name) => redacted.has(name)) ? REDACTED : view.key;
  }

  /** The run in full. @throws RunNotFoundError */
  async run(runId: string): Promise<DashboardRun> {
    const found = await this.engine.inspect(runId);
    if (!found) throw new RunNotFoundError(runId);
    return this.full(found.view, found.state, '');
  }

  /**
   * Elements of map step `step` (a path such as `child.lines` for a map inside compose step
   * `child`), from index `from`: those whose status is in `statuses` (default failed and halted),
   * reading at most a window of 500 records per call.
   */
  async mapElements(
    runId: string,
    step: string,
    from = 0,
    statuses: ReadonlyArray<ElementRecord['status']> = ['failed', 'halted'],
  ): Promise<DashboardMapElements> {
    const found = await this.engine.inspect(runId);
    if (!found) throw new RunNotFoundError(runId);
    const { view, state } = found;
    const path = step.split('.');
    let levelView: RunView | undefined = view;
    let levelState: RunState | undefined = state;
    for (const part of path.slice(0, -1)) {
      levelView = levelView?.children[part];
      levelState = levelState?.children[part];
    }
    const name = path[path.length - 1];
    const record = levelState?.maps?.[name];
    const progress = levelView?.maps[name];
    if (!levelView || !record || !progress)
      throw new ConfigurationError(`Run '${runId}' has no map step '${step}'.`, 'step');
    const total = progress.total;
    const end = Math.min(total, from + ELEMENT_WINDOW);
    let records: Array<ElementRecord | undefined>;
    if (record.mode === 'fanOut') {
      records = from < end ? await this.runtime.maps.records(record.mapId, from, end).catch(() => []) : [];
    } else {
      const inline = (levelView.results[name] as { $mapRecords?: ElementRecord[] } | undefined)?.$mapRecords ?? [];
      records = inline.slice(from, end);
    }
    // An element's failure or halt reason may hold a value derived from a redacted input of the run.
    const redaction = derivedRedaction(state, this.definitionOf);
    const elements: DashboardMapElement[] = [];
    records.forEach((record, i) => {
      if (!record || !statuses.includes(record.status)) return;
      const r = redaction.element(record);
      elements.push({
        index: from + i,
        status: r.status,
        ...(r.status === 'failed' ? { failure: r.failure } : {}),
        ...(r.status === 'halted' ? { reason: r.reason } : {}),
      });
    });
    return { total, elements, ...(end < total ? { next: end } : {}) };
  }

  private readonly definitionOf = (name: string) =>
    this.engine.reactorNames().includes(name) ? this.engine.definition(name) : undefined;

  private knownReactor(name: string): string {
    this.engine.definition(name); // throws UnknownReactorError naming the registered ones
    return name;
  }

  private async row(run: RunSummary): Promise<DashboardRunRow> {
    const state = await this.runtime.storage.load(run.runId).catch(() => undefined);
    if (!state) return run;
    return {
      ...run,
      status: state.status,
      updatedAt: state.updatedAt,
      ...(state.finishedAt !== undefined ? { finishedAt: state.finishedAt } : {}),
      ...(state.failure
        ? {
            failedStep: state.failure.stepName,
            // The message may hold a value derived from a redacted input (a coordination key).
            failureMessage: derivedRedaction(state, this.definitionOf).string(state.failure.message),
          }
        : {}),
      ...(state.retriedFrom !== undefined ? { retriedFrom: state.retriedFrom } : {}),
    };
  }

  private full(view: RunView, state: RunState | undefined, prefix: string): DashboardRun {
    const { children, outcome: _outcome, maps, ...rest } = view;
    const def = this.engine.reactorNames().includes(view.reactorName)
      ? describeReactor(this.engine.definition(view.reactorName))
      : undefined;
    const steps = def ? stepStates(def.steps, view) : [];
    const pendingInterrupts: DashboardPendingInterrupt[] =
      view.status === 'paused'
        ? Object.entries(view.interrupts)
            .filter(([step]) => !view.completed.includes(step))
            .map(([step, record]) => ({
              ...record,
              step,
              ...(def ? { payload: def.steps.find((s) => s.name === step)?.payload } : {}),
            }))
        : [];
    const fullChildren: Record<string, DashboardRun> = {};
    for (const [name, child] of Object.entries(children))
      fullChildren[name] = this.full(child, state?.children[name], `${prefix}${name}.`);
    const allInterrupts = [
      ...pendingInterrupts.map((i) => i.path),
      ...Object.values(fullChildren).flatMap((c) => c.actions.continue),
    ];
    const terminal = ['completed', 'failed', 'halted', 'cancelled'].includes(view.status);
    return {
      ...rest,
      steps,
      currentSteps: steps.filter((s) => s.status === 'running' || s.status === 'paused').map((s) => s.name),
      undoStack: (state?.undoStack ?? []).map((e) => e.step),
      ...(state?.rollback
        ? { rollback: { target: state.rollback.target, compensate: state.rollback.compensate.map((c) => c.step) } }
        : {}),
      maps: Object.fromEntries(
        Object.entries(maps).map(([step, progress]) => [
          step,
          { ...progress, mode: state?.maps?.[step]?.mode ?? 'inline' },
        ]),
      ),
      pendingInterrupts,
      children: fullChildren,
      actions: {
        retry: prefix === '' && view.status === 'failed',
        undo: prefix === '' && terminal && view.status !== 'cancelled' && (state?.undoStack.length ?? 0) > 0,
        cancel: prefix === '' && !terminal && view.status !== 'rolling_back',
        continue: view.status === 'paused' ? allInterrupts : [],
      },
    };
  }
}

interface Position {
  createdAt: number;
  runId: string;
}

/** The search filters of a runs query (issue 25), only those given. */
function search(query: DashboardRunQuery): Pick<DashboardRunQuery, 'tag' | 'runId' | 'correlationId'> {
  return {
    ...(query.tag !== undefined ? { tag: query.tag } : {}),
    ...(query.runId !== undefined ? { runId: query.runId } : {}),
    ...(query.correlationId !== undefined ? { correlationId: query.correlationId } : {}),
  };
}

/** Newest first, ties by run id descending: the order of `client.list`. */
function newestFirst(a: Position, b: Position): number {
  return b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);
}

function positionOf(cursor: string): Position {
  const at = cursor.indexOf(':');
  return { createdAt: Number(cursor.slice(0, at)), runId: cursor.slice(at + 1) };
}

/** `inputs`, noting into `read` the name of each input a function reads from it. */
function readsOf(inputs: Record<string, unknown>, read: Set<string>): Record<string, unknown> {
  const note = (key: string | symbol) => {
    if (typeof key === 'string') read.add(key);
  };
  return new Proxy(inputs, {
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
    ownKeys(target) {
      // Enumerating the inputs (a spread, JSON.stringify) may read every one of them.
      for (const key of Reflect.ownKeys(target)) note(key);
      return Reflect.ownKeys(target);
    },
  });
}
