import { runFailure, type RollbackFailure, type RunFailure } from '../model/failure';
import { waitingInterrupts } from '../model/interrupt';
import type { RunState, TraceEntry } from '../model/run-state';
import { publicResults, publicValue } from './async-unit-result';

export type { RollbackFailure, RollbackFailureReason, RunFailure } from '../model/failure';

interface RunOutcomeBase {
  runId: string;
  reactorName: string;
  /**
   * Step results computed so far (step name to value). An async unit's is its value, or a
   * `Failure` (error: `AsyncUnitFailedError`, with the unit's failure) or `Halt`, as its readers get it.
   */
  results: Record<string, unknown>;
  /** The per-run execution trace. */
  trace: TraceEntry[];
  /** Attempts made per step. */
  attempts: Record<string, number>;
  /**
   * Set when `run`/`start` found the run already started (the same `idempotencyKey` or `runId`)
   * and returned it instead of starting another.
   */
  replayed?: true;
}

/** The run finished; {@link value} is the returned ref's value, or the map of all results. */
export interface CompletedOutcome<T> extends RunOutcomeBase {
  status: 'completed';
  value: T;
}
/** The run failed and was rolled back; see {@link failure}. */
export interface FailedOutcome extends RunOutcomeBase {
  status: 'failed';
  failure: RunFailure;
}
/** A step halted the run; completed work is kept. */
export interface HaltedOutcome extends RunOutcomeBase {
  status: 'halted';
  stepName: string;
  reason: string;
  details?: unknown;
}
/**
 * A start its reactor's flow control holds back (see docs/flow-control.md): `queued` for a
 * concurrency slot of `key`, `delayed` by its throttle to `startAt`, or gathered with other starts
 * of `key` (`debounced`, `batched`) into the run `runId` names, due at `startAt`.
 */
export interface FlowHandle {
  state: 'queued' | 'delayed' | 'debounced' | 'batched';
  /** The flow key (the empty string when the reactor declares none: one key for all its runs). */
  key: string;
  /** `queued`: the run's place in the key's queue when it was started (1: next). */
  position?: number;
  /** When it may start (`delayed`) or its gather is due (`debounced`, `batched`), in ms. */
  startAt?: number;
}

/** The rest of the run was handed to a worker; poll with `get` or `wait`. */
export interface DispatchedOutcome extends RunOutcomeBase {
  status: 'dispatched';
  /**
   * Set while the run has not started because its reactor's flow control holds it back (queued,
   * delayed, debounced or batched): what it waits for. `runId` is the run it becomes.
   */
  flow?: FlowHandle;
  /**
   * Set while the run sleeps (`r.sleep`): the sleep's path (`wait`, or `child.wait` in compose step
   * `child`) and when it wakes (epoch ms). Set by `client.run`, `get` and `wait`.
   */
  sleeping?: { step: string; wakeAt: number };
}
/** An interrupt a paused run waits at. */
export interface PendingInterrupt {
  /** Its path from the top-level run: `approve`, or `child.approve` inside compose step `child`. */
  path: string;
  correlationId?: string;
  /** When the run reached it. */
  pausedAt: number;
  /** When it times out. */
  timeoutAt?: number;
  /**
   * Its callback token, for an interrupt declared with `token: { expiresInMs }` when the app
   * configures `ReactorCallbackModule` (set by the client: `run`, `get`, `wait`, `continue`).
   */
  callback?: InterruptCallback;
}
/**
 * A signed, single-use token that answers one pause of an interrupt: POST the payload to `url` (or
 * to `<path>/<token>` of `ReactorCallbackModule`), until `expiresAt`. See docs/callback-tokens.md.
 */
export interface InterruptCallback {
  /** The token: a bearer credential for this one answer (keep it out of logs). */
  token: string;
  /** When it stops being accepted (epoch ms): the run reached the interrupt `expiresInMs` before. */
  expiresAt: number;
  /** The URL to POST the payload to, when the module has a `baseUrl`. */
  url?: string;
}
/**
 * The run is paused at one or more interrupts until `client.continue` (or
 * `continueByCorrelationId`) answers; {@link results} holds what ran so far.
 */
export interface PausedOutcome extends RunOutcomeBase {
  status: 'paused';
  /** The path of the first interrupt it waits at. */
  stepName: string;
  /** That interrupt's correlation id, if it has one. */
  correlationId?: string;
  /** That interrupt's timeout. */
  timeoutAt?: number;
  /** Every interrupt the run waits at, its composed children's included. */
  waitingFor: PendingInterrupt[];
}
/** The run was undone or cancelled. */
export interface CancelledOutcome extends RunOutcomeBase {
  status: 'cancelled';
  reason: string;
  rollbackFailures: RollbackFailure[];
}

/** What `ReactorClient.run` and `wait` resolve to. Switch on `status`. */
export type RunOutcome<T = unknown> =
  CompletedOutcome<T> | FailedOutcome | HaltedOutcome | DispatchedOutcome | PausedOutcome | CancelledOutcome;

/** The caller-facing outcome of a run, from its state. */
export function outcomeOf<T = unknown>(state: RunState): RunOutcome<T> {
  // Each outcome is its base object with its own fields assigned to it: on Node 20 a property added
  // after a spread (`{ ...base, status }`) takes V8's slow path (DD-speed22-11).
  const base = <X extends object>(fields: X) =>
    Object.assign(
      {
        runId: state.runId,
        reactorName: state.reactorName,
        results: publicResults(state),
        trace: state.trace,
        attempts: state.attempts,
      },
      fields,
    );
  switch (state.status) {
    case 'completed':
      return base({ status: 'completed' as const, value: publicValue(state, state.value) as T });
    case 'failed':
      return base({ status: 'failed' as const, failure: state.failure ?? brokenFailure(state) });
    case 'halted':
      return base({
        status: 'halted' as const,
        stepName: state.halt?.step ?? '',
        reason: state.halt?.reason ?? '',
        details: state.halt?.details,
      });
    case 'cancelled':
      return base({
        status: 'cancelled' as const,
        reason: state.cancellation?.reason ?? 'cancelled',
        rollbackFailures: state.cancellation?.rollbackFailures ?? [],
      });
    case 'paused': {
      const waitingFor: PendingInterrupt[] = waitingInterrupts(state).map(({ record }) =>
        Object.assign(
          { path: record.path },
          record.correlationId !== undefined ? { correlationId: record.correlationId } : {},
          { pausedAt: record.pausedAt },
          record.timeoutAt !== undefined ? { timeoutAt: record.timeoutAt } : {},
        ),
      );
      const first = waitingFor[0];
      return base(
        Object.assign(
          { status: 'paused' as const, stepName: first?.path ?? state.handoff?.step ?? '' },
          first?.correlationId !== undefined ? { correlationId: first.correlationId } : {},
          first?.timeoutAt !== undefined ? { timeoutAt: first.timeoutAt } : {},
          { waitingFor },
        ),
      );
    }
    default: {
      const handle = flowHandleOf(state);
      return handle ? base({ status: 'dispatched' as const, flow: handle }) : base({ status: 'dispatched' as const });
    }
  }
}

/** What a run that has not started waits for, from its flow control (see {@link FlowHandle}). */
export function flowHandleOf(state: RunState): FlowHandle | undefined {
  const flow = state.flow;
  if (state.status !== 'pending' || flow?.wait === undefined) return undefined;
  const key = flow.wait === 'queued' ? flow.slot : flow.key;
  return {
    state: flow.wait,
    key: key ?? '',
    ...(flow.at !== undefined && flow.wait !== 'queued' ? { startAt: flow.at } : {}),
  };
}

function brokenFailure(state: RunState): RunFailure {
  return runFailure({
    message: `Run '${state.runId}' failed without a recorded reason.`,
    code: 'INTERNAL',
    reactorName: state.reactorName,
    errorMessage: 'unknown',
  });
}
