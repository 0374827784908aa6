import {
  systemClock,
  type ClaimReply,
  type Clock,
  type FieldErrors,
  type InterruptStore,
  type MailReply,
  type RejectReply,
  type ResumeClaim,
  type RunStatus,
} from '../../core';
import { normalizeTtlMs } from '../lease-ttl';
import type { MemoryReactorStorage } from './memory-reactor.storage';

/** The resume claims of one top-level run (the memory twin of its Redis `resume` hash). */
interface RunClaims {
  /** Claim of each interrupt path, as JSON (a read parses a fresh copy). */
  claims: Map<string, string>;
  /** When each early claim stops counting (ms); a claim without an entry is permanent. */
  expiries: Map<string, number>;
  /** Invalid payloads counted per interrupt path. */
  rejections: Map<string, number>;
}

/** A correlation id's mailbox: resumes by interrupt path (JSON), kept until `expiresAt`. */
interface Mailbox {
  entries: Map<string, string>;
  expiresAt: number;
}

/**
 * In-process {@link InterruptStore} for the embedded runtime and tests. It follows the same
 * contract as `RedisInterruptStore` (both pass `test/conformance/interrupt-store.conformance.ts`),
 * and each operation runs synchronously inside one call, so it is atomic like a Lua script.
 *
 * - Claims are kept per top-level run (the part of `runId` before the first `/`) and interrupt
 *   path, as JSON (JSON rules apply to payloads). Like the runs of {@link MemoryReactorStorage},
 *   they have no retention TTL: `retentionMs` is validated and otherwise unused.
 * - Early claims expire by the `now` each operation is given.
 * - Correlation bindings and mailboxes expire by the store's clock (a binding has no `now`), and
 *   a mailbox lives as long as its longest-lived entry, as on Redis (one TTL per mailbox).
 *
 * @example
 * const { storage, interrupts } = createMemoryAdapters(clock);
 */
export class MemoryInterruptStore implements InterruptStore {
  private readonly runs = new Map<string, RunClaims>();
  /** Correlation ids (reactor and id, as JSON) and the run each is bound to, until it expires. */
  private readonly bindings = new Map<string, { runId: string; expiresAt: number }>();
  private readonly mailboxes = new Map<string, Mailbox>();
  /** The runs waiting at interrupts answered by each event (by event name; entries by `[runId, path]` as JSON). */
  private readonly watchers = new Map<string, Map<string, { runId: string; path: string }>>();

  /**
   * @param storage the runs whose status the claims check, and whose live-run index they move.
   * @param clock time source of correlation bindings and mailboxes. @default systemClock
   */
  constructor(
    private readonly storage: MemoryReactorStorage,
    readonly clock: Clock = systemClock,
  ) {}

  async claim(
    runId: string,
    path: string,
    claim: ResumeClaim,
    options: { now: number; expiresAt?: number; retentionMs: number },
  ): Promise<ClaimReply> {
    normalizeTtlMs(options.retentionMs, 'retentionMs');
    const json = JSON.stringify(claim);
    const root = rootOf(runId);
    const run = this.storage.statusOf(root);
    if (!run) return { won: false };
    const { status } = run;
    if (refuses(run)) return { won: false, status };
    const claims = this.claimsOf(root);
    const existing = current(claims, path, options.now);
    if (existing) return { won: false, status, existing: parse(existing) };
    claims.claims.set(path, json);
    if (options.expiresAt !== undefined) claims.expiries.set(path, options.expiresAt);
    else claims.expiries.delete(path);
    if (status === 'paused') this.storage.touchActive(root, options.now);
    return { won: true, status };
  }

  async reject(
    runId: string,
    path: string,
    rejection: { fieldErrors: FieldErrors; now: number; maxAttempts: number; retentionMs: number },
  ): Promise<RejectReply> {
    const { fieldErrors, now, maxAttempts } = rejection;
    normalizeTtlMs(rejection.retentionMs, 'retentionMs');
    const root = rootOf(runId);
    const run = this.storage.statusOf(root);
    if (!run) return { counted: false };
    const { status } = run;
    if (refuses(run)) return { counted: false, status };
    const claims = this.claimsOf(root);
    const existing = current(claims, path, now);
    if (existing) return { counted: false, existing: parse(existing) };
    const attempts = (claims.rejections.get(path) ?? 0) + 1;
    claims.rejections.set(path, attempts);
    const final = maxAttempts > 0 && attempts >= maxAttempts;
    if (final) {
      const rejected: ResumeClaim = { kind: 'rejected', fieldErrors, attempts, at: now };
      claims.claims.set(path, JSON.stringify(rejected));
      claims.expiries.delete(path);
      if (status === 'paused') this.storage.touchActive(root, now);
    }
    return { counted: true, attempts, final, status };
  }

  async claims(
    runId: string,
    paths: readonly string[],
    mode: 'take' | 'peek',
    now: number,
  ): Promise<Record<string, ResumeClaim>> {
    const root = rootOf(runId);
    const claims = this.runs.get(root);
    const found: Record<string, ResumeClaim> = {};
    if (!claims) return found;
    let any = false;
    for (const path of paths) {
      const json = current(claims, path, now);
      if (json === undefined) continue;
      found[path] = parse(json);
      any = true;
      if (mode === 'take') claims.expiries.delete(path);
    }
    if (any && mode === 'peek') this.storage.touchActive(root, now);
    return found;
  }

  async bindCorrelationId(
    reactor: string,
    correlationId: string,
    runId: string,
    path: string,
    options: { replacing?: string; retentionMs: number },
  ): Promise<{ ok: true; early?: ResumeClaim } | { ok: false; boundTo: string }> {
    const retention = normalizeTtlMs(options.retentionMs, 'retentionMs');
    const name = correlationName(reactor, correlationId);
    const now = this.clock.now();
    const bound = this.boundRun(name, now);
    if (bound !== undefined && bound !== runId && bound !== options.replacing) return { ok: false, boundTo: bound };
    this.bindings.set(name, { runId, expiresAt: now + retention });
    const mailbox = this.mailbox(name, now);
    const early = mailbox?.entries.get(path);
    if (!mailbox || early === undefined) return { ok: true };
    mailbox.entries.delete(path);
    if (mailbox.entries.size === 0) this.mailboxes.delete(name);
    return { ok: true, early: parse(early) };
  }

  async mailResume(
    reactor: string,
    correlationId: string,
    path: string,
    claim: ResumeClaim,
    options: { now: number; ttlMs: number; ignoreBoundTo?: string },
  ): Promise<MailReply> {
    const ttl = normalizeTtlMs(options.ttlMs, 'ttlMs');
    const json = JSON.stringify(claim);
    const { now } = options;
    const name = correlationName(reactor, correlationId);
    const bound = this.boundRun(name, now);
    if (bound !== undefined && bound !== options.ignoreBoundTo) return { kind: 'bound', runId: bound };
    const mailbox = this.mailbox(name, now) ?? { entries: new Map<string, string>(), expiresAt: now };
    if (mailbox.entries.has(path)) return { kind: 'exists' };
    mailbox.entries.set(path, json);
    // One expiry per mailbox: never cut an earlier entry short.
    mailbox.expiresAt = Math.max(mailbox.expiresAt, now + ttl);
    this.mailboxes.set(name, mailbox);
    return { kind: 'queued', expiresAt: now + ttl };
  }

  async findCorrelationId(reactor: string, correlationId: string): Promise<string | undefined> {
    return this.boundRun(correlationName(reactor, correlationId), this.clock.now());
  }

  async watchEvent(event: string, runId: string, path: string): Promise<void> {
    let watchers = this.watchers.get(event);
    if (!watchers) this.watchers.set(event, (watchers = new Map()));
    watchers.set(JSON.stringify([runId, path]), { runId, path });
  }

  async unwatchEvent(event: string, runId: string, path: string): Promise<void> {
    const watchers = this.watchers.get(event);
    watchers?.delete(JSON.stringify([runId, path]));
    if (watchers?.size === 0) this.watchers.delete(event);
  }

  async eventWatchers(event: string): Promise<Array<{ runId: string; path: string }>> {
    return [...(this.watchers.get(event)?.values() ?? [])].map((w) => ({ ...w }));
  }

  /** Drop every claim, binding and mailbox (tests). */
  clear(): void {
    this.runs.clear();
    this.bindings.clear();
    this.mailboxes.clear();
    this.watchers.clear();
  }

  private claimsOf(root: string): RunClaims {
    let claims = this.runs.get(root);
    if (!claims) {
      claims = { claims: new Map(), expiries: new Map(), rejections: new Map() };
      this.runs.set(root, claims);
    }
    return claims;
  }

  /** The run correlation id `name` is bound to at `now`, dropping an expired binding. */
  private boundRun(name: string, now: number): string | undefined {
    const binding = this.bindings.get(name);
    if (!binding) return undefined;
    if (binding.expiresAt > now) return binding.runId;
    this.bindings.delete(name);
    return undefined;
  }

  /** The mailbox of correlation id `name` at `now`, dropping an expired one. */
  private mailbox(name: string, now: number): Mailbox | undefined {
    const mailbox = this.mailboxes.get(name);
    if (!mailbox) return undefined;
    if (mailbox.expiresAt > now) return mailbox;
    this.mailboxes.delete(name);
    return undefined;
  }
}

/** The top-level run of `runId` (composed children are `<root>/<step>`). */
function rootOf(runId: string): string {
  const slash = runId.indexOf('/');
  return slash === -1 ? runId : runId.slice(0, slash);
}

/** Claims are refused on a run that is finished or rolling back. */
function refuses(run: { status: RunStatus; terminal: boolean }): boolean {
  return run.terminal || run.status === 'rolling_back';
}

/**
 * The claim of `path` that holds at `now` (JSON), if any. An early claim whose expiry has come is
 * dropped (it counts as absent, and a later claim replaces it), as `interruptClaims-2.lua` does.
 */
function current(claims: RunClaims, path: string, now: number): string | undefined {
  const json = claims.claims.get(path);
  if (json === undefined) return undefined;
  const expiresAt = claims.expiries.get(path);
  if (expiresAt === undefined || expiresAt > now) return json;
  claims.claims.delete(path);
  claims.expiries.delete(path);
  return undefined;
}

function correlationName(reactor: string, correlationId: string): string {
  return JSON.stringify([reactor, correlationId]);
}

function parse(json: string): ResumeClaim {
  return JSON.parse(json) as ResumeClaim;
}
