import type { StepCoordinationOptions } from './coordination-spec';
import type { StepOutcome } from '../results/step-outcome';
import type { InputContract, OutputContract } from './contract-spec';
import { classMetadata } from './class-metadata';
import type { RetryOptions } from './retry-policy';

/** What a step's callbacks receive besides their arguments. */
export interface StepContext {
  readonly runId: string;
  readonly reactorName: string;
  readonly stepName: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /**
   * Aborted when the step should stop early: the run was cancelled (`client.cancel`; step bodies
   * only), this process is shutting down and `shutdownGraceMs` has passed, or this process lost
   * the run's lease. `signal.reason` is a `StepAbortedError` whose `abortCause` says which.
   * Pass it on (`fetch(url, { signal: ctx.signal })`) or check it between pieces of work
   * (`ctx.signal.throwIfAborted()`). A step that ignores it behaves as if there were none.
   * Each attempt, compensate and undo gets its own signal.
   */
  readonly signal: AbortSignal;
  /**
   * The fencing token of a lock the run holds here: `key` names it (the step's own lock, its
   * reactor's, or an enclosing reactor's); without a key, the step's own lock, else its reactor's.
   * A number that grows each time another holder takes the lock, never reused: pass it with a
   * write to a store that keeps the highest token it has seen and refuses a lower one, so a holder
   * that stalled past the lock's TTL (and was overtaken) cannot write. Throws a `TypeError` when
   * no such lock is held.
   */
  fence(key?: string): number;
  /**
   * Tag the run (issue 25): `key` (1 to 64 letters, digits, `_`, `.`, `-`) set to `value` (a
   * string of at most 256 characters), at most 16 tags per run; a key set again is replaced.
   * Stored and indexed with the step's checkpoint, so `client.list({ reactor, tag: 'key=value' })`
   * finds the run. In a composed child, it tags the child's record (only top-level runs are listed).
   * Throws a `ConfigurationError` naming the reactor, the step and the tag for a bad key or value.
   */
  tag(key: string, value: string): void;
}

/**
 * A step: an object (usually an injectable `@Step` service) with a `run` method, and optionally
 * `compensate` and `undo`. Capabilities follow from which methods exist: no `undo`, nothing to undo.
 *
 * - `run(args, ctx)` returns a {@link StepOutcome}: `success(v)`, `skipped(v)`, `halt(reason)` or
 *   `failure(err)`. A throw is a failure (retryable unless the error says `retryable: false`).
 *   Any other return value is a non-retryable failure.
 * - `compensate(error, args, ctx)` runs when this step's own body failed (after its last attempt);
 *   it cleans up partial effects. Not called when the body never started (argument or input
 *   validation errors).
 * - `undo(result, args, ctx)` runs when this step had completed and a later step failed, or on a
 *   manual undo. Both should be idempotent: a crash can repeat them.
 *
 * Callbacks may return a `failure(...)` or throw; either becomes a `rollbackFailures` entry and the
 * rollback walk goes on.
 */
export interface StepHandler<A = Record<string, unknown>, R = unknown> {
  run(args: A, ctx: StepContext): Promise<StepOutcome<R>> | StepOutcome<R>;
  compensate?(error: unknown, args: A, ctx: StepContext): Promise<unknown> | unknown;
  undo?(result: R, args: A, ctx: StepContext): Promise<unknown> | unknown;
}

/** A step written inline as a function: the `run` of a handler with nothing to undo. */
export type InlineStep<A, R> = (args: A, ctx: StepContext) => Promise<StepOutcome<R>> | StepOutcome<R>;

/** A class whose instances are step handlers (typically decorated with `@Step`). */
export type StepClass<A = never, R = unknown> = new (...deps: never[]) => StepHandler<A, R>;

export type { DtoClass } from './input-spec';

/** Options of a step class (the second argument of `@Step`) or of one use of a step. */
export interface StepOptions {
  /** Retry policy. Default: one attempt, no retries. */
  retries?: RetryOptions;
  /**
   * Input contract: a class-validator DTO, or a record of short forms (`{ amount: { type: 'number',
   * min: 1 } }`), the resolved arguments must satisfy before `run`. Short-form defaults fill missing
   * or `null` arguments. Violations fail the run with `InputValidationError` (never retried, step
   * not compensated).
   */
  input?: InputContract;
  /**
   * Output contract: a DTO, a record of short forms (fields of an object value) or one short form
   * (`{ type: 'number', min: 0 }`, the value itself) the value of a Success or Skipped must
   * satisfy. A violation is a failure of the step (compensated, not retried).
   */
  output?: OutputContract;
  /** Argument names whose values are replaced by `[REDACTED]` in traces and failures. */
  redact?: string[];
  /** Free text for people (shown by `describe` and docs tooling). */
  description?: string;
  /**
   * An exclusive lock the step holds around its body (and takes again for its undo and compensate),
   * keyed on its resolved arguments: `{ key: (args) => \`account:${args.accountId}\` }`.
   */
  lock?: StepCoordinationOptions['lock'];
  /** At most `limit` runs inside the step at once per key (see {@link lock}). */
  semaphore?: StepCoordinationOptions['semaphore'];
}

/** Metadata recorded by `@Step`. */
export interface StepClassMetadata extends StepOptions {
  /** Stable name of the step class. */
  name: string;
}

const stepMetadata = classMetadata<StepClassMetadata>();

/** Record step metadata for a class (used by the `@Step` decorator and by plain-TS users). */
export function defineStepMetadata(stepClass: object, metadata: StepClassMetadata): void {
  stepMetadata.define(stepClass, metadata);
}

/** The metadata of a step class, walking up the prototype chain so subclasses inherit it. */
export function getStepMetadata(stepClass: object): StepClassMetadata | undefined {
  return stepMetadata.get(stepClass);
}
