/**
 * Callback tokens (issue 25), without Redis: the signer (sign and verify, rotation, any altered
 * byte refused, the expiry boundary, the constant-time comparison), the `token` option of an
 * interrupt, `ReactorCallbackModule`'s options (no secret: no boot), and the module on the embedded
 * runtime (the client hands out tokens only with it).
 */
// The module object itself (a namespace import is a copy whose properties cannot be spied on).
import nodeCrypto from 'node:crypto';
import { Test } from '@nestjs/testing';
import { CallbackTokens, ReactorCallbackModule } from '../../lib/callback';
import { CallbackIssuer } from '../../lib/callback/callback-issuer';
import { resolveCallbackOptions } from '../../lib/callback/callback.options';
import { ConfigurationError, defineReactor, type ReactorBuilder, type ReactorBlueprint } from '../../lib';
import type { InterruptSpec } from '../../lib/core/definition/interrupt-spec';
import type { PausedOutcome } from '../../lib/core/results/run-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { CapturingLogger } from '../nest/fixtures';

const SECRET = 'unit-secret-0123456789abcdef0123456789abcdef';
const OLD = 'unit-old-secret-0123456789abcdef0123456789ab';
const CLAIM = { runId: 'run-1', path: 'child.approve', pausedAt: 1_700_000_000_000, expiresAt: 1_700_000_060_000 };
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('CallbackTokens', () => {
  const tokens = new CallbackTokens(SECRET);

  it('signs a claim into payload.signature, the same token every time, and verifies it', () => {
    const token = tokens.sign(CLAIM);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(tokens.sign({ ...CLAIM })).toBe(token);
    expect(new CallbackTokens(SECRET).sign(CLAIM)).toBe(token);
    expect(tokens.verify(token, CLAIM.pausedAt)).toEqual({ ok: true, claim: CLAIM });
    const payload = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8'));
    expect(payload).toEqual({
      v: 1,
      k: tokens.signingKeyId,
      r: 'run-1',
      p: 'child.approve',
      t: CLAIM.pausedAt,
      e: CLAIM.expiresAt,
    });
    // The key id is not the secret, nor a prefix of it.
    expect(SECRET).not.toContain(tokens.signingKeyId);
    // Each part of the claim changes the token.
    for (const change of [
      { runId: 'run-2' },
      { path: 'approve' },
      { pausedAt: CLAIM.pausedAt + 1 },
      { expiresAt: CLAIM.expiresAt + 1 },
    ])
      expect(tokens.sign({ ...CLAIM, ...change })).not.toBe(token);
  });

  it('refuses to sign a claim that is not one', () => {
    expect(() => tokens.sign({ ...CLAIM, runId: '' })).toThrow(/runId/);
    expect(() => tokens.sign({ ...CLAIM, expiresAt: CLAIM.pausedAt })).toThrow(/expiresAt/);
    expect(() => tokens.sign({ ...CLAIM, pausedAt: 1.5 })).toThrow(/pausedAt/);
  });

  it('rotates: signs with the first secret, verifies with any of them', () => {
    const rotated = new CallbackTokens([SECRET, OLD]);
    const byOld = new CallbackTokens(OLD).sign(CLAIM);
    const byNew = rotated.sign(CLAIM);
    expect(byNew).toBe(tokens.sign(CLAIM));
    expect(rotated.verify(byOld, CLAIM.pausedAt)).toEqual({ ok: true, claim: CLAIM });
    expect(rotated.verify(byNew, CLAIM.pausedAt)).toEqual({ ok: true, claim: CLAIM });
    expect(new CallbackTokens([OLD, SECRET]).verify(byNew, CLAIM.pausedAt).ok).toBe(true);
    // The old secret dropped: its tokens are refused; a module without the new one refuses the new ones.
    expect(tokens.verify(byOld, CLAIM.pausedAt)).toEqual({ ok: false, reason: 'invalid' });
    expect(new CallbackTokens(OLD).verify(byNew, CLAIM.pausedAt)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('refuses the token with any one character changed, added or removed', () => {
    const token = tokens.sign(CLAIM);
    let tried = 0;
    for (let at = 0; at < token.length; at++) {
      for (const char of `${ALPHABET}.=+/ `) {
        if (char === token[at]) continue;
        const altered = token.slice(0, at) + char + token.slice(at + 1);
        expect({ altered, check: tokens.verify(altered, CLAIM.pausedAt) }).toEqual({
          altered,
          check: { ok: false, reason: 'invalid' },
        });
        tried++;
      }
      expect(tokens.verify(token.slice(0, at) + token.slice(at + 1), CLAIM.pausedAt).ok).toBe(false);
      expect(tokens.verify(token.slice(0, at) + 'A' + token.slice(at), CLAIM.pausedAt).ok).toBe(false);
    }
    expect(tried).toBeGreaterThan(token.length * 60);
    expect(tokens.verify(`${token}.`, CLAIM.pausedAt).ok).toBe(false);
    expect(tokens.verify(`${token}=`, CLAIM.pausedAt).ok).toBe(false);
  });

  it('refuses a signature whose unused low bits are set, though a lenient decoder reads the same bytes', () => {
    const token = tokens.sign(CLAIM);
    const [segment, signature] = token.split('.');
    const last = ALPHABET.indexOf(signature.at(-1)!);
    const altered = `${signature.slice(0, -1)}${ALPHABET[last ^ 1]}`;
    expect(Buffer.from(altered, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
    expect(tokens.verify(`${segment}.${altered}`, CLAIM.pausedAt)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('refuses a payload changed and re-encoded with the signature kept (run, path, pause, expiry, key, version)', () => {
    const token = tokens.sign(CLAIM);
    const [segment, signature] = token.split('.');
    const payload = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
    for (const change of [
      { r: 'run-2' },
      { p: 'approve' },
      { t: CLAIM.pausedAt - 1 },
      { e: CLAIM.expiresAt + 1 },
      { k: 'x' },
      { v: 2 },
    ]) {
      const forged = `${Buffer.from(JSON.stringify({ ...payload, ...change })).toString('base64url')}.${signature}`;
      expect(tokens.verify(forged, CLAIM.pausedAt)).toEqual({ ok: false, reason: 'invalid' });
    }
    // Another secret's signature over the same claim.
    expect(tokens.verify(new CallbackTokens(OLD).sign(CLAIM), CLAIM.pausedAt)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  it('refuses what is not a token at all', () => {
    for (const junk of ['', '.', 'a.b.c', 'abc', `${'A'.repeat(3000)}.x`, 42, null, undefined, {}])
      expect(tokens.verify(junk, 0)).toEqual({ ok: false, reason: 'invalid' });
    // A well-formed MAC over a payload that is not JSON, or not an object.
    const macOf = (segment: string) =>
      nodeCrypto
        .createHmac('sha256', SECRET)
        .update('nest-reactor/callback-token/v1.')
        .update(segment)
        .digest('base64url');
    for (const body of ['not json', '[1]', '"s"']) {
      const segment = Buffer.from(body).toString('base64url');
      expect(tokens.verify(`${segment}.${macOf(segment)}`, 0)).toEqual({ ok: false, reason: 'invalid' });
    }
  });

  it('expires at expiresAt: accepted just before, expired from then on (only a genuine token is told so)', () => {
    const token = tokens.sign(CLAIM);
    expect(tokens.verify(token, CLAIM.expiresAt - 1)).toEqual({ ok: true, claim: CLAIM });
    expect(tokens.verify(token, CLAIM.expiresAt)).toEqual({ ok: false, reason: 'expired', claim: CLAIM });
    expect(tokens.verify(token, CLAIM.expiresAt + 86_400_000)).toEqual({ ok: false, reason: 'expired', claim: CLAIM });
    const other = new CallbackTokens(OLD).sign(CLAIM);
    expect(tokens.verify(other, CLAIM.expiresAt + 1)).toEqual({ ok: false, reason: 'invalid' });
  });

  describe('the comparison of signatures', () => {
    afterEach(() => jest.restoreAllMocks());

    it('is crypto.timingSafeEqual, for a right and a wrong signature alike', () => {
      const spy = jest.spyOn(nodeCrypto, 'timingSafeEqual');
      const token = tokens.sign(CLAIM);
      const [segment, signature] = token.split('.');
      expect(tokens.verify(token, CLAIM.pausedAt).ok).toBe(true);
      expect(spy).toHaveBeenCalledTimes(1);
      const wrong = Buffer.from(signature, 'base64url');
      wrong[31] ^= 0x80;
      expect(tokens.verify(`${segment}.${wrong.toString('base64url')}`, CLAIM.pausedAt).ok).toBe(false);
      expect(spy).toHaveBeenCalledTimes(2);
      // Both buffers were full MACs: the comparison never depends on a length.
      for (const [a, b] of spy.mock.calls) expect([(a as Buffer).length, (b as Buffer).length]).toEqual([32, 32]);
    });

    it('is never a string comparison: a signature of another length is refused before any', () => {
      const spy = jest.spyOn(nodeCrypto, 'timingSafeEqual');
      const [segment, signature] = tokens.sign(CLAIM).split('.');
      expect(tokens.verify(`${segment}.${signature.slice(0, 40)}`, CLAIM.pausedAt).ok).toBe(false);
      expect(spy).not.toHaveBeenCalled();
    });
  });

  it('needs a secret of 32 characters or more, or a non-empty list of distinct ones (ConfigurationError on secret)', () => {
    const refused = (secret: unknown) => {
      try {
        new CallbackTokens(secret as string);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigurationError);
        expect((error as ConfigurationError).option).toBe('secret');
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused(undefined)).toMatch(/needs the option 'secret'/);
    expect(refused('short')).toMatch(
      /'secret' must be a string of at least 32 characters.*got a string of 5 characters/,
    );
    expect(refused('short')).not.toContain('short');
    expect(refused([])).toMatch(/'secret' must be/);
    expect(refused([SECRET, 7])).toMatch(/got \[a string of 44 characters, number\]/);
    expect(refused([SECRET, SECRET])).toMatch(/same secret twice/);
    expect(new CallbackTokens([SECRET]).sign(CLAIM)).toBe(tokens.sign(CLAIM));
  });
});

describe('the token option of an interrupt', () => {
  const specOf = (options: object): InterruptSpec => {
    const def = defineReactor('tok', (r: ReactorBuilder<object>) => r.interrupt('approve', options));
    const step = def.stepsByName.get('approve')!;
    if (step.handler.kind !== 'interrupt') throw new Error('not an interrupt');
    return step.handler.interrupt;
  };

  it('takes { expiresInMs } from 1 s to 30 days', () => {
    expect(specOf({ token: { expiresInMs: 1000 } }).token).toEqual({ expiresInMs: 1000 });
    expect(specOf({ token: { expiresInMs: 30 * 86_400_000 } }).token).toEqual({ expiresInMs: 30 * 86_400_000 });
    expect(specOf({}).token).toBeUndefined();
    expect(Object.keys(specOf({}))).not.toContain('token');
  });

  it('refuses anything else, naming the interrupt', () => {
    for (const token of [
      { expiresInMs: 999 },
      { expiresInMs: 30 * 86_400_000 + 1 },
      { expiresInMs: 1500.5 },
      {},
      60_000,
      null,
    ])
      expect(() => specOf({ token })).toThrow(
        /interrupt 'approve': token must be \{ expiresInMs \} with expiresInMs an integer from 1000 to 2592000000/,
      );
    expect(() => specOf({ token: { expiresInMs: 60_000, url: 'x' } })).toThrow(/unknown option 'token.url'/);
  });

  it('does not change the definition hash (runs paused before the option was added go on)', () => {
    const hash = (options: object) =>
      defineReactor('tok', (r: ReactorBuilder<object>) => r.interrupt('approve', options)).hash;
    expect(hash({ token: { expiresInMs: 60_000 } })).toBe(hash({}));
  });
});

describe('ReactorCallbackModule options', () => {
  const refused = (options: unknown): ConfigurationError => {
    try {
      ReactorCallbackModule.forRoot(options as never);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      return error as ConfigurationError;
    }
    throw new Error('accepted');
  };

  it('refuses to boot without a secret, naming the option', () => {
    expect(refused({})).toMatchObject({
      option: 'secret',
      message: expect.stringMatching(/needs the option 'secret'/),
    });
    expect(refused(undefined)).toMatchObject({ option: 'secret' });
    expect(refused({ secret: 'too-short' })).toMatchObject({ option: 'secret' });
  });

  it('checks path, baseUrl, execute, and unknown options', () => {
    expect(refused({ secret: SECRET, path: '../x' })).toMatchObject({ option: 'path' });
    expect(refused({ secret: SECRET, path: 'a//b' })).toMatchObject({ option: 'path' });
    expect(refused({ secret: SECRET, baseUrl: 'ftp://x' })).toMatchObject({ option: 'baseUrl' });
    expect(refused({ secret: SECRET, baseUrl: 'https://x.test/?a=1' })).toMatchObject({ option: 'baseUrl' });
    expect(refused({ secret: SECRET, baseUrl: 'https://u:p@x.test' })).toMatchObject({ option: 'baseUrl' });
    expect(refused({ secret: SECRET, execute: 'later' })).toMatchObject({ option: 'execute' });
    expect(refused({ secret: SECRET, guard: {} })).toMatchObject({
      option: 'guard',
      message: expect.stringMatching(/no option 'guard'/),
    });
  });

  it('defaults the path, and builds the URL prefix from baseUrl (trailing slashes dropped, a path prefix kept)', () => {
    expect(resolveCallbackOptions({ secret: SECRET })).toMatchObject({
      path: 'reactor/callbacks',
      execute: 'background',
    });
    expect(resolveCallbackOptions({ secret: SECRET }).urlPrefix).toBeUndefined();
    expect(resolveCallbackOptions({ secret: SECRET, baseUrl: 'https://api.x.test/' }).urlPrefix).toBe(
      'https://api.x.test/reactor/callbacks/',
    );
    expect(resolveCallbackOptions({ secret: SECRET, baseUrl: 'https://x.test/api', path: '/hooks/' }).urlPrefix).toBe(
      'https://x.test/api/hooks/',
    );
  });
});

describe('CallbackIssuer', () => {
  const def = defineReactor('issuer', (r: ReactorBuilder<object>) => {
    r.interrupt('plain');
    return r.interrupt('approve', { token: { expiresInMs: 5000 } });
  });
  const paused: PausedOutcome = {
    runId: 'r-9',
    reactorName: 'issuer',
    status: 'paused',
    stepName: 'plain',
    results: {},
    trace: [],
    attempts: {},
    waitingFor: [
      { path: 'plain', pausedAt: 1000 },
      { path: 'approve', pausedAt: 2000 },
    ],
  };
  const tokens = new CallbackTokens(SECRET);
  const definitionOf = (name: string) => {
    if (name !== 'issuer') throw new Error(`no ${name}`);
    return def;
  };

  it('adds a callback to the interrupts declared with a token only', () => {
    const out = new CallbackIssuer(tokens, 'https://x.test/cb/').decorate(paused, definitionOf);
    expect(out.waitingFor[0]).toEqual(paused.waitingFor[0]);
    const token = tokens.sign({ runId: 'r-9', path: 'approve', pausedAt: 2000, expiresAt: 7000 });
    expect(out.waitingFor[1].callback).toEqual({ token, expiresAt: 7000, url: `https://x.test/cb/${token}` });
    expect(paused.waitingFor[1].callback).toBeUndefined(); // not mutated
    expect(new CallbackIssuer(tokens).decorate(paused, definitionOf).waitingFor[1].callback).toEqual({
      token,
      expiresAt: 7000,
    });
  });

  it('leaves a run of a reactor this process does not register as it is', () => {
    const unknown = { ...paused, reactorName: 'elsewhere' };
    expect(new CallbackIssuer(tokens).decorate(unknown, definitionOf)).toBe(unknown);
  });
});

@Reactor('cb25-unit-approval')
class UnitApprovalReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.interrupt('approve', { token: { expiresInMs: 60_000 } });
  }
}

describe('the client on the embedded runtime', () => {
  const appWith = async (imports: never[]) => {
    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot(), ...imports],
      providers: [UnitApprovalReactor],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await app.init();
    return app;
  };

  it('hands out no token without ReactorCallbackModule, and callbackToken says what is missing', async () => {
    const app = await appWith([]);
    try {
      const client = app.get(ReactorClient);
      const outcome = await client.run(UnitApprovalReactor, {});
      expect(outcome.status === 'paused' && outcome.waitingFor[0].callback).toBeUndefined();
      await expect(client.callbackToken(outcome.runId, 'approve')).rejects.toMatchObject({
        code: 'CONFIGURATION_INVALID',
        option: 'secret',
        message: expect.stringMatching(/ReactorCallbackModule\.forRoot\(\{ secret \}\)/),
      });
    } finally {
      await app.close();
    }
  });

  it('with the module: the paused outcome carries the callback; callbackToken refuses runs that do not wait there', async () => {
    const app = await appWith([ReactorCallbackModule.forRoot({ secret: SECRET }) as never]);
    try {
      const client = app.get(ReactorClient);
      const outcome = await client.run(UnitApprovalReactor, {});
      if (outcome.status !== 'paused') throw new Error(outcome.status);
      const callback = outcome.waitingFor[0].callback!;
      expect(callback).toEqual({ token: expect.any(String), expiresAt: outcome.waitingFor[0].pausedAt + 60_000 });
      expect(new CallbackTokens(SECRET).verify(callback.token, outcome.waitingFor[0].pausedAt)).toMatchObject({
        ok: true,
        claim: { runId: outcome.runId, path: 'approve' },
      });
      await expect(client.callbackToken('no-such-run', 'approve')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
      await client.continue(outcome.runId, 'approve', 'yes');
      await expect(client.callbackToken(outcome.runId, 'approve')).rejects.toMatchObject({ code: 'RUN_NOT_PAUSED' });
    } finally {
      await app.close();
    }
  });
});
