/**
 * The abort side of an execution: one {@link ExecutionAbort} per execution (a top-level run with its
 * composed children and inline map elements), one `AbortController` per step attempt or rollback
 * callback, handed to the step as `ctx.signal`.
 *
 * Causes escalate and never go back: `cancel` < `shutdown` < `lease-lost`. A cancel aborts the
 * signals of step bodies only (a cancelled run's compensations and undos must run); a shutdown past
 * its grace or a lost lease aborts every signal, rollback callbacks' too, and stops the execution
 * (see {@link ExecutionAbort.stopCause}). A signal opened after an abort that applies to it starts
 * aborted.
 */
import { StepAbortedError, type StepAbortCause, type StepAbortSite } from '../errors/step-aborted.error';

const RANK: Record<StepAbortCause, number> = { cancel: 1, shutdown: 2, 'lease-lost': 3 };

/**
 * A step's signal while its callback runs; `close` when the callback has returned. The
 * `AbortController` behind {@link signal} is made the first time a step reads it (most never do,
 * and one costs microseconds per step); {@link reason} says whether it was aborted either way.
 */
export interface OpenSignal {
  readonly signal: AbortSignal;
  /** Why the signal was aborted, if it was (whether or not the step read it). */
  readonly reason: StepAbortedError | undefined;
  close(): void;
}

class Entry implements OpenSignal {
  private controller?: AbortController;
  private aborted?: StepAbortedError;

  constructor(
    readonly site: StepAbortSite,
    private readonly owner: Set<Entry>,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.aborted);
    }
    return this.controller.signal;
  }

  get reason(): StepAbortedError | undefined {
    return this.aborted;
  }

  abort(error: StepAbortedError): void {
    this.aborted = error;
    this.controller?.abort(error);
  }

  close(): void {
    this.owner.delete(this);
  }
}

/** A signal that is never aborted, for a context built outside any step callback. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/** The abort state of one execution and the signals of its steps in flight. */
export class ExecutionAbort {
  private current?: StepAbortCause;
  private reason?: string;
  private readonly open = new Set<Entry>();
  private readonly listeners = new Set<(cause: StepAbortCause) => void>();

  /** Why the execution was aborted, if it was (the strongest cause so far). */
  get cause(): StepAbortCause | undefined {
    return this.current;
  }

  /** The reason of a cancel request this execution was told of directly (not through a checkpoint). */
  get cancelReason(): string | undefined {
    return this.reason;
  }

  /** `shutdown` or `lease-lost` when the execution must stop (start nothing, roll nothing back). */
  get stopCause(): Exclude<StepAbortCause, 'cancel'> | undefined {
    return this.current === 'shutdown' || this.current === 'lease-lost' ? this.current : undefined;
  }

  /** A signal for one attempt of a step's body, or one of its rollback callbacks. */
  openSignal(site: StepAbortSite): OpenSignal {
    const entry = new Entry(site, this.open);
    if (this.current && applies(this.current, site.phase)) entry.abort(this.errorFor(this.current, site));
    else this.open.add(entry);
    return entry;
  }

  /**
   * Abort the signals `cause` applies to (a cancel: step bodies; otherwise all). A weaker cause
   * than one already given changes nothing. `cancelReason`: the reason given to `cancel`.
   */
  abort(cause: StepAbortCause, cancelReason?: string): void {
    if (cause === 'cancel') this.reason ??= cancelReason ?? 'cancelled';
    if (this.current && RANK[this.current] >= RANK[cause]) return;
    this.current = cause;
    for (const entry of [...this.open]) {
      if (!applies(cause, entry.site.phase)) continue;
      this.open.delete(entry);
      entry.abort(this.errorFor(cause, entry.site));
    }
    for (const listener of [...this.listeners]) listener(cause);
  }

  /** Call `listener` on every escalation (after the signals were aborted); returns its removal. */
  onAbort(listener: (cause: StepAbortCause) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private errorFor(cause: StepAbortCause, site: StepAbortSite): StepAbortedError {
    return new StepAbortedError(cause, site, cause === 'cancel' ? this.reason : undefined);
  }
}

function applies(cause: StepAbortCause, phase: StepAbortSite['phase']): boolean {
  return cause !== 'cancel' || phase === 'run';
}

/**
 * Thrown inside an execution told to stop (shutdown past its grace, or a lost lease): nothing more
 * is started, rolled back or written. The root execution turns it into its outcome (shutdown: the
 * run as last stored, for recovery) or a `LeaseLostError`.
 */
export class ExecutionStopped extends Error {
  constructor(readonly stopCause: Exclude<StepAbortCause, 'cancel'>) {
    super(`execution stopped (${stopCause})`);
  }
}
