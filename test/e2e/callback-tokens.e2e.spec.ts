/**
 * Callback tokens end to end (issue 25), and the token probe: a Nest app on the Redis runtime with
 * `ReactorCallbackModule`, over its real HTTP server (supertest). A run pauses at an interrupt
 * declared with `token`; its paused outcome (and `get`, `wait`, `callbackToken`) carries the token
 * and its URL; a POST with it answers the interrupt (202) and the run completes with the payload;
 * the same token again gets 409; forged tokens (another run id, step, pause or expiry, a bad
 * signature, another secret), an expired one, a body that is not JSON and an invalid payload are
 * refused, and the run is still paused with nothing counted, claimed or run.
 */
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { CallbackTokens, ReactorCallbackModule } from '../../lib/callback';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { PausedOutcome, RunOutcome } from '../../lib/core/results/run-outcome';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { reactorRedisOption } from '../setup/redis';
import { pollUntil, useRedisPrefixes } from './e2e.fixtures';

const SECRET = 'cb25-e2e-secret-0123456789abcdef0123456789';
const OLD_SECRET = 'cb25-e2e-old-secret-0123456789abcdef012345';
const OTHER_SECRET = 'cb25-e2e-other-secret-0123456789abcdef0123';
const BASE_URL = 'https://api.example.test';
const PATH = 'hooks/reactor';
const JSON_TYPE = { 'content-type': 'application/json' };
const WAIT = { timeoutMs: 15_000 };

type Decision = { approved: boolean; by: string };

const decisionContract = { approved: { type: 'boolean' }, by: { type: 'string', minLength: 1 } } as const;

/** interrupt `approve` (token for 60 s, a Decision payload, 3 attempts), then `finish` reads it. */
@Reactor('cb25-approval')
class ApprovalReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    const decision = r.interrupt<Decision>('approve', {
      token: { expiresInMs: 60_000 },
      payload: decisionContract,
      maxAttempts: 3,
    });
    return r.step(
      'finish',
      (args: { orderId: string; decision: Decision }) =>
        success(`${args.orderId}:${args.decision.approved ? 'approved' : 'declined'} by ${args.decision.by}`),
      { orderId, decision },
    );
  }
}

/** A token that expires one second after the pause. */
@Reactor('cb25-short')
class ShortReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const decision = r.interrupt<Decision>('approve', { token: { expiresInMs: 1000 }, payload: decisionContract });
    return r.step('finish', (args: { decision: Decision }) => success(args.decision.by), { decision });
  }
}

/** No token: nothing is handed out for it. */
@Reactor('cb25-plain')
class PlainReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.interrupt('approve');
  }
}

/** Composes the approval: its interrupt's path is `child.approve`. */
@Reactor('cb25-parent')
class ParentReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    return r.compose('child', ApprovalReactor, { orderId });
  }
}

/** The token with its payload changed by `change` and its signature kept: what a forger can do. */
function forged(token: string, change: (payload: Record<string, unknown>) => void): string {
  const [segment, signature] = token.split('.');
  const payload = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(payload);
  return `${Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')}.${signature}`;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The base64url character with its lowest bit flipped. */
function lowBitFlipped(char: string): string {
  return ALPHABET[ALPHABET.indexOf(char) ^ 1];
}

function pausedOf(outcome: RunOutcome): PausedOutcome {
  if (outcome.status !== 'paused') throw new Error(`expected a paused run, got ${outcome.status}`);
  return outcome;
}

describe('callback tokens on the Redis runtime, over HTTP (issue 25)', () => {
  const { prefix } = useRedisPrefixes();
  let app: INestApplication;
  let client: ReactorClient;
  let closeRedis: () => Promise<void>;
  const http = () => request(app.getHttpServer());
  const post = (token: string, body: unknown) =>
    http()
      .post(`/${PATH}/${token}`)
      .set(JSON_TYPE)
      .send(body as object);

  beforeAll(async () => {
    const connection = reactorRedisOption();
    closeRedis = () => connection.close();
    const module = await Test.createTestingModule({
      imports: [
        ReactorModule.forRoot({ redis: connection.redis, prefix: prefix('cb25') }),
        // The new secret first (signs), the old one still verifies.
        ReactorCallbackModule.forRoot({ secret: [SECRET, OLD_SECRET], path: PATH, baseUrl: `${BASE_URL}/` }),
      ],
      providers: [ApprovalReactor, ShortReactor, PlainReactor, ParentReactor],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.init();
    client = app.get(ReactorClient);
  });
  afterAll(async () => {
    await app?.close();
    await closeRedis?.();
  });

  /** The run's stored state as far as an answer could change it. */
  async function snapshot(runId: string) {
    const view = await client.get(runId);
    return {
      status: view?.status,
      completed: view?.completed,
      interrupts: view?.interrupts,
      updatedAt: view?.updatedAt,
      trace: view?.trace.length,
    };
  }

  it('hands out the token on the paused outcome, get, wait and callbackToken, with its URL and expiry', async () => {
    const paused = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-1' }));
    const [pending] = paused.waitingFor;
    expect(pending.callback).toEqual({
      token: expect.stringMatching(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/),
      expiresAt: pending.pausedAt + 60_000,
      url: `${BASE_URL}/${PATH}/${pending.callback!.token}`,
    });
    // Deterministic: computed from the stored record, the same wherever it is asked for.
    expect(pausedOf((await client.get(paused.runId))!.outcome).waitingFor[0].callback).toEqual(pending.callback);
    expect(pausedOf(await client.wait(paused.runId, WAIT)).waitingFor[0].callback).toEqual(pending.callback);
    expect(await client.callbackToken(paused.runId, 'approve')).toEqual(pending.callback);

    const plain = pausedOf(await client.run(PlainReactor, {}));
    expect(plain.waitingFor[0].callback).toBeUndefined();
    await expect(client.callbackToken(plain.runId, 'approve')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.callbackToken(plain.runId, 'nope')).rejects.toMatchObject({ code: 'INTERRUPT_NOT_FOUND' });
  });

  it('a POST with the token answers the interrupt (202) and the run completes with the payload; the token again is 409', async () => {
    const paused = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-2' }));
    const { token } = paused.waitingFor[0].callback!;

    const accepted = await post(token, { approved: true, by: 'ana' }).expect(202);
    expect(accepted.body).toEqual({ runId: paused.runId, step: 'approve', accepted: 'deferred', status: 'dispatched' });
    const done = await client.wait(paused.runId, WAIT);
    expect(done).toMatchObject({ status: 'completed', value: 'o-2:approved by ana' });
    expect(done.results.approve).toEqual({ approved: true, by: 'ana' });

    const before = await snapshot(paused.runId);
    const replayed = await post(token, { approved: false, by: 'mallory' }).expect(409);
    expect(replayed.body).toMatchObject({ statusCode: 409, code: 'ALREADY_RESUMED' });
    expect(await snapshot(paused.runId)).toEqual(before);
    expect((await client.get(paused.runId))!.value).toBe('o-2:approved by ana');
  }, 30_000);

  it('of two POSTs of one token at once, one is accepted and the other is 409', async () => {
    const paused = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-3' }));
    const { token } = paused.waitingFor[0].callback!;
    const answers = await Promise.all([
      post(token, { approved: true, by: 'first' }),
      post(token, { approved: true, by: 'second' }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    expect(answers.find((a) => a.status === 409)!.body.code).toBe('ALREADY_RESUMED');
    const done = await client.wait(paused.runId, WAIT);
    expect(done.status === 'completed' && done.value).toMatch(/^o-3:approved by (first|second)$/);
  }, 30_000);

  it('the token probe: forged tokens get 401 and change nothing (nothing claimed, no attempt counted)', async () => {
    const paused = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-4' }));
    const other = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-5' }));
    const { token, expiresAt } = paused.waitingFor[0].callback!;
    const [segment, signature] = token.split('.');
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    const before = await snapshot(paused.runId);
    const otherBefore = await snapshot(other.runId);

    const forgeries: Record<string, string> = {
      'another run id': forged(token, (p) => (p.r = other.runId)),
      'another step': forged(token, (p) => (p.p = 'finish')),
      'a later expiry': forged(token, (p) => (p.e = expiresAt + 365 * 24 * 3600_000)),
      'another pause': forged(token, (p) => (p.t = (p.t as number) + 1)),
      'another key id': forged(token, (p) => (p.k = 'AAAAAAAA')),
      'a bad signature': `${segment}.${flip(signature, 5)}`,
      'a signature of another token': `${segment}.${other.waitingFor[0].callback!.token.split('.')[1]}`,
      // Only the unused low bits of the last character: a lenient decoder reads the same bytes.
      'unused bits of the signature set': `${segment}.${signature.slice(0, -1)}${lowBitFlipped(signature.at(-1)!)}`,
      'another secret': new CallbackTokens(OTHER_SECRET).sign({
        runId: paused.runId,
        path: 'approve',
        pausedAt: paused.waitingFor[0].pausedAt,
        expiresAt,
      }),
      'no signature': segment,
      garbage: 'not-a-token',
    };
    for (const [what, forgery] of Object.entries(forgeries)) {
      const answer = await post(forgery, { approved: true, by: 'mallory' });
      expect({ what, status: answer.status, code: answer.body.code }).toEqual({
        what,
        status: 401,
        code: 'CALLBACK_TOKEN_INVALID',
      });
      expect(answer.body.message).toBe('The callback token is not valid.');
    }
    // Signed with the app's own secret, but for another pause of the interrupt, or for no run.
    const signed = new CallbackTokens(SECRET);
    const pausedAt = paused.waitingFor[0].pausedAt;
    const earlier = signed.sign({ runId: paused.runId, path: 'approve', pausedAt: pausedAt - 1, expiresAt });
    const stale = await post(earlier, { approved: true, by: 'mallory' }).expect(401);
    expect(stale.body).toMatchObject({
      code: 'CALLBACK_TOKEN_INVALID',
      message: expect.stringMatching(/another pause/),
    });
    const nobody = signed.sign({ runId: 'no-such-run', path: 'approve', pausedAt, expiresAt });
    expect((await post(nobody, { approved: true, by: 'x' }).expect(404)).body.code).toBe('RUN_NOT_FOUND');
    expect(await snapshot(paused.runId)).toEqual(before);
    expect(await snapshot(other.runId)).toEqual(otherBefore);

    // Still paused with all three attempts: an invalid payload now is the first one counted.
    const invalid = await post(token, { approved: 'yes', by: '' }).expect(400);
    expect(invalid.body).toMatchObject({ code: 'PAYLOAD_INVALID', attemptsLeft: 2, runFailed: false });
    expect(Object.keys(invalid.body.fieldErrors as object).sort()).toEqual(['approved', 'by']);
    expect(invalid.body.message).toContain('approved');
    expect((await client.get(paused.runId))!.status).toBe('paused');

    // A token signed with the old secret still verifies (rotation), and answers the run.
    const old = new CallbackTokens(OLD_SECRET).sign({
      runId: paused.runId,
      path: 'approve',
      pausedAt: paused.waitingFor[0].pausedAt,
      expiresAt,
    });
    await post(old, { approved: false, by: 'ops' }).expect(202);
    expect(await client.wait(paused.runId, WAIT)).toMatchObject({ status: 'completed', value: 'o-4:declined by ops' });
    expect((await client.get(other.runId))!.status).toBe('paused');
  }, 30_000);

  it('an expired token gets 401 CALLBACK_TOKEN_EXPIRED and changes nothing; the run still takes an answer', async () => {
    const paused = pausedOf(await client.run(ShortReactor, {}));
    const { token, expiresAt } = paused.waitingFor[0].callback!;
    expect(expiresAt).toBe(paused.waitingFor[0].pausedAt + 1000);
    await pollUntil(() => Date.now() > expiresAt, 5_000);
    const before = await snapshot(paused.runId);
    const expired = await post(token, { approved: true, by: 'late' }).expect(401);
    expect(expired.body).toMatchObject({ code: 'CALLBACK_TOKEN_EXPIRED' });
    expect(expired.body.message).toContain(new Date(expiresAt).toISOString());
    expect(await snapshot(paused.runId)).toEqual(before);
    // A forged expiry on it is still only invalid, never "expired" (the signature is checked first).
    const extended = await post(
      forged(token, (p) => (p.e = Date.now() + 60_000)),
      { approved: true, by: 'late' },
    ).expect(401);
    expect(extended.body.code).toBe('CALLBACK_TOKEN_INVALID');
    // The expired token's callback is still reported (with its past expiresAt); the app answers another way.
    expect(await client.callbackToken(paused.runId, 'approve')).toEqual({ token, expiresAt, url: expect.any(String) });
    const answered = await client.continue(paused.runId, 'approve', { approved: true, by: 'app' });
    expect(answered).toMatchObject({ accepted: 'applied', outcome: { status: 'completed', value: 'app' } });
  }, 30_000);

  it('a body that is not JSON gets 415, an invalid payload 400 naming the field, and the run stays paused', async () => {
    const paused = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-6' }));
    const { token } = paused.waitingFor[0].callback!;
    const before = await snapshot(paused.runId);
    await http().post(`/${PATH}/${token}`).set('content-type', 'text/plain').send('approved').expect(415);
    expect(await snapshot(paused.runId)).toEqual(before);

    const invalid = await post(token, { approved: true, by: '' }).expect(400);
    expect(invalid.body).toMatchObject({
      statusCode: 400,
      code: 'PAYLOAD_INVALID',
      fieldErrors: { by: [expect.any(String)] },
      attemptsLeft: 2,
    });
    expect((await client.get(paused.runId))!.status).toBe('paused');
    await post(token, { approved: true, by: 'bo' }).expect(202);
    expect(await client.wait(paused.runId, WAIT)).toMatchObject({ status: 'completed', value: 'o-6:approved by bo' });
  }, 30_000);

  it("a composed child's interrupt: the token names its path, and answers it", async () => {
    const paused = pausedOf(await client.run(ParentReactor, { orderId: 'o-7' }));
    expect(paused.waitingFor.map((w) => w.path)).toEqual(['child.approve']);
    const callback = paused.waitingFor[0].callback!;
    expect(await client.callbackToken(paused.runId, ['child', 'approve'])).toEqual(callback);
    const answer = await post(callback.token, { approved: true, by: 'cy' }).expect(202);
    expect(answer.body).toMatchObject({ runId: paused.runId, step: 'child.approve' });
    expect(await client.wait(paused.runId, WAIT)).toMatchObject({ status: 'completed', value: 'o-7:approved by cy' });
  }, 30_000);

  it('a cancelled run: its token gets 409 RUN_NOT_PAUSED and nothing runs', async () => {
    const paused = pausedOf(await client.run(ApprovalReactor, { orderId: 'o-8' }));
    const { token } = paused.waitingFor[0].callback!;
    await client.cancel(paused.runId, 'no longer needed');
    await pollUntil(async () => (await client.get(paused.runId))?.status === 'cancelled', 10_000);
    const before = await snapshot(paused.runId);
    const answer = await post(token, { approved: true, by: 'late' }).expect(409);
    expect(answer.body.code).toBe('RUN_NOT_PAUSED');
    expect(await snapshot(paused.runId)).toEqual(before);
  }, 30_000);
});
