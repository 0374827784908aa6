import type { FieldErrors } from '../model/failure';
import type { ResumeClaim } from '../model/interrupt';
import type { RunStatus } from '../model/run-state';

export type { ResumeClaim } from '../model/interrupt';

/** The answer to {@link InterruptStore.claim}. */
export type ClaimReply =
  /** This claim is the interrupt's; `status` is the run's status when it was written. */
  | { won: true; status: RunStatus }
  /**
   * Nothing written: no run (`status` absent), a terminal or `rolling_back` run (`status`), or an
   * earlier claim that still holds (`existing`).
   */
  | { won: false; status?: RunStatus; existing?: ResumeClaim };

/** The answer to {@link InterruptStore.reject}. */
export type RejectReply =
  /** Counted: `attempts` invalid payloads so far; `final` when this one reached `maxAttempts` (claimed `rejected`). */
  | { counted: true; attempts: number; final: boolean; status: RunStatus }
  /** Not counted: the interrupt already has a claim. */
  | { counted: false; existing: ResumeClaim }
  /** Not counted: no run (`status` absent), or a terminal or `rolling_back` one. */
  | { counted: false; status?: RunStatus };

/** The answer to {@link InterruptStore.mailResume}. */
export type MailReply =
  /** The correlation id is bound to a live run: resume that run instead (nothing mailed). */
  | { kind: 'bound'; runId: string }
  /** Kept until `expiresAt`, for the run that binds the id. */
  | { kind: 'queued'; expiresAt: number }
  /** A resume was mailed to this id and interrupt already. */
  | { kind: 'exists' };

/**
 * Resume claims and correlation ids of interrupts (runs paused until the outside world answers).
 *
 * Claims are kept per top-level run (`runId`) and interrupt path (`approve`, `child.approve`), in
 * the run's cluster slot; each operation is atomic (one Lua script on Redis). An early claim (made
 * before the run reached its interrupt) carries `expiresAt`, after which it counts as absent.
 * Correlation ids are bound per reactor to one run at a time; a resume for an id no run holds yet
 * waits in that id's mailbox (same slot as the binding) until a run binds it or it expires.
 */
export interface InterruptStore {
  /**
   * Claim interrupt `path` of run `runId`: first wins. Refused for a missing, terminal or
   * `rolling_back` run. A claim won while the run is `paused` also moves the run to `now` in its
   * live-run index, so that a sweeper resumes it if the job that should do so is lost. The claims
   * are kept for `retentionMs`.
   */
  claim(
    runId: string,
    path: string,
    claim: ResumeClaim,
    options: { now: number; expiresAt?: number; retentionMs: number },
  ): Promise<ClaimReply>;
  /**
   * Count an invalid payload for interrupt `path`; when the count reaches `maxAttempts` (0:
   * unlimited), claim it `{ kind: 'rejected', fieldErrors, attempts, at: now }` in the same step.
   */
  reject(
    runId: string,
    path: string,
    rejection: { fieldErrors: FieldErrors; now: number; maxAttempts: number; retentionMs: number },
  ): Promise<RejectReply>;
  /**
   * The unexpired claims of `paths`, by path. `take` makes early claims permanent (their run has
   * reached them); `peek` leaves them as they are and, when it finds any, moves the run to `now` in
   * its live-run index (like {@link claim}).
   */
  claims(
    runId: string,
    paths: readonly string[],
    mode: 'take' | 'peek',
    now: number,
  ): Promise<Record<string, ResumeClaim>>;
  /**
   * Bind correlation id `correlationId` of `reactor` to `runId` for `retentionMs` (the same run:
   * refreshed; `replacing`: taken over from that run, which is gone or finished), and take the
   * resume mailed to it for interrupt `path`, if any, in the same step. Refused when the id is
   * bound to another run (`boundTo`).
   */
  bindCorrelationId(
    reactor: string,
    correlationId: string,
    runId: string,
    path: string,
    options: { replacing?: string; retentionMs: number },
  ): Promise<{ ok: true; early?: ResumeClaim } | { ok: false; boundTo: string }>;
  /**
   * Mail a resume to correlation id `correlationId` of `reactor` for interrupt `path`, kept for
   * `ttlMs`: first wins per id and path. When the id is bound to a run (other than
   * `ignoreBoundTo`, a run known to be gone), nothing is mailed and that run is returned.
   */
  mailResume(
    reactor: string,
    correlationId: string,
    path: string,
    claim: ResumeClaim,
    options: { now: number; ttlMs: number; ignoreBoundTo?: string },
  ): Promise<MailReply>;
  /** The run correlation id `correlationId` of `reactor` is bound to, if any. */
  findCorrelationId(reactor: string, correlationId: string): Promise<string | undefined>;
  /**
   * List top-level run `runId` as waiting at interrupt `path` for events named `event` (an index
   * per event name, in the event name's own cluster slot; idempotent). Optional: without it (and
   * {@link unwatchEvent}, {@link eventWatchers}) the engine refuses interrupts answered by events
   * without a correlation id.
   */
  watchEvent?(event: string, runId: string, path: string): Promise<void>;
  /** Remove the entry {@link watchEvent} made (idempotent). */
  unwatchEvent?(event: string, runId: string, path: string): Promise<void>;
  /** Every entry of the index of `event`, in no particular order (entries may name settled interrupts). */
  eventWatchers?(event: string): Promise<Array<{ runId: string; path: string }>>;
}
