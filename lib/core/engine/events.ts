/**
 * Events: `emit(name, payload, { id })` starts every reactor declared `on: { event: name }` and
 * answers every interrupt declared `event: name` that waits for it.
 *
 * - A start is `start(reactor, input(payload), { idempotencyKey })`, the key derived from the
 *   event's id (`event:<name>:<id>`, bound per reactor): an id emitted twice, from any number of
 *   processes at once, starts one run per reactor (the second emit replays it, and reports nothing).
 * - An interrupt with a `correlationId` is answered by `continueByCorrelationId` with the id its
 *   `match(payload)` returns: a run that has not reached it yet gets it from the id's mailbox.
 * - An interrupt without one is answered by `continue` for each run its `match(payload, run)`
 *   accepts among the runs the event's index lists as waiting there (see the InterruptStore's
 *   `eventWatchers`): one read of the index, one load per listed run.
 *
 * An answer is a claim, first wins (an id emitted twice answers nothing twice), validated like any
 * payload. What one target refuses (an invalid payload, a `match` or `input` that throws, an
 * idempotency conflict) is reported in `rejected` and does not stop the others.
 */
import type { ReactorDefinition, StepDefinition } from '../definition/definition';
import type { EventWaitingRun } from '../definition/event-spec';
import type { InterruptSpec } from '../definition/interrupt-spec';
import {
  AlreadyResumedError,
  InterruptTimedOutError,
  NotPausedError,
  UnknownCorrelationIdError,
} from '../errors/interrupt.error';
import { ReactorError } from '../errors/reactor.error';
import { RunNotFoundError } from '../errors/run-state.error';
import { isTerminal, type RunState } from '../model/run-state';
import type { EngineParts } from './engine-options';
import type { DefinitionRegistry } from './registry';
import type { ContinueResult, Resumes } from './resumes';
import type { RunStarter } from './run-starter';

/** Options of `emit`. */
export interface EmitOptions {
  /**
   * The event's id: emitting the same id again (a retry, a second producer) starts no run twice
   * (per reactor, within the engine's `idempotencyWindowMs`) and answers no interrupt twice.
   * At most 256 characters. @default none: every emit is a new event
   */
  id?: string;
}

/** What `emit` did. */
export interface EmitResult {
  /** Runs started (new ones only: a run an earlier emit of the same id started is not listed). */
  started: Array<{ reactor: string; runId: string }>;
  /** Interrupts answered, by top-level run and interrupt path (applied, or claimed for the run to apply). */
  answered: Array<{ runId: string; step: string }>;
  /** Answers kept in a correlation id's mailbox for a run that has not reached the interrupt yet. */
  mailed: Array<{ reactor: string; step: string; correlationId: string; expiresAt: number }>;
  /**
   * Targets that refused the event: an invalid payload (`PAYLOAD_INVALID`, counted as an attempt
   * of a waiting run), an id emitted before with another payload (`IDEMPOTENCY_CONFLICT`), a
   * `match` or `input` that threw (its error).
   */
  rejected: Array<{ reactor: string; runId?: string; step?: string; error: Error }>;
}

/** Runs loaded at once while an event's index is read. */
const LOAD_CONCURRENCY = 16;

/** An interrupt answered by an event, found by its path in a top-level reactor. */
interface EventInterrupt {
  path: string;
  segments: string[];
  spec: InterruptSpec;
}

/** `emit`: the starts and answers of one event. */
export class Events {
  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly starter: RunStarter,
    private readonly resumes: Resumes,
  ) {}

  async emit(name: string, payload: unknown, options: EmitOptions = {}): Promise<EmitResult> {
    const result: EmitResult = { started: [], answered: [], mailed: [], rejected: [] };
    const current = this.registry.names().map((reactor) => this.registry.get(reactor));
    await Promise.all([
      ...current
        .filter((def) => def.trigger?.event === name)
        .map((def) => this.start(def, name, payload, options, result)),
      ...current.flatMap((def) =>
        eventInterrupts(def, name, this.registry)
          .filter((target) => target.spec.correlationId)
          .map((target) => this.answerByCorrelation(def, target, payload, result)),
      ),
      this.answerWaiting(name, payload, result),
    ]);
    return result;
  }

  /** Start a run of `def` for the event. */
  private async start(
    def: ReactorDefinition,
    name: string,
    payload: unknown,
    options: EmitOptions,
    result: EmitResult,
  ): Promise<void> {
    const trigger = def.trigger!;
    let input: unknown;
    try {
      if (trigger.match && trigger.match(payload) !== true) return;
      input = trigger.input ? trigger.input(payload) : payload;
    } catch (error) {
      result.rejected.push({ reactor: def.name, error: asError(error) });
      return;
    }
    const idempotencyKey = options.id === undefined ? undefined : `event:${name}:${options.id}`;
    try {
      const outcome = await this.starter.start(def.name, input, idempotencyKey === undefined ? {} : { idempotencyKey });
      if (!outcome.replayed) result.started.push({ reactor: def.name, runId: outcome.runId });
    } catch (error) {
      if (!(error instanceof ReactorError) || error.code === 'STORAGE_UNAVAILABLE') throw error;
      result.rejected.push({ reactor: def.name, error });
    }
  }

  /** Answer an interrupt with a correlation id: the one `match(payload)` names (mailed if no run holds it yet). */
  private async answerByCorrelation(
    def: ReactorDefinition,
    target: EventInterrupt,
    payload: unknown,
    result: EmitResult,
  ): Promise<void> {
    let id: unknown;
    try {
      id = target.spec.match!(payload);
    } catch (error) {
      result.rejected.push({ reactor: def.name, step: target.path, error: asError(error) });
      return;
    }
    if (id === false || id === null || id === undefined) return;
    if (typeof id !== 'string' || id.length === 0 || id.length > 512) {
      result.rejected.push({
        reactor: def.name,
        step: target.path,
        error: new ReactorError(
          'INPUT_VALIDATION',
          `Reactor '${def.name}' interrupt '${target.path}': match must return the correlation id the event is for (a non-empty string of at most 512 characters) or false (got ${typeof id === 'string' ? `${id.length} characters` : typeof id}).`,
        ),
      });
      return;
    }
    await this.answer(def.name, undefined, target.path, result, () =>
      this.resumes.continueByCorrelationId(def.name, target.path, id, payload, { execute: 'background' }),
    );
  }

  /** Answer the runs the event's index lists, for each one `match(payload, run)` accepts. */
  private async answerWaiting(name: string, payload: unknown, result: EmitResult): Promise<void> {
    const store = this.parts.interrupts;
    if (!store?.eventWatchers) return;
    // Only an interrupt registered here can be answered here: no definition, no read of the index.
    const declared = this.registry
      .all()
      .some((def) => eventInterrupts(def, name, this.registry).some((t) => !t.spec.correlationId));
    if (!declared) return;
    const byRun = new Map<string, string[]>();
    for (const { runId, path } of await store.eventWatchers(name)) {
      const paths = byRun.get(runId) ?? [];
      paths.push(path);
      byRun.set(runId, paths);
    }
    const runs = [...byRun];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < runs.length) {
        const [runId, paths] = runs[next++];
        await this.answerRun(name, runId, paths, payload, result);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, runs.length) }, worker));
  }

  /** Answer the interrupts of one listed run that wait for the event and accept it. */
  private async answerRun(
    name: string,
    runId: string,
    paths: readonly string[],
    payload: unknown,
    result: EmitResult,
  ): Promise<void> {
    const store = this.parts.interrupts!;
    const unlist = (path: string) => store.unwatchEvent?.(name, runId, path);
    const state = await this.parts.storage.load(runId);
    if (!state || isTerminal(state.status)) {
      // Finished without settling the interrupt (cancelled, failed, expired): its entry goes now.
      await Promise.all(paths.map(unlist));
      return;
    }
    const def = this.registry.forRun(state);
    if (!def) return;
    for (const path of paths) {
      const segments = path.split('.');
      const target = findInterrupt(def, segments, this.registry);
      const level = levelOf(state, segments);
      const stepName = segments[segments.length - 1];
      if (!target || target.spec.event !== name || target.spec.correlationId) {
        await unlist(path);
        continue;
      }
      if (level?.completed.includes(stepName)) {
        await unlist(path);
        continue;
      }
      if (!level?.interrupts?.[stepName]) continue;
      const run: EventWaitingRun = {
        runId,
        reactor: state.reactorName,
        step: path,
        inputs: { ...level.inputs },
        results: finishedResults(level),
      };
      let matched: unknown = true;
      try {
        if (target.spec.match) matched = target.spec.match(payload, run);
      } catch (error) {
        result.rejected.push({ reactor: state.reactorName, runId, step: path, error: asError(error) });
        continue;
      }
      if (matched !== true && matched !== false) {
        result.rejected.push({
          reactor: state.reactorName,
          runId,
          step: path,
          error: new ReactorError(
            'INPUT_VALIDATION',
            `Reactor '${state.reactorName}' interrupt '${path}': match must return true or false for a run (got ${typeof matched}).`,
          ),
        });
        continue;
      }
      if (!matched) continue;
      await this.answer(state.reactorName, runId, path, result, () =>
        this.resumes.continue(runId, path, payload, { execute: 'background' }),
      );
    }
  }

  /** Resume, reporting what it did; an interrupt answered before (first wins) or no longer waiting is left alone. */
  private async answer(
    reactor: string,
    runId: string | undefined,
    path: string,
    result: EmitResult,
    resume: () => Promise<ContinueResult>,
  ): Promise<void> {
    try {
      const done = await resume();
      if (done.runId !== undefined) result.answered.push({ runId: done.runId, step: path });
      else if (done.accepted === 'queued' && done.correlationId !== undefined) {
        result.mailed.push({ reactor, step: path, correlationId: done.correlationId, expiresAt: done.expiresAt });
      }
    } catch (error) {
      if (
        error instanceof AlreadyResumedError ||
        error instanceof NotPausedError ||
        error instanceof InterruptTimedOutError ||
        error instanceof RunNotFoundError ||
        error instanceof UnknownCorrelationIdError
      ) {
        return;
      }
      if (!(error instanceof ReactorError) || error.code === 'STORAGE_UNAVAILABLE') throw error;
      result.rejected.push({ reactor, ...(runId !== undefined ? { runId } : {}), step: path, error });
    }
  }
}

/** The interrupts of `def` (its composed children's included, by path) answered by event `name`. */
function eventInterrupts(
  def: ReactorDefinition,
  name: string,
  registry: DefinitionRegistry,
  prefix: string[] = [],
  seen = new Set<string>(),
): EventInterrupt[] {
  if (seen.has(def.name)) return [];
  seen.add(def.name);
  const out: EventInterrupt[] = [];
  for (const step of def.steps) {
    const segments = [...prefix, step.name];
    const spec = interruptSpecOf(step);
    if (spec?.event === name) out.push({ path: segments.join('.'), segments, spec });
    if (step.handler.kind === 'compose' && registry.has(step.handler.reactorName)) {
      out.push(...eventInterrupts(registry.get(step.handler.reactorName), name, registry, segments, seen));
    }
  }
  seen.delete(def.name);
  return out;
}

/** The interrupt at `segments` of `root` (through composed children), if there is one. */
function findInterrupt(
  root: ReactorDefinition,
  segments: readonly string[],
  registry: DefinitionRegistry,
): EventInterrupt | undefined {
  let def = root;
  for (let i = 0; i < segments.length; i++) {
    const step = def.stepsByName.get(segments[i]);
    if (!step) return undefined;
    if (i === segments.length - 1) {
      const spec = interruptSpecOf(step);
      return spec ? { path: segments.join('.'), segments: [...segments], spec } : undefined;
    }
    if (step.handler.kind !== 'compose' || !registry.has(step.handler.reactorName)) return undefined;
    def = registry.get(step.handler.reactorName);
  }
  return undefined;
}

function interruptSpecOf(step: StepDefinition): InterruptSpec | undefined {
  return step.handler.kind === 'interrupt' ? step.handler.interrupt : undefined;
}

/** The state (the run or a composed child) that holds the interrupt at `segments`, if it exists yet. */
function levelOf(state: RunState, segments: readonly string[]): RunState | undefined {
  let level: RunState | undefined = state;
  for (const segment of segments.slice(0, -1)) level = level?.children[segment];
  return level;
}

function finishedResults(state: RunState): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of state.completed) out[name] = state.results[name];
  return out;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
