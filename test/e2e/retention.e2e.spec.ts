/**
 * Retention per status (issue 25) through the module. On Redis: the record of each outcome carries
 * its status's retention as its TTL (read with `PTTL`, not waited for), a run undone after it
 * completed takes the cancelled one, a paused run with an interrupt deadline and a sleeping run are
 * kept past their deadline plus `contextTtlMs`, and `list` still shows a failed run kept longer
 * than `contextTtlMs`. On the embedded runtime (a moved clock): the same retention once `retention`
 * is given, and runs kept as before without it. The options' validation. The adapters' contract:
 * test/conformance/storage.conformance.ts ("retention per status").
 */
import type { TestingModule } from '@nestjs/testing';
import { ConfigurationError } from '../../lib/core/errors';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { failure, halt, success } from '../../lib/core/results/step-outcome';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import type { ReactorModuleOptions } from '../../lib/config/reactor-module-options.interface';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { createEmbeddedApp, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

const MINUTE = 60_000;
const CTX = MINUTE;
const RETENTION = { completed: 2 * MINUTE, failed: 10 * MINUTE, halted: MINUTE / 2, cancelled: 15 * MINUTE };
const WAIT = { timeoutMs: 10_000 };

@Reactor('ret-ok')
class OkReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('work', { run: () => success('done'), undo: () => undefined }, {});
  }
}

@Reactor('ret-fail')
class FailReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('work', () => failure(new Error('declined'), { retryable: false }), {});
  }
}

@Reactor('ret-halt')
class HaltReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('work', () => halt('enough'), {});
  }
}

@Reactor('ret-approve')
class ApproveReactor implements ReactorBlueprint<{ timeoutMs?: number }> {
  build(r: ReactorBuilder<{ timeoutMs?: number }>) {
    const answer = r.interrupt<string>('approve', { payload: { type: 'string' }, timeoutMs: 20 * MINUTE });
    return r.step('use', ({ a }: { a: string }) => success(a), { a: answer });
  }
}

@Reactor('ret-answer')
class OpenApproveReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const answer = r.interrupt<string>('approve', { payload: { type: 'string' } });
    return r.step('use', ({ a }: { a: string }) => success(a), { a: answer });
  }
}

@Reactor('ret-sleep')
class SleepReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    r.sleep('nap', { ms: 10 * MINUTE });
    return r.step('after', () => success('awake'), {}, { waitFor: ['nap'] });
  }
}

const PROVIDERS = [OkReactor, FailReactor, HaltReactor, ApproveReactor, OpenApproveReactor, SleepReactor];

const { prefix: redisPrefix } = useRedisPrefixes();

/** The module's clock: the system's, moved forward by `offset`; its timers do not hold the process. */
const clock = {
  offset: 0,
  now: () => Date.now() + clock.offset,
  sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref()),
};

describe('retention per status on Redis (e2e)', () => {
  let app: TestingModule;
  let client: ReactorClient;
  let runtime: RedisReactorRuntime;

  beforeAll(async () => {
    ({ app, client } = await createRedisApp(
      redisPrefix('e2e-retention'),
      // One shard: every run of a reactor is in one runs index, which each create trims.
      { sweeper: { enabled: false }, contextTtlMs: CTX, retention: RETENTION, clock, shards: 1 },
      { providers: PROVIDERS },
    ));
    runtime = app.get<RedisReactorRuntime>(REACTOR_RUNTIME);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** The record's PTTL is `ms`, give or take the time the test took since the write. */
  async function expectTtl(runId: string, ms: number): Promise<void> {
    const ttl = await runtime.redis.pttl(runtime.keys.runKey(runId));
    expect(ttl).toBeLessThanOrEqual(ms);
    expect(ttl).toBeGreaterThan(ms - 5_000);
  }

  it("stamps each outcome's record with its status's retention", async () => {
    const ok = await client.run(OkReactor, {});
    const failed = await client.run(FailReactor, {});
    const halted = await client.run(HaltReactor, {});
    expect([ok.status, failed.status, halted.status]).toEqual(['completed', 'failed', 'halted']);
    await expectTtl(ok.runId, RETENTION.completed);
    await expectTtl(failed.runId, RETENTION.failed);
    await expectTtl(halted.runId, RETENTION.halted);
  });

  it('a run undone after it completed takes the cancelled retention; a cancelled run too', async () => {
    const ok = await client.run(OkReactor, {});
    await expectTtl(ok.runId, RETENTION.completed);
    expect(await client.undo(ok.runId)).toMatchObject({ status: 'cancelled' });
    await expectTtl(ok.runId, RETENTION.cancelled);

    const paused = await client.run(OpenApproveReactor, {});
    expect(await client.cancel(paused.runId, 'not wanted')).toMatchObject({ status: 'cancelled' });
    await expectTtl(paused.runId, RETENTION.cancelled);
  });

  it('a paused run with a deadline is kept until the deadline plus contextTtlMs; one without, contextTtlMs', async () => {
    const timed = await client.run(ApproveReactor, {});
    const open = await client.run(OpenApproveReactor, {});
    expect([timed.status, open.status]).toEqual(['paused', 'paused']);
    await expectTtl(timed.runId, 20 * MINUTE + CTX);
    await expectTtl(open.runId, CTX);
    // Answered, it finishes and takes its status's retention.
    await client.continue(timed.runId, 'approve', 'yes');
    expect(await client.wait(timed.runId, WAIT)).toMatchObject({ status: 'completed', value: 'yes' });
    await expectTtl(timed.runId, RETENTION.completed);
  });

  it('a sleeping run is kept until its next wake-up plus contextTtlMs', async () => {
    const run = await client.run(SleepReactor, {});
    expect(run).toMatchObject({ status: 'dispatched', sleeping: { step: 'nap' } });
    // A 10-minute sleep parks in hops of half contextTtlMs: the record is kept past the hop, plus contextTtlMs.
    await expectTtl(run.runId, CTX / 2 + CTX);
    await client.cancel(run.runId, 'done');
  });

  it('list shows a failed run kept longer than contextTtlMs', async () => {
    const failed = await client.run(FailReactor, {});
    await expectTtl(failed.runId, RETENTION.failed);
    // Its entry in the reactor's runs index is kept for the longest retention: a run created 3 x
    // contextTtlMs later (the module's clock moved on) trims the index, and leaves it there.
    clock.offset += 3 * CTX;
    const later = await client.run(FailReactor, {});
    const listed = await client.list({ reactor: 'ret-fail', limit: 100 });
    expect(listed.runs.map((r) => r.runId).slice(0, 2)).toEqual([later.runId, failed.runId]);
    expect(listed.runs[1]).toMatchObject({ runId: failed.runId, status: 'failed' });
    // A run created longer ago than the longest retention is trimmed by the next create.
    clock.offset += 16 * MINUTE;
    const last = await client.run(FailReactor, {});
    const trimmed = await client.list({ reactor: 'ret-fail', limit: 100 });
    expect(trimmed.runs.map((r) => r.runId)).toEqual([last.runId]);
  });
});

describe('retention per status on the embedded runtime (e2e)', () => {
  let app: TestingModule | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function start(options: ReactorModuleOptions): Promise<ReactorClient> {
    app = await createEmbeddedApp(PROVIDERS, { sweeper: { enabled: false }, clock, ...options });
    return app.get(ReactorClient);
  }

  it('with retention, expires each outcome after its status retention, and keeps a paused run to its deadline', async () => {
    const client = await start({ contextTtlMs: CTX, retention: RETENTION });
    const ok = await client.run(OkReactor, {});
    const failed = await client.run(FailReactor, {});
    const timed = await client.run(ApproveReactor, {});
    const open = await client.run(OpenApproveReactor, {});
    clock.offset += 3 * MINUTE;
    expect(await client.get(ok.runId)).toBeUndefined();
    expect(await client.get(open.runId)).toBeUndefined();
    expect(await client.get(failed.runId)).toMatchObject({ status: 'failed' });
    expect(await client.get(timed.runId)).toMatchObject({ status: 'paused' });
    const listed = await client.list({ reactor: 'ret-fail', limit: 10 });
    expect(listed.runs.map((r) => r.runId)).toEqual([failed.runId]);
    clock.offset += 20 * MINUTE;
    expect(await client.get(timed.runId)).toBeUndefined();
    expect(await client.get(failed.runId)).toBeUndefined();
  });

  it('without retention, keeps runs as before (until the application stops)', async () => {
    const client = await start({ contextTtlMs: CTX });
    const ok = await client.run(OkReactor, {});
    clock.offset += 365 * 24 * 60 * MINUTE;
    expect(await client.get(ok.runId)).toMatchObject({ status: 'completed' });
  });
});

describe('retention options', () => {
  const refused = (options: ReactorModuleOptions, option: string, message: RegExp) => {
    let error: unknown;
    try {
      resolveReactorModuleOptions(options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).option).toBe(option);
    expect((error as Error).message).toMatch(message);
  };

  it('defaults to nothing given (each status: contextTtlMs), and keeps what is given', () => {
    expect(resolveReactorModuleOptions({}).retention).toEqual({});
    expect(resolveReactorModuleOptions({ retention: { failed: 30 * 86_400_000 } }).retention).toEqual({
      failed: 30 * 86_400_000,
    });
  });

  it('refuses a retention that is not an integer from 1000 ms to 10 years, naming the option', () => {
    refused({ retention: { completed: 999 } }, 'retention.completed', /retention\.completed/);
    refused({ retention: { failed: 1.5e3 + 0.5 } }, 'retention.failed', /an integer from 1000 to 315360000000/);
    refused({ retention: { cancelled: 11 * 365 * 86_400_000 } }, 'retention.cancelled', /315360000000/);
    refused({ retention: { halted: '1h' as unknown as number } }, 'retention.halted', /retention\.halted/);
    refused({ retention: { archived: 5_000 } as never }, 'retention.archived', /retention\.completed/);
    refused({ retention: 5_000 as never }, 'retention', /completed\?, failed\?/);
  });

  it('bounds the idempotency window by the shortest retention (a key must not outlive its run)', () => {
    expect(resolveReactorModuleOptions({ retention: { completed: 60_000 } }).idempotencyWindowMs).toBe(60_000);
    expect(resolveReactorModuleOptions({ retention: { failed: 7 * 86_400_000 } }).idempotencyWindowMs).toBe(86_400_000);
    refused(
      { retention: { completed: 60_000 }, idempotencyWindowMs: 120_000 },
      'idempotencyWindowMs',
      /shortest retention \(60000/,
    );
  });
});
