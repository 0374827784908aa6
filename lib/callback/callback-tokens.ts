/**
 * Callback tokens: stateless, signed proofs that this app handed out the right to answer one pause
 * of one interrupt of one run, until a time. Nothing is stored per token: a token is computed on
 * demand from the run's interrupt record (its `pausedAt`) and the interrupt's `token.expiresInMs`,
 * and verified with the secret alone. Single use is not the token's job: the answer it carries is
 * a claim, and the interrupt's first claim wins (a second use finds the claim and changes nothing).
 *
 * A token is `base64url(payload) + "." + base64url(HMAC-SHA256(secret, context + payload segment))`,
 * the payload `{"v":1,"k":<key id>,"r":<run id>,"p":<interrupt path>,"t":<paused at>,"e":<expires at>}`.
 * The key id names which of the configured secrets signed it, so secrets rotate: sign with the
 * first, verify with any.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConfigurationError } from '../core';

/** What a callback token binds: one pause of one interrupt of one run, and until when it answers it. */
export interface CallbackTokenClaim {
  /** The top-level run. */
  runId: string;
  /** The interrupt's path from the top-level run: `approve`, or `child.approve` in compose step `child`. */
  path: string;
  /** When the run reached the interrupt (the pause the token answers), epoch ms. */
  pausedAt: number;
  /** The token is accepted while the clock is before this, epoch ms. */
  expiresAt: number;
}

/** What {@link CallbackTokens.verify} found. */
export type CallbackTokenCheck =
  /** Signed with one of the secrets, and not expired. */
  | { ok: true; claim: CallbackTokenClaim }
  /** Signed with one of the secrets, but expired: `claim` is genuine. */
  | { ok: false; reason: 'expired'; claim: CallbackTokenClaim }
  /** Not a token of this app: malformed, altered, forged, or signed with a secret it does not have. */
  | { ok: false; reason: 'invalid' };

/** The payload's format version. */
const VERSION = 1;
/** Bound into every signature: a MAC of this format is never valid as another one's. */
const CONTEXT = 'nest-reactor/callback-token/v1.';
/** A secret's key id is an HMAC of this with the secret (its first 8 base64url characters). */
const KEY_ID_LABEL = 'nest-reactor/callback-token/key-id';
/** Shortest secret accepted, in characters. */
export const MIN_CALLBACK_SECRET_LENGTH = 32;
/** Longest token looked at: anything longer is refused before it is decoded. */
export const MAX_CALLBACK_TOKEN_LENGTH = 2048;
/** Bytes of an HMAC-SHA256. */
const MAC_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

interface Key {
  id: string;
  secret: string;
}

/**
 * Signs and verifies callback tokens with a list of secrets: the first signs, any verifies (rotate
 * by putting the new secret first, and drop the old one once the tokens it signed have expired).
 * Nest-free and clock-free: `verify` takes the time.
 */
export class CallbackTokens {
  private readonly keys: readonly Key[];

  /** @throws ConfigurationError (option `secret`) for a missing, short or repeated secret. */
  constructor(secret: string | readonly string[]) {
    const secrets = callbackSecrets(secret);
    this.keys = secrets.map((s) => ({ id: keyIdOf(s), secret: s }));
  }

  /** The key id of the secret that signs (the first). */
  get signingKeyId(): string {
    return this.keys[0].id;
  }

  /** The token of `claim`, signed with the first secret. The same claim always gives the same token. */
  sign(claim: CallbackTokenClaim): string {
    const problem = claimProblem(claim);
    if (problem) throw new TypeError(`Cannot sign a callback token: ${problem}.`);
    const key = this.keys[0];
    const payload = JSON.stringify({
      v: VERSION,
      k: key.id,
      r: claim.runId,
      p: claim.path,
      t: claim.pausedAt,
      e: claim.expiresAt,
    });
    const segment = Buffer.from(payload, 'utf8').toString('base64url');
    return `${segment}.${mac(key.secret, segment).toString('base64url')}`;
  }

  /**
   * Whether `token` is one of this app's and is not expired at `now` (it is accepted while
   * `now < expiresAt`). The signature is checked first, in constant time, so an expired answer is
   * only ever given for a genuine token.
   */
  verify(token: unknown, now: number): CallbackTokenCheck {
    const invalid: CallbackTokenCheck = { ok: false, reason: 'invalid' };
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_CALLBACK_TOKEN_LENGTH) return invalid;
    const parts = token.split('.');
    if (parts.length !== 2) return invalid;
    const [segment, signature] = parts;
    const payloadBytes = canonicalBase64url(segment);
    const given = canonicalBase64url(signature);
    if (!payloadBytes || !given || given.length !== MAC_BYTES) return invalid;
    let payload: unknown;
    try {
      payload = JSON.parse(payloadBytes.toString('utf8'));
    } catch {
      return invalid;
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return invalid;
    const { v, k } = payload as { v?: unknown; k?: unknown };
    if (v !== VERSION || typeof k !== 'string') return invalid;
    // Every secret with that key id is tried (one, unless two secrets collide on 48 bits).
    let genuine = false;
    for (const key of this.keys) {
      if (key.id !== k) continue;
      if (timingSafeEqual(mac(key.secret, segment), given)) genuine = true;
    }
    if (!genuine) return invalid;
    const { r, p, t, e } = payload as { r?: unknown; p?: unknown; t?: unknown; e?: unknown };
    const claim = { runId: r, path: p, pausedAt: t, expiresAt: e } as CallbackTokenClaim;
    if (claimProblem(claim)) return invalid;
    if (!(now < claim.expiresAt)) return { ok: false, reason: 'expired', claim };
    return { ok: true, claim };
  }
}

/** The secrets of a `secret` option, checked: one string, or a non-empty list, each of 32 characters or more, no repeats. */
export function callbackSecrets(secret: unknown): string[] {
  const list: readonly unknown[] = Array.isArray(secret) ? secret : [secret];
  const expected =
    `a string of at least ${MIN_CALLBACK_SECRET_LENGTH} characters (a random one: ` +
    "require('node:crypto').randomBytes(32).toString('base64url')), or a non-empty list of them " +
    '(the first signs, any verifies: rotate by putting the new one first)';
  if (secret === undefined)
    throw new ConfigurationError(
      `ReactorCallbackModule needs the option 'secret': ${expected}. It signs the callback tokens; keep it out of the code (an environment variable, a secret manager).`,
      'secret',
    );
  if (list.length === 0 || list.some((s) => typeof s !== 'string' || s.length < MIN_CALLBACK_SECRET_LENGTH)) {
    const shown = list.map((s) => (typeof s === 'string' ? `a string of ${s.length} characters` : typeof s));
    throw new ConfigurationError(
      `ReactorCallbackModule's option 'secret' must be ${expected} (got ${Array.isArray(secret) ? `[${shown.join(', ')}]` : shown[0]}).`,
      'secret',
    );
  }
  if (new Set(list).size !== list.length)
    throw new ConfigurationError("ReactorCallbackModule's option 'secret' lists the same secret twice.", 'secret');
  return list as string[];
}

/** The key id of `secret`: not the secret, nor anything that helps guess it. */
function keyIdOf(secret: string): string {
  return createHmac('sha256', secret).update(KEY_ID_LABEL).digest('base64url').slice(0, 8);
}

function mac(secret: string, segment: string): Buffer {
  return createHmac('sha256', secret).update(CONTEXT).update(segment).digest();
}

/**
 * The bytes of `text` if it is base64url in its one canonical spelling (no padding, unused bits
 * zero), else undefined: a decoder that ignores the unused bits of the last character would let a
 * token altered there verify.
 */
function canonicalBase64url(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

/** What is wrong with a claim, or undefined. */
function claimProblem(claim: CallbackTokenClaim): string | undefined {
  if (typeof claim !== 'object' || claim === null) return 'the claim must be an object';
  const { runId, path, pausedAt, expiresAt } = claim;
  if (typeof runId !== 'string' || runId.length === 0) return 'runId must be a non-empty string';
  if (typeof path !== 'string' || path.length === 0) return 'path must be a non-empty string';
  if (!Number.isSafeInteger(pausedAt) || pausedAt < 0) return 'pausedAt must be an epoch time in ms';
  if (!Number.isSafeInteger(expiresAt) || expiresAt <= pausedAt)
    return 'expiresAt must be an epoch time after pausedAt';
  return undefined;
}
