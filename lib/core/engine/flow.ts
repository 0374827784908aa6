/**
 * Flow control of a reactor's starts (its `concurrency`, `throttle`, `debounce` and `batch`), with
 * the engine's {@link FlowStore}. A start goes through up to three gates, in this order:
 *
 * 1. gather (debounce or batch): the start joins its key's open gather; the gather's run (one run id
 *    for every start that joins it) is stored `pending` and woken when the gather is due;
 * 2. throttle: the run reserves a start in its key's earliest window with room; a later window
 *    stores it `pending` (`delayed`) and wakes it then;
 * 3. concurrency: the run takes one of its key's `limit` slots, or waits in the key's queue, stored
 *    `pending` (`queued`) with no job at all; the run that frees the slot admits it (its job is
 *    enqueued then), so a key's backlog never sits in the worker queue in front of other keys.
 *
 * A start passes the gates it can at once (in the caller) and the rest in a worker, where each
 * delivery of a `pending` run picks up at the gate it waits at. A slot is held until the run is
 * terminal and given back then ({@link release}); the flow sweep ({@link sweep}) gives back the
 * slots of runs that ended without a word and re-enqueues admitted runs whose job was lost.
 */
import type { ReactorDefinition } from '../definition/definition';
import { BATCH_INPUT, type FlowKey } from '../definition/flow-spec';
import { ConfigurationError } from '../errors/configuration.error';
import { FlowQueueFullError } from '../errors/flow.error';
import { errorMessage, type FieldErrors } from '../model/failure';
import { isTerminal, type RunState } from '../model/run-state';
import type { FlowKeyView, FlowStore } from '../ports/flow-store.port';
import type { Lease } from '../ports/lock-manager.port';
import type { FlowHandle } from '../results/run-outcome';
import { isWellFormed } from '../validation/arguments';
import { validateReactorInputs } from '../validation/validate';
import type { Dispatch } from './dispatch';
import { ENGINE_DEFAULTS, type EngineParts } from './engine-options';
import type { DefinitionRegistry } from './registry';

/** The longest flow key (its UTF-16 length). */
const MAX_KEY_LENGTH = 512;

/** What a gate decided for a run that is not going on now: stored `pending`, with this handle. */
export interface FlowHeld {
  handle: FlowHandle;
}

/** The concurrency keys of one reactor, as the dashboard and `client.flow` show them. */
export interface FlowQueues {
  reactorName: string;
  limit: number;
  keys: FlowKeyView[];
}

/** Applies a reactor's flow control (see the module comment). */
export class FlowControl {
  /** Fail a run that can never start (its gathered starts are gone, its inputs are invalid). */
  failRun?: (state: RunState, lease: Lease, code: string, message: string, fieldErrors?: FieldErrors) => Promise<void>;

  constructor(
    private readonly parts: EngineParts,
    private readonly registry: DefinitionRegistry,
    private readonly dispatch: Dispatch,
  ) {}

  /** The flow store; refused at registration when a reactor declares flow control without one. */
  get store(): FlowStore | undefined {
    return this.parts.flow;
  }

  private need(def: ReactorDefinition): FlowStore {
    const store = this.parts.flow;
    if (!store) {
      throw new ConfigurationError(
        `Reactor '${def.name}' declares concurrency, throttle, debounce or batch, but the engine has no flow store (its \`flow\` option).`,
        'flow',
      );
    }
    return store;
  }

  /** The flow key of `inputs` for `what`: the key function's answer, or '' (one key) without one. */
  keyOf(def: ReactorDefinition, what: 'concurrency' | 'throttle' | 'debounce' | 'batch', inputs: unknown): string {
    const fn: FlowKey | undefined = def.flow?.[what]?.key;
    if (!fn) return '';
    let key: unknown;
    try {
      key = fn((inputs ?? {}) as Record<string, unknown>);
    } catch (error) {
      throw new ConfigurationError(
        `Reactor '${def.name}': ${what}.key threw: ${errorMessage(error)}. Make it return a string for every valid input.`,
        what,
      );
    }
    if (typeof key !== 'string' || key.length > MAX_KEY_LENGTH || !isWellFormed(key)) {
      throw new ConfigurationError(
        `Reactor '${def.name}': ${what}.key must return a well-formed string of at most ${MAX_KEY_LENGTH} characters (got ${typeof key === 'string' ? `${key.length} characters` : typeof key}).`,
        what,
      );
    }
    return key;
  }

  /** Whether starts of `def` are gathered (debounce or batch): the gather names their run. */
  gathers(def: ReactorDefinition): boolean {
    return def.flow?.debounce !== undefined || def.flow?.batch !== undefined;
  }

  /**
   * A start of a debounced or batched reactor joins its key's gather. Returns the gather's run id,
   * whether this start opened it, and the run's state to store when it is new (`pending`).
   */
  async gather(
    def: ReactorDefinition,
    newRunId: string,
    inputs: Record<string, unknown>,
    raw: unknown,
  ): Promise<{ runId: string; full: boolean; dueInMs: number; handle: FlowHandle }> {
    const store = this.need(def);
    const debounce = def.flow!.debounce;
    const batch = def.flow!.batch;
    const what = debounce ? 'debounce' : 'batch';
    const key = this.keyOf(def, what, debounce ? inputs : raw);
    const item = JSON.stringify(debounce ? inputs : (raw ?? null));
    const maxWaitMs = debounce ? debounce.maxWaitMs : batch!.maxWaitMs;
    const reply = await store.gather(def.name, key, newRunId, item, {
      mode: debounce ? 'last' : 'all',
      ...(debounce ? { periodMs: debounce.periodMs } : { maxSize: batch!.maxSize }),
      maxWaitMs,
      // The items outlive the gather's due time by the record retention: its run reads them then.
      ttlMs: maxWaitMs + this.parts.interruptRetentionMs,
    });
    return {
      runId: reply.runId,
      full: reply.full,
      dueInMs: Math.max(0, reply.dueAt - reply.now),
      handle: { state: debounce ? 'debounced' : 'batched', key, startAt: reply.dueAt },
    };
  }

  /**
   * The gates after the gather, for a run about to start (its inputs final): its throttle, then its
   * concurrency. Going on: `undefined` (the run holds its slot, `state.flow.slot`). Held back: the
   * run is made `pending` with what it waits for, to store; the handle says what. `accepted`: the
   * start was accepted before (gathered, delayed, queued), so a full queue does not refuse it.
   */
  async enter(def: ReactorDefinition, state: RunState, accepted = false): Promise<FlowHeld | undefined> {
    const flow = def.flow;
    if (!flow) return undefined;
    const store = this.need(def);
    const waited = state.flow?.wait;
    if (flow.throttle && waited !== 'delayed' && waited !== 'queued') {
      const key = this.keyOf(def, 'throttle', state.inputs);
      const { startAt, now } = await store.reserveStart(def.name, key, flow.throttle.limit, flow.throttle.periodMs);
      if (startAt > now) {
        state.status = 'pending';
        state.flow = { wait: 'delayed', key, at: startAt };
        return { handle: { state: 'delayed', key, startAt } };
      }
    }
    if (flow.concurrency) {
      const slot = state.flow?.slot ?? this.keyOf(def, 'concurrency', state.inputs);
      // A start accepted once (a gathered or delayed run, a queued one) is never refused later.
      const maxQueued = accepted ? Number.MAX_SAFE_INTEGER : flow.concurrency.maxQueued;
      const entry = await store.enter(def.name, slot, state.runId, flow.concurrency.limit, maxQueued);
      if (entry.state === 'full') throw new FlowQueueFullError(def.name, slot, entry.queued);
      if (entry.state === 'queued') {
        state.status = 'pending';
        state.flow = { slot, wait: 'queued' };
        return { handle: { state: 'queued', key: slot, position: entry.position } };
      }
      state.flow = { slot };
    } else {
      delete state.flow;
    }
    return undefined;
  }

  /**
   * A worker delivered `pending` run `state` (its lease held): carry it through the gate it waits at.
   * Resolves `true` when the run may execute now (status `running`); otherwise the run is stored as
   * it now waits (or failed), its lease is released, and a wake-up is enqueued when one is due.
   */
  async advance(def: ReactorDefinition, state: RunState, lease: Lease): Promise<boolean> {
    const { storage, clock, leaseTtlMs } = this.parts;
    const store = this.need(def);
    const flow = state.flow!;
    const wait = flow.wait;
    const release = () => this.parts.locks.release(lease).catch(() => undefined);
    const save = () => storage.save(state, { lease, leaseTtlMs, releaseLease: true });
    if (wait === 'debounced' || wait === 'batched') {
      const taken = await store.take(def.name, flow.key ?? '', state.runId);
      if (!taken) {
        await this.failRun?.(
          state,
          lease,
          'FLOW_GATHER_LOST',
          `Reactor '${def.name}': the starts gathered into run '${state.runId}' (key '${flow.key ?? ''}') are no longer stored (kept for maxWaitMs plus the record retention).`,
        );
        return false;
      }
      if (!taken.due) {
        await release();
        await this.dispatch.resume(state.runId, def.name, Math.max(1, taken.dueAt - taken.now));
        return false;
      }
      const items = taken.items.map((item) => JSON.parse(item) as unknown);
      const raw = wait === 'debounced' ? items[items.length - 1] : { [BATCH_INPUT]: items };
      const { inputs, errors } = await validateReactorInputs(def.inputs, raw, { fresh: true });
      state.inputs = wait === 'debounced' || Object.keys(errors).length > 0 ? (raw as Record<string, unknown>) : inputs;
      delete state.flow;
      if (Object.keys(errors).length > 0) {
        await this.failRun?.(
          state,
          lease,
          'INPUT_VALIDATION',
          `Reactor '${def.name}': input validation failed`,
          errors,
        );
        return false;
      }
      state.inputs = inputs;
    } else if (wait === 'delayed') {
      const dueInMs = (flow.at ?? 0) - clock.now();
      if (dueInMs > 0) {
        await release();
        await this.dispatch.resume(state.runId, def.name, dueInMs);
        return false;
      }
    }
    const held = await this.enter(def, state, true);
    if (held) {
      // Still waiting (for a slot, or a later window): stored so, unless it was stored so already.
      if (wait === 'queued' && state.flow?.wait === 'queued') await release();
      else {
        state.updatedAt = clock.now();
        await save();
      }
      if (state.flow?.wait === 'delayed') {
        await this.dispatch.resume(state.runId, def.name, Math.max(1, (state.flow.at ?? 0) - clock.now()));
      }
      return false;
    }
    state.status = 'running';
    return true;
  }

  /**
   * Run `state` ended (or will never run): give its concurrency slot back and enqueue the runs that
   * take it. Never throws: a slot not given back here is given back by the flow sweep.
   */
  async release(state: RunState): Promise<void> {
    const slot = state.flow?.slot;
    const wait = state.flow?.wait;
    const store = this.parts.flow;
    if ((slot === undefined && wait === undefined) || !store || !this.registry.has(state.reactorName)) return;
    const def = this.registry.forRun(state) ?? this.registry.get(state.reactorName);
    try {
      if ((wait === 'debounced' || wait === 'batched') && isTerminal(state.status)) {
        // A gathered run that ended before it started (cancelled): its gather is closed when it is
        // due, so that later starts open another instead of joining a run that will never start.
        const taken = await store.take(def.name, state.flow?.key ?? '', state.runId);
        if (taken && !taken.due)
          await this.dispatch.resume(state.runId, def.name, Math.max(1, taken.dueAt - taken.now));
        return;
      }
      const limit = def.flow?.concurrency?.limit;
      if (slot === undefined || limit === undefined) return;
      await this.admit(def, await store.leave(def.name, slot, state.runId, limit));
    } catch (error) {
      this.parts.logger.warn(
        `Run '${state.runId}': its concurrency slot (key '${slot}') could not be given back now: ${errorMessage(error)}. The flow sweep gives it back.`,
      );
    }
  }

  /** Enqueue the runs a freed slot admitted. */
  private async admit(def: ReactorDefinition, runIds: readonly string[]): Promise<void> {
    for (const runId of runIds) await this.dispatch.resume(runId, def.name);
  }

  /**
   * The flow sweep: for every concurrency key of every registered reactor, give back the slots of
   * runs that ended (or were never stored) more than `graceMs` after they were admitted, enqueue
   * admitted runs still waiting for their job, and drop idle keys from the index. Returns how many
   * jobs it enqueued.
   */
  async sweep(options: { limit?: number; graceMs?: number } = {}): Promise<number> {
    const store = this.parts.flow;
    if (!store || !this.dispatch.available) return 0;
    const graceMs = options.graceMs ?? this.parts.leaseTtlMs;
    const limit = options.limit ?? ENGINE_DEFAULTS.sweepLimit;
    let enqueued = 0;
    // The reactors that ever had runs in a concurrency key: read once, when a reactor without
    // concurrency is met (only those listed can have keys left by a deploy that removed it).
    let everEntered: Set<string> | undefined;
    for (const def of this.registry.all()) {
      const concurrency = def.flow?.concurrency;
      if (!concurrency) {
        everEntered ??= new Set(await store.reactors());
        if (everEntered.has(def.name)) enqueued += await this.drain(def, limit);
        continue;
      }
      for (const key of await store.keys(def.name, limit)) {
        try {
          const now = await store.now();
          const view = await store.inspect(def.name, key, 0);
          for (const { runId, since } of view.live) {
            if (now - since < graceMs) continue;
            const state = await this.parts.storage.load(runId).catch(() => undefined);
            if (!state || isTerminal(state.status)) {
              const admitted = await store.leave(def.name, key, runId, concurrency.limit);
              await this.admit(def, admitted);
              enqueued += admitted.length;
            } else if (state.status === 'pending' && state.flow?.wait === 'queued') {
              // Admitted, but the job that starts it was lost (its admitter died before enqueueing it).
              if (await this.dispatch.recover(runId, def.name)) enqueued++;
            }
          }
          if (view.live.length === 0 && view.queued === 0) await store.prune(def.name, key, graceMs);
        } catch (error) {
          this.parts.logger.warn(`Flow sweep skipped key '${key}' of reactor '${def.name}': ${errorMessage(error)}`);
        }
      }
    }
    return enqueued;
  }

  /**
   * A reactor that no longer declares `concurrency` (a deploy removed it) while runs of it still
   * hold or wait for slots: its waiting runs are started (their delivery finds no gate), and its
   * keys emptied, `limit` runs per key and sweep. Called only for a reactor listed by
   * {@link FlowStore.reactors} (every reactor whose runs ever entered a key is). Returns how many
   * jobs it enqueued.
   */
  private async drain(def: ReactorDefinition, limit: number): Promise<number> {
    const store = this.parts.flow!;
    let enqueued = 0;
    for (const key of await store.keys(def.name, limit)) {
      try {
        const view = await store.inspect(def.name, key, limit);
        if (view.live.length === 0 && view.queued === 0) {
          await store.prune(def.name, key, 0);
          continue;
        }
        for (const runId of [...view.live.map((l) => l.runId), ...view.next]) {
          // Each leave may admit the next waiting run (a limit of one): it is started too.
          const admitted = await store.leave(def.name, key, runId, 1);
          const started = view.next.includes(runId) ? [runId, ...admitted] : admitted;
          await this.admit(def, started);
          enqueued += started.length;
        }
      } catch (error) {
        this.parts.logger.warn(
          `Flow sweep could not drain key '${key}' of reactor '${def.name}': ${errorMessage(error)}`,
        );
      }
    }
    return enqueued;
  }

  /** The concurrency keys of a reactor and what each holds (at most `limit` keys, `peek` queued ids each). */
  async queues(def: ReactorDefinition, limit = 100, peek = 10): Promise<FlowQueues | undefined> {
    const concurrency = def.flow?.concurrency;
    const store = this.parts.flow;
    if (!concurrency || !store) return undefined;
    const keys: FlowKeyView[] = [];
    for (const key of await store.keys(def.name, limit)) keys.push(await store.inspect(def.name, key, peek));
    return { reactorName: def.name, limit: concurrency.limit, keys };
  }
}
