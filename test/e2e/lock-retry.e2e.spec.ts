/**
 * A reactor's lock across a step's retry in a worker, on both runtimes (embedded, and Redis with
 * BullMQ): by default the run holds it until it ends (its TTL pushed past the retry's delay, given
 * back when the run is cancelled); with `releaseDuringRetry` another run of the key goes in while
 * it waits. The same for a semaphore slot. Five runs of one key with a retrying step are never
 * inside the reactor together.
 */
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import { CoordinationContendedError } from '../../lib/core/errors/coordination.error';
import { failure, success } from '../../lib/core/results/step-outcome';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { createEmbeddedApp, createRedisApp, pollUntil, useRedisPrefixes } from './e2e.fixtures';

type Input = { customer: string };
const TTL_MS = 1_000;
/** Far longer than the test: the run waits for its retry until the test cancels it. */
const LONG_RETRY = { maxAttempts: 2, backoff: 'fixed', baseDelayMs: 60_000 } as const;
const customer = (i: Record<string, unknown>) => `customer:${String(i.customer)}`;

/** Fails its first attempt (retryable): the run waits for the retry in a worker. */
const failsFirst = (_a: object, ctx: StepContext) =>
  ctx.attempt === 1 ? failure(new Error('card network timeout')) : success('charged');

@Reactor('lock-retry-held', { lock: { key: customer, ttlMs: TTL_MS }, background: { all: true } })
class HeldReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return r.step('charge', failsFirst, { customer: r.input('customer', { type: 'string' }) }, { retries: LONG_RETRY });
  }
}

@Reactor('lock-retry-released', {
  lock: { key: customer, ttlMs: TTL_MS, releaseDuringRetry: true },
  background: { all: true },
})
class ReleasedReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return r.step('charge', failsFirst, { customer: r.input('customer', { type: 'string' }) }, { retries: LONG_RETRY });
  }
}

/** A reactor on a semaphore of one slot whose step retries (`releaseDuringRetry` as given). */
function slotReactor(name: string, releaseDuringRetry: boolean) {
  @Reactor(name, {
    semaphore: { key: () => 'gateway', limit: 1, leaseMs: TTL_MS, releaseDuringRetry },
    background: { all: true },
  })
  class SlotReactor implements ReactorBlueprint<Input> {
    build(r: ReactorBuilder<Input>) {
      return r.step(
        'charge',
        failsFirst,
        { customer: r.input('customer', { type: 'string' }) },
        { retries: LONG_RETRY },
      );
    }
  }
  return SlotReactor;
}
const SlotHeldReactor = slotReactor('lock-retry-slot-held', false);
const SlotReleasedReactor = slotReactor('lock-retry-slot-released', true);

/** Another run on the slot, run by a caller. */
@Reactor('lock-retry-slot-probe', { semaphore: { key: () => 'gateway', limit: 1, leaseMs: TTL_MS } })
class SlotProbeReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    return r.step('look', () => success('in'), {});
  }
}

/** Another run of the same key, run by a caller: refused while the key is held. */
@Reactor('lock-retry-probe', { lock: { key: customer, ttlMs: TTL_MS } })
class ProbeReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    return r.step('look', ({ customer: c }: Input) => success(c), {
      customer: r.input('customer', { type: 'string' }),
    });
  }
}

/** Runs inside the reactor right now, and the most ever (first step to last step), per app. */
const inside = { now: 0, max: 0 };

@Reactor('lock-retry-checkout', { lock: { key: customer, ttlMs: TTL_MS }, background: { all: true } })
class CheckoutReactor implements ReactorBlueprint<Input> {
  build(r: ReactorBuilder<Input>) {
    const args = { customer: r.input('customer', { type: 'string' }) };
    const enter = r.step('enter', () => ((inside.max = Math.max(inside.max, ++inside.now)), success(1)), args);
    const charge = r.step('charge', failsFirst, args, {
      waitFor: [enter],
      retries: { maxAttempts: 3, backoff: 'fixed', baseDelayMs: 50 },
    });
    return r.step('leave', () => (inside.now--, success('done')), args, { waitFor: [charge] });
  }
}

const PROVIDERS = [
  HeldReactor,
  ReleasedReactor,
  ProbeReactor,
  CheckoutReactor,
  SlotHeldReactor,
  SlotReleasedReactor,
  SlotProbeReactor,
];
const OPTIONS = { snoozeDelayMs: 20, lockSnoozeMaxAttempts: 100_000, workerConcurrency: 8 };

/** One caller run of the probe: its status, or the contention it was refused with. */
async function probe(
  client: ReactorClient,
  c: string,
): Promise<{ ran: boolean; refused?: CoordinationContendedError }> {
  try {
    await client.run(ProbeReactor, { customer: c });
    return { ran: true };
  } catch (error) {
    if (!(error instanceof CoordinationContendedError) || error.code !== 'LOCK_CONTENDED') throw error;
    return { ran: false, refused: error };
  }
}

/** Wait until run `runId` waits for the retry of `charge` (its first attempt failed). */
async function waitingForRetry(client: ReactorClient, runId: string): Promise<void> {
  await pollUntil(async () => {
    const view = await client.get(runId);
    return view?.status === 'running' && view.attempts.charge === 1;
  }, 20_000);
}

const prefixes = useRedisPrefixes();

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS, OPTIONS)],
  [
    'Redis and BullMQ',
    async () =>
      (
        await createRedisApp(
          prefixes.prefix('e2e-lock-retry'),
          { ...OPTIONS, sweeper: { enabled: false } },
          {
            providers: PROVIDERS,
          },
        )
      ).app,
  ],
] as const)('a reactor lock across a worker retry (%s)', (_runtime, create) => {
  let app: TestingModule;
  let client: ReactorClient;

  beforeEach(async () => {
    app = await create();
    client = app.get(ReactorClient);
  });

  afterEach(async () => {
    await app?.close();
  });

  it('by default the run holds its lock while it waits for the retry (TTL pushed past the delay); cancelling it gives it back', async () => {
    const started = await client.start(HeldReactor, { customer: 'c1' });
    await waitingForRetry(client, started.runId);

    // Refused, and by a TTL that covers the retry's delay (the run no longer executes, nothing
    // extends it): the lock was kept, not merely still held by the execution that just ended.
    let refused: CoordinationContendedError | undefined;
    await pollUntil(async () => {
      const answer = await probe(client, 'c1');
      if (answer.ran) throw new Error('another run went in while the run waited for its retry');
      refused = answer.refused;
      return refused!.retryAfterMs > TTL_MS;
    }, 20_000);
    expect(refused).toMatchObject({ code: 'LOCK_CONTENDED', key: 'customer:c1' });
    expect((await client.get(started.runId))?.status).toBe('running');
    // Another key is free.
    expect((await probe(client, 'c2')).ran).toBe(true);

    await client.cancel(started.runId, 'test over');
    expect(await client.wait(started.runId, { timeoutMs: 20_000 })).toMatchObject({ status: 'cancelled' });
    // Given back by the cancel, not 60 s later by its TTL.
    expect((await probe(client, 'c1')).ran).toBe(true);
  }, 60_000);

  it('releaseDuringRetry: another run of the key goes in while the run waits for its retry', async () => {
    const started = await client.start(ReleasedReactor, { customer: 'c1' });
    await waitingForRetry(client, started.runId);
    // Refused while its execution holds the lock, then free once it waits.
    await pollUntil(async () => (await probe(client, 'c1')).ran, 20_000);
    expect(await client.get(started.runId)).toMatchObject({ status: 'running', attempts: { charge: 1 } });

    await client.cancel(started.runId, 'test over');
    expect(await client.wait(started.runId, { timeoutMs: 20_000 })).toMatchObject({ status: 'cancelled' });
  }, 60_000);

  it('a semaphore slot likewise: held across the retry by default (SEMAPHORE_FULL, lease pushed past the delay), given back during it with releaseDuringRetry', async () => {
    const held = await client.start(SlotHeldReactor, { customer: 'c1' });
    await waitingForRetry(client, held.runId);
    let refused: CoordinationContendedError | undefined;
    await pollUntil(async () => {
      try {
        await client.run(SlotProbeReactor, {});
      } catch (error) {
        if (!(error instanceof CoordinationContendedError) || error.code !== 'SEMAPHORE_FULL') throw error;
        refused = error;
        return error.retryAfterMs > TTL_MS;
      }
      throw new Error('another run took the slot while the run waited for its retry');
    }, 20_000);
    expect(refused).toMatchObject({ code: 'SEMAPHORE_FULL', key: 'gateway' });
    await client.cancel(held.runId, 'test over');
    expect(await client.wait(held.runId, { timeoutMs: 20_000 })).toMatchObject({ status: 'cancelled' });
    expect(await client.run(SlotProbeReactor, {})).toMatchObject({ status: 'completed' });

    const released = await client.start(SlotReleasedReactor, { customer: 'c1' });
    await waitingForRetry(client, released.runId);
    await pollUntil(
      async () =>
        client.run(SlotProbeReactor, {}).then(
          () => true,
          (error: unknown) => {
            if (!(error instanceof CoordinationContendedError)) throw error;
            return false;
          },
        ),
      20_000,
    );
    expect(await client.get(released.runId)).toMatchObject({ status: 'running', attempts: { charge: 1 } });
    await client.cancel(released.runId, 'test over');
  }, 60_000);

  it('five runs of one customer, each retrying a step: never two inside the reactor at once', async () => {
    inside.now = inside.max = 0;
    const runIds: string[] = [];
    for (let i = 0; i < 5; i++) runIds.push((await client.start(CheckoutReactor, { customer: 'c1' })).runId);
    for (const runId of runIds) {
      expect(await client.wait(runId, { timeoutMs: 40_000 })).toMatchObject({
        status: 'completed',
        value: 'done',
        attempts: { charge: 2 },
      });
    }
    expect(inside).toEqual({ now: 0, max: 1 });
  }, 60_000);
});
