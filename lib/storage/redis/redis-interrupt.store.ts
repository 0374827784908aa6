import {
  InternalError,
  type ClaimReply,
  type FieldErrors,
  type InterruptStore,
  type MailReply,
  type RejectReply,
  type ResumeClaim,
  type RunStatus,
} from '../../core';
import { normalizeTtlMs } from '../lease-ttl';
import { isErrorCode, storageError } from '../storage-error-codes';
import type { RedisKeys } from './redis.keys';
import { defineScripts, runScript, SCRIPT_FILES, type RedisConnection, type ScriptName } from './redis-scripts';

/** Options of {@link RedisInterruptStore}. */
export interface RedisInterruptStoreOptions {
  /** Key builder; the same instance (prefix and shard count) as the storage's. */
  keys: RedisKeys;
}

type Reply = Array<string | number | null>;

/**
 * {@link InterruptStore} on Redis. Behaves exactly as `MemoryInterruptStore` (both pass
 * `test/conformance/interrupt-store.conformance.ts`).
 *
 * ## Keys (see {@link RedisKeys})
 *
 * ```
 * run:<root>:resume        HASH   in the top-level run's slot: c:<path> claim (JSON), exp:<path>
 *                                 expiry of an early claim (ms), n:<path> invalid payloads counted;
 *                                 PX = retentionMs, re-stamped by every claim and rejection
 * {corr:<reactor>:<id>}    STRING the run the correlation id is bound to, PX = retentionMs
 * {corr:<reactor>:<id>}:mailbox
 *                          HASH   interrupt path -> claim (JSON) mailed before a run bound the id;
 *                                 one TTL, the longest of its entries'
 * {event:<name>}:waiting   SET    `<root run id>:<interrupt path>` of each run waiting at an
 *                                 interrupt answered by event <name> without a correlation id;
 *                                 added as the run reaches it, removed as it settles (or by the
 *                                 next emit that finds it settled); no TTL
 * ```
 *
 * The reactor name and the correlation id are URI-encoded, so braces in them cannot move the hash
 * tag: a binding and its mailbox always share a slot.
 *
 * ## Round trips
 *
 * One command each (`EVALSHA`; `EVAL` the first time on a connection): `claim`
 * (`interruptClaim-3.lua`: run record, resume hash and the shard's live-run index, all in the run's
 * slot), `reject` (`interruptReject-3.lua`, the same keys), `claims` (`interruptClaims-2.lua`),
 * `bindCorrelationId` (`bindCorrelationId-2.lua`), `mailResume` (`mailResume-2.lua`),
 * `findCorrelationId` (`GET`), `watchEvent` (`SADD`), `unwatchEvent` (`SREM`), and
 * `eventWatchers` (`SSCAN`, one round trip per 500 entries).
 *
 * The client is the caller's: this class never closes it.
 *
 * @example
 * const keys = new RedisKeys({ prefix: 'reactor' });
 * const interrupts = new RedisInterruptStore(redis, { keys });
 */
export class RedisInterruptStore implements InterruptStore {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisConnection,
    options: RedisInterruptStoreOptions,
  ) {
    this.keys = options.keys;
    defineScripts(redis);
  }

  /** Claim an interrupt, first wins: `interruptClaim-3.lua`. */
  async claim(
    runId: string,
    path: string,
    claim: ResumeClaim,
    options: { now: number; expiresAt?: number; retentionMs: number },
  ): Promise<ClaimReply> {
    const retention = normalizeTtlMs(options.retentionMs, 'retentionMs');
    const root = this.keys.rootRunId(runId);
    const reply = await this.script(
      'interruptClaim',
      this.runKeys(root),
      [root, path, JSON.stringify(claim), options.now, options.expiresAt ?? '', retention],
      root,
    );
    const status = statusOf(reply[1]);
    if (reply[0] === 1 && status) return { won: true, status };
    if (!status) return { won: false };
    return typeof reply[2] === 'string' ? { won: false, status, existing: parse(reply[2]) } : { won: false, status };
  }

  /** Count an invalid payload, and claim `rejected` at `maxAttempts`: `interruptReject-3.lua`. */
  async reject(
    runId: string,
    path: string,
    rejection: { fieldErrors: FieldErrors; now: number; maxAttempts: number; retentionMs: number },
  ): Promise<RejectReply> {
    const { fieldErrors, now, maxAttempts } = rejection;
    const retention = normalizeTtlMs(rejection.retentionMs, 'retentionMs');
    const root = this.keys.rootRunId(runId);
    // The `rejected` claim around its attempt count, which the script puts in: exactly
    // JSON.stringify({ kind: 'rejected', fieldErrors, attempts, at: now }).
    const head = `{"kind":"rejected","fieldErrors":${JSON.stringify(fieldErrors)},"attempts":`;
    const tail = `,"at":${JSON.stringify(now)}}`;
    const reply = await this.script(
      'interruptReject',
      this.runKeys(root),
      [root, path, now, maxAttempts, retention, head, tail],
      root,
    );
    const status = statusOf(reply[1]);
    if (reply[0] === 1 && status) return { counted: true, attempts: Number(reply[2]), final: reply[3] === 1, status };
    if (typeof reply[2] === 'string') return { counted: false, existing: parse(reply[2]) };
    return status ? { counted: false, status } : { counted: false };
  }

  /** The claims of `paths` that hold at `now`: `interruptClaims-2.lua`. */
  async claims(
    runId: string,
    paths: readonly string[],
    mode: 'take' | 'peek',
    now: number,
  ): Promise<Record<string, ResumeClaim>> {
    const found: Record<string, ResumeClaim> = {};
    if (paths.length === 0) return found;
    const root = this.keys.rootRunId(runId);
    const reply = await this.script(
      'interruptClaims',
      [this.keys.resumeKey(root), this.keys.activeIndexKeyOf(root)],
      [root, mode, now, ...paths],
      root,
    );
    for (let i = 0; i + 1 < reply.length; i += 2) found[String(reply[i])] = parse(String(reply[i + 1]));
    return found;
  }

  /** Bind a correlation id and take the resume mailed to it: `bindCorrelationId-2.lua`. */
  async bindCorrelationId(
    reactor: string,
    correlationId: string,
    runId: string,
    path: string,
    options: { replacing?: string; retentionMs: number },
  ): Promise<{ ok: true; early?: ResumeClaim } | { ok: false; boundTo: string }> {
    const retention = normalizeTtlMs(options.retentionMs, 'retentionMs');
    const reply = await this.script(
      'bindCorrelationId',
      this.correlationKeys(reactor, correlationId),
      [runId, path, retention, options.replacing ?? ''],
      runId,
    );
    if (reply[0] !== 1) return { ok: false, boundTo: String(reply[1]) };
    return typeof reply[1] === 'string' ? { ok: true, early: parse(reply[1]) } : { ok: true };
  }

  /** Mail a resume to a correlation id no run holds: `mailResume-2.lua`. */
  async mailResume(
    reactor: string,
    correlationId: string,
    path: string,
    claim: ResumeClaim,
    options: { now: number; ttlMs: number; ignoreBoundTo?: string },
  ): Promise<MailReply> {
    const ttl = normalizeTtlMs(options.ttlMs, 'ttlMs');
    const reply = await this.script(
      'mailResume',
      this.correlationKeys(reactor, correlationId),
      [path, JSON.stringify(claim), ttl, options.ignoreBoundTo ?? ''],
      correlationId,
    );
    switch (reply[0]) {
      case 'bound':
        return { kind: 'bound', runId: String(reply[1]) };
      case 'queued':
        return { kind: 'queued', expiresAt: options.now + ttl };
      case 'exists':
        return { kind: 'exists' };
      default:
        throw new InternalError(`Script 'mailResume' (${SCRIPT_FILES.mailResume}) answered ${JSON.stringify(reply)}.`);
    }
  }

  /** The run a correlation id is bound to: one `GET`. */
  async findCorrelationId(reactor: string, correlationId: string): Promise<string | undefined> {
    return (await this.redis.get(this.keys.correlationKey(reactor, correlationId))) ?? undefined;
  }

  /** List a run as waiting for an event: one `SADD` on the event's index. */
  async watchEvent(event: string, runId: string, path: string): Promise<void> {
    await this.redis.sadd(this.keys.eventWaitingKey(event), watcherMember(runId, path));
  }

  /** Unlist it: one `SREM`. */
  async unwatchEvent(event: string, runId: string, path: string): Promise<void> {
    await this.redis.srem(this.keys.eventWaitingKey(event), watcherMember(runId, path));
  }

  /** The event's index, read with `SSCAN` (a large one never blocks Redis in one command). */
  async eventWatchers(event: string): Promise<Array<{ runId: string; path: string }>> {
    const key = this.keys.eventWaitingKey(event);
    const members = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await this.redis.sscan(key, cursor, 'COUNT', 500);
      for (const member of batch) members.add(member);
      cursor = next;
    } while (cursor !== '0');
    const out: Array<{ runId: string; path: string }> = [];
    for (const member of members) {
      // The root run id holds no ':' (ID_SEPARATORS): the path is everything after the first one.
      const colon = member.indexOf(':');
      if (colon > 0) out.push({ runId: member.slice(0, colon), path: member.slice(colon + 1) });
    }
    return out;
  }

  /** The keys of `interruptClaim-3` / `interruptReject-3`, all in the run's slot. */
  private runKeys(root: string): string[] {
    return [this.keys.runKey(root), this.keys.resumeKey(root), this.keys.activeIndexKeyOf(root)];
  }

  /** A correlation id's binding and mailbox, in one slot. */
  private correlationKeys(reactor: string, correlationId: string): string[] {
    return [this.keys.correlationKey(reactor, correlationId), this.keys.correlationMailboxKey(reactor, correlationId)];
  }

  /** Run a script that answers an array, turning a negative integer into its error. */
  private async script(name: ScriptName, keys: string[], args: Array<string | number>, runId: string): Promise<Reply> {
    const reply = (await runScript(this.redis, name, keys, args)) as number | Reply;
    if (typeof reply === 'number') {
      throw isErrorCode(reply)
        ? storageError(reply, { runId, operation: `${name} (${SCRIPT_FILES[name]})` })
        : new InternalError(`Script '${name}' (${SCRIPT_FILES[name]}) answered ${reply}.`);
    }
    return reply;
  }
}

/** An entry of an event's index: `<root run id>:<interrupt path>`. */
function watcherMember(runId: string, path: string): string {
  return `${runId}:${path}`;
}

/** A run status from a script reply, or `undefined` when the script found no run. */
function statusOf(value: string | number | null | undefined): RunStatus | undefined {
  return typeof value === 'string' ? (value as RunStatus) : undefined;
}

function parse(json: string): ResumeClaim {
  return JSON.parse(json) as ResumeClaim;
}
