import type { StepOutcome } from '../results/step-outcome';
import { toStepContract, type OutputContract, type StepContract } from './contract-spec';
import { eventNameProblem, type EventWaitingRun } from './event-spec';
import type { ArgRefs, Ref } from './ref';
import type { StepContext } from './step';

/**
 * What an interrupt's `correlationId` and `onTimeout` receive: the step context, its wired `args`,
 * and the run's `inputs` and the `results` of its steps so far (of the reactor that declares the
 * interrupt: a composed child's own), so an id can come from any of them without wiring each.
 * (No `fence`: an interrupt takes no lock of its own, and writes nothing downstream.)
 */
export interface InterruptContext<A = Record<string, unknown>> extends Omit<StepContext, 'fence' | 'tag'> {
  readonly args: A;
  /** The run's validated inputs (as steps read them; not redacted). */
  readonly inputs: Readonly<Record<string, unknown>>;
  /** The results of the steps that finished so far, by step name. */
  readonly results: Readonly<Record<string, unknown>>;
}

/** Options of `r.interrupt(name, options)`. */
export interface InterruptOptions<P = unknown, A = Record<string, never>> {
  /** Refs `correlationId` and `onTimeout` read (they are dependencies of the interrupt, like a step's args). */
  args?: ArgRefs<A>;
  /** Ordering-only dependencies: refs to steps, or step names. */
  waitFor?: ReadonlyArray<Ref<unknown> | string>;
  /**
   * Resume by this id as well as by run id (`client.continueByCorrelationId`): a webhook's order
   * id, an approval request id. Unique among the live runs of the (top-level) reactor: a second
   * run reaching it fails with `CORRELATION_ID_TAKEN`, rolled back. Non-empty, at most 512 chars.
   */
  correlationId?: (run: InterruptContext<A>) => string;
  /**
   * The payload's contract: a DTO class, a record of short forms, or one short form for a scalar.
   * @default any JSON value
   */
  payload?: OutputContract;
  /**
   * Payloads tried before the run gives up: an invalid one is refused while attempts remain (the
   * run stays paused); the last one fails the run with rollback. `Infinity`: never. @default 1
   */
  maxAttempts?: number;
  /** The interrupt times out this long after the run reached it. */
  timeoutMs?: number;
  /**
   * `active`: a delayed job enforces the timeout with nobody calling; `lazy`: a resume that arrives
   * late is refused and times the run out then. @default 'active'
   */
  timeoutStrategy?: 'active' | 'lazy';
  /**
   * What a timeout does. Absent: the run fails (`INTERRUPT_TIMED_OUT`) and rolls back. Otherwise
   * its outcome is the interrupt's: `success(v)` gives the interrupt the value `v` (not validated
   * against `payload`), a failure rolls the run back, a halt halts it.
   */
  onTimeout?: (run: InterruptContext<A>) => StepOutcome<P> | Promise<StepOutcome<P>>;
  /**
   * Answer this interrupt with events too: `client.emit(event, payload)` answers it with the
   * event's payload (validated like a `continue`'s), at most once per run (first answer wins).
   */
  event?: string;
  /**
   * Which run an event answers. With `correlationId`: `match(payload)` returns the correlation id
   * the event is for (`false`, `null` or `undefined`: none), and an event that comes before its
   * run reaches the interrupt waits in that id's mailbox. Without: `match(payload, run)` is asked
   * for each run waiting at the interrupt when the event comes (an index of them per event name)
   * and returns whether the event answers it; an event no run waits for answers nothing.
   * Required with `correlationId`. @default without `correlationId`: every waiting run
   */
  match?(payload: P, run?: EventWaitingRun): boolean | string | null | undefined;
  /**
   * Answer this interrupt by a signed callback token too: each pause hands out a token (HMAC with
   * the secret of `ReactorCallbackModule.forRoot({ secret })`, bound to the run, the interrupt's path
   * and its expiry) on `waitingFor[].callback` of the paused outcome (and `client.callbackToken`),
   * with a URL a webhook POSTs its payload to. It expires `expiresInMs` after the run reached the
   * interrupt (an integer from 1000 to 30 days); it is single-use (the answer is a claim, first
   * wins). Without the callback module, nothing is handed out. See docs/callback-tokens.md.
   */
  token?: InterruptTokenOptions;
}

/** The `token` option of an interrupt (see {@link InterruptOptions.token}). */
export interface InterruptTokenOptions {
  /** How long after the run reached the interrupt its token is accepted, in ms (1000 to 30 days). */
  expiresInMs: number;
}

/** Longest `token.expiresInMs`: 30 days. */
export const MAX_TOKEN_EXPIRES_IN_MS = 30 * 24 * 60 * 60 * 1000;
/** Shortest `token.expiresInMs`: one second. */
export const MIN_TOKEN_EXPIRES_IN_MS = 1000;

/** An interrupt as the definition holds it. */
export interface InterruptSpec {
  readonly payload?: StepContract;
  readonly correlationId?: (run: InterruptContext) => string;
  /** Valid attempts; 0 when unlimited. */
  readonly maxAttempts: number;
  readonly timeoutMs?: number;
  readonly timeoutStrategy: 'active' | 'lazy';
  readonly onTimeout?: (run: InterruptContext) => StepOutcome<unknown> | Promise<StepOutcome<unknown>>;
  /** The event that answers it (see {@link InterruptOptions.event}). */
  readonly event?: string;
  readonly match?: (payload: unknown, run?: EventWaitingRun) => boolean | string | null | undefined;
  /** Its callback token (see {@link InterruptOptions.token}). */
  readonly token?: Readonly<InterruptTokenOptions>;
}

const KNOWN = [
  'args',
  'waitFor',
  'correlationId',
  'payload',
  'maxAttempts',
  'timeoutMs',
  'timeoutStrategy',
  'onTimeout',
  'event',
  'match',
  'token',
];

/** Normalize `r.interrupt` options; returns an error message for a bad one (the caller prefixes reactor and step). */
export function toInterruptSpec(options: InterruptOptions<unknown, unknown>): InterruptSpec | string {
  if (typeof options !== 'object' || options === null) return 'options must be an object';
  for (const key of Object.keys(options)) {
    if (!KNOWN.includes(key)) return `unknown option '${key}'. An interrupt takes ${KNOWN.join(', ')}`;
  }
  let payload: StepContract | undefined;
  if (options.payload !== undefined) {
    const contract = toStepContract(options.payload, 'output');
    if (typeof contract === 'string') return contract.replace(/^output contract/, 'payload contract');
    payload = contract;
  }
  const max = options.maxAttempts ?? 1;
  if (max !== Infinity && (!Number.isInteger(max) || max < 1)) {
    return `maxAttempts must be an integer >= 1 or Infinity (got ${String(options.maxAttempts)})`;
  }
  const { timeoutMs, timeoutStrategy, onTimeout, correlationId } = options;
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1)) {
    return `timeoutMs must be an integer >= 1 (got ${String(timeoutMs)})`;
  }
  if (timeoutMs === undefined && (timeoutStrategy !== undefined || onTimeout !== undefined)) {
    return `${timeoutStrategy !== undefined ? 'timeoutStrategy' : 'onTimeout'} needs timeoutMs`;
  }
  if (timeoutStrategy !== undefined && timeoutStrategy !== 'active' && timeoutStrategy !== 'lazy') {
    return `timeoutStrategy must be 'active' or 'lazy' (got ${JSON.stringify(timeoutStrategy)})`;
  }
  if (onTimeout !== undefined && typeof onTimeout !== 'function') return 'onTimeout must be a function';
  if (correlationId !== undefined && typeof correlationId !== 'function') {
    return 'correlationId must be a function of the run (ctx) => string';
  }
  const { event, match } = options;
  if (event !== undefined) {
    const problem = eventNameProblem(event);
    if (problem) return `event ${problem}`;
  }
  if (match !== undefined && typeof match !== 'function')
    return 'match must be a function (payload, run) => boolean | correlation id';
  if (match !== undefined && event === undefined) return 'match needs event';
  if (event !== undefined && correlationId !== undefined && match === undefined) {
    return 'an event with correlationId needs match: (payload) => the correlation id the event is for';
  }
  let token: InterruptSpec['token'];
  if (options.token !== undefined) {
    const problem = tokenProblem(options.token);
    if (problem) return problem;
    token = Object.freeze({ expiresInMs: options.token.expiresInMs });
  }
  return Object.freeze({
    ...(event !== undefined ? { event } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(match !== undefined ? { match: match as InterruptSpec['match'] } : {}),
    payload,
    correlationId: correlationId as InterruptSpec['correlationId'],
    maxAttempts: max === Infinity ? 0 : max,
    timeoutMs,
    timeoutStrategy: timeoutStrategy ?? 'active',
    onTimeout: onTimeout as InterruptSpec['onTimeout'],
  });
}

/** What is wrong with a `token` option, or undefined. */
function tokenProblem(token: unknown): string | undefined {
  const expected = `token must be { expiresInMs } with expiresInMs an integer from ${MIN_TOKEN_EXPIRES_IN_MS} to ${MAX_TOKEN_EXPIRES_IN_MS} (30 days)`;
  if (typeof token !== 'object' || token === null || Array.isArray(token)) return `${expected} (got ${String(token)})`;
  const unknown = Object.keys(token).find((key) => key !== 'expiresInMs');
  if (unknown !== undefined) return `${expected}: unknown option 'token.${unknown}'`;
  const ms = (token as { expiresInMs?: unknown }).expiresInMs;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < MIN_TOKEN_EXPIRES_IN_MS || ms > MAX_TOKEN_EXPIRES_IN_MS)
    return `${expected} (got expiresInMs ${String(ms)})`;
  return undefined;
}
