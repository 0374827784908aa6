/**
 * `encryptInputs` end to end on Redis and BullMQ: a run that goes through a worker, a composed
 * child and a fan-out map leaves no input in clear in any key of the module (run records, map
 * keys, BullMQ jobs, indexes); a process with another key cannot read the runs and leaves them as
 * they are; a module without a cipher refuses to boot and closes what it opened.
 */
import { randomBytes } from 'node:crypto';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { createAesGcmInputCipher } from '../../lib/storage/aes-gcm-input.cipher';
import { RedisKeys, RedisReactorStorage } from '../../lib/storage/redis';
import { SECRET } from '../conformance/test-cipher';
import { cleanupPrefix, createTestRedis, scanKeys, uniquePrefix } from '../setup/redis';
import { createRedisApp, quitAndWait, StepLog } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };
const key = randomBytes(32);
const cipher = createAesGcmInputCipher({ keys: { k1: key }, current: 'k1' });

/** Uses the card (and logs its undo, with the card it was given, in this process). */
@Step('e2e-enc-use-card')
class UseCardStep {
  constructor(private readonly log: StepLog) {}
  run({ card, sku }: { card: string; sku: string }, ctx: StepContext) {
    if (sku === 'boom') throw new Error('out of stock');
    return success(`${ctx.stepName}:${card.length}:${sku}`);
  }
  undo(_result: unknown, { card }: { card: string; sku: string }, ctx: StepContext) {
    this.log.add(ctx.runId.split('/')[0].split(':')[0], `undo:${ctx.stepName}:${card === SECRET ? 'card' : 'other'}`);
  }
}

@Reactor('e2e-enc-line')
class LineReactor implements ReactorBlueprint<{ card: string; sku: string }> {
  build(r: ReactorBuilder<{ card: string; sku: string }>) {
    return r.step('reserve', UseCardStep, {
      card: r.input('card', { type: 'string' }),
      sku: r.input('sku', { type: 'string' }),
    });
  }
}

@Reactor('e2e-enc-payment')
class PaymentReactor implements ReactorBlueprint<{ card: string }> {
  build(r: ReactorBuilder<{ card: string }>) {
    return r.step('charge', UseCardStep, { card: r.input('card', { type: 'string' }), sku: r.value('-') });
  }
}

@Reactor('e2e-enc-checkout', { encryptInputs: true, background: { all: true } })
class CheckoutReactor implements ReactorBlueprint<{ card: string; skus: string[] }> {
  build(r: ReactorBuilder<{ card: string; skus: string[] }>) {
    const card = r.input('card', { type: 'string', redact: true });
    const hold = r.step('hold', UseCardStep, { card, sku: r.value('-') });
    const pay = r.compose('pay', PaymentReactor, { card }, { waitFor: [hold] });
    return r.map('lines', {
      source: r.input('skus', { type: 'array' }),
      element: LineReactor,
      inputs: (sku) => ({ card, sku }),
      fanOut: { batchSize: 2 },
      waitFor: [pay],
    });
  }
}

const PROVIDERS = [UseCardStep, LineReactor, PaymentReactor, CheckoutReactor];

/** Every value stored under `prefix`, whatever the key's type, as text. */
async function everyValue(redis: Redis, prefix: string): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const k of await scanKeys(redis, `${prefix}*`)) {
    const type = await redis.type(k);
    const value =
      type === 'string'
        ? await redis.get(k)
        : type === 'hash'
          ? await redis.hgetall(k)
          : type === 'list'
            ? await redis.lrange(k, 0, -1)
            : type === 'set'
              ? await redis.smembers(k)
              : type === 'zset'
                ? await redis.zrange(k, 0, -1)
                : type === 'stream'
                  ? await redis.xrange(k, '-', '+')
                  : `[${type}]`;
    out.push([k, JSON.stringify(value)]);
  }
  return out;
}

describe('encryptInputs on Redis and BullMQ (e2e)', () => {
  const prefix = uniquePrefix('e2e-enc');
  let redis: Redis;
  let app: TestingModule;
  let client: ReactorClient;
  let log: StepLog;

  beforeAll(async () => {
    redis = createTestRedis();
    ({ app, client, log } = await createRedisApp(
      prefix,
      { inputCipher: cipher, sweeper: { enabled: false } },
      { providers: PROVIDERS },
    ));
  });

  afterAll(async () => {
    await app?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('leaves no input in clear in any key of the module, through a worker, a child and a fan-out map', async () => {
    const started = await client.start(CheckoutReactor, { card: SECRET, skus: ['a', 'b', 'c'] });
    const outcome = await client.wait(started.runId, WAIT);
    expect(outcome).toMatchObject({ status: 'completed' });

    const failed = await client.wait(
      (await client.start(CheckoutReactor, { card: SECRET, skus: ['a', 'boom', 'c'] })).runId,
      WAIT,
    );
    expect(failed.status).toBe('failed');
    // The undos got the card back from the sealed fields.
    expect(log.of(failed.runId)).toEqual(expect.arrayContaining(['undo:charge:card', 'undo:hold:card']));

    const values = await everyValue(redis, prefix);
    expect(values.length).toBeGreaterThan(10);
    expect(values.filter(([, value]) => value.includes(SECRET)).map(([k]) => k)).toEqual([]);
    const view = await client.get(outcome.runId);
    expect(view?.inputs).toEqual({ card: '[REDACTED]', skus: ['a', 'b', 'c'] });
  });

  it('a process with another key cannot read the run (a ConfigurationError naming the option) and leaves it as it is', async () => {
    const started = await client.start(CheckoutReactor, { card: SECRET, skus: ['a'] });
    await client.wait(started.runId, WAIT);
    const keys = new RedisKeys({ prefix });
    const stranger = new RedisReactorStorage(redis, {
      keys,
      inputCipher: createAesGcmInputCipher({ keys: { k1: randomBytes(32) }, current: 'k1' }),
    });
    await expect(stranger.load(started.runId)).rejects.toMatchObject({
      name: 'ConfigurationError',
      option: 'inputCipher',
      message: expect.stringContaining('with the key the value was encrypted with'),
    });
    const owner = new RedisReactorStorage(redis, { keys, inputCipher: cipher });
    expect((await owner.load(started.runId))?.inputs).toEqual({ card: SECRET, skus: ['a'] });
  });
});
