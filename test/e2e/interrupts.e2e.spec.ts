/**
 * Interrupts end to end on Redis and BullMQ, in two Nest apps on one prefix (separate Redis
 * connections, both with workers), as two processes would be: a run pauses at an interrupt and is
 * resumed by run id or correlation id; of concurrent resumes split across both apps exactly one is
 * applied; a resume that arrives early is kept for the run; an active timeout fires with nobody
 * calling (a delayed BullMQ job); invalid payloads count attempts; a resume while the run's lease is
 * held elsewhere is deferred to a worker; a cancelled run refuses resumes.
 *
 * Both apps live in this process, so what the steps did is recorded in a module-level ledger keyed
 * by run id, whichever app executed them.
 */
import { type Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { InterruptOptions } from '../../lib/core/definition/interrupt-spec';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext, StepHandler } from '../../lib/core/definition/step';
import type { ContinueResult } from '../../lib/core/engine/resumes';
import { PayloadValidationError } from '../../lib/core/errors/interrupt.error';
import { runLeaseKey } from '../../lib/core/model/keys';
import type { LockManager } from '../../lib/core/ports/lock-manager.port';
import { failure, success, type StepOutcome } from '../../lib/core/results/step-outcome';
import { REACTOR_LOCKS, REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import type { RedisReactorRuntime } from '../../lib/runtime/redis.runtime';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { createRedisApp, pollUntil, quitAndWait } from './e2e.fixtures';

const WAIT = { timeoutMs: 10_000 };
/** Longest a step waits at its gate (a broken test fails, never hangs). */
const GATE_LIMIT_MS = 10_000;

/** What the steps did, per run id, in both apps of this process. */
const ledger = new Map<string, string[]>();

function note(runId: string, entry: string): void {
  const list = ledger.get(runId) ?? [];
  list.push(entry);
  ledger.set(runId, list);
}

function ledgerOf(runId: string): string[] {
  return ledger.get(runId) ?? [];
}

/** Gates keyed by run id: a step waits at its run's gate until the test opens it. */
const gates = new Map<string, { open: boolean; waiters: Array<() => void>; entered: Array<() => void> }>();

function gateOf(runId: string) {
  let gate = gates.get(runId);
  if (!gate) gates.set(runId, (gate = { open: false, waiters: [], entered: [] }));
  return gate;
}

/** Resolves once a step of run `runId` waits at its gate. */
function gateEntered(runId: string): Promise<void> {
  if (ledgerOf(runId).includes('run:slow')) return Promise.resolve();
  return new Promise((resolve) => gateOf(runId).entered.push(resolve));
}

function openGate(runId: string): void {
  const gate = gateOf(runId);
  gate.open = true;
  for (const w of gate.waiters.splice(0)) w();
}

type Decision = { approved: boolean; by: string };
type Order = { orderId: string; amount: number };

/** Reserves stock; its undo is recorded. */
@Step('e2e-int-reserve')
class ReserveStep implements StepHandler<{ orderId: string }, string> {
  run({ orderId }: { orderId: string }, ctx: StepContext): StepOutcome<string> {
    note(ctx.runId, `run:${ctx.stepName}`);
    return success(`R-${orderId}`);
  }
  undo(_result: string, _args: { orderId: string }, ctx: StepContext): void {
    note(ctx.runId, `undo:${ctx.stepName}`);
  }
}

/** Charges once the order is approved (records who approved it). */
@Step('e2e-int-charge')
class ChargeStep implements StepHandler<{ decision: Decision; amount: number }, string> {
  run({ decision, amount }: { decision: Decision; amount: number }, ctx: StepContext): StepOutcome<string> {
    note(ctx.runId, `run:${ctx.stepName}:${decision.by}`);
    return decision.approved ? success(`charged ${amount}`) : failure(new Error('not approved'), { retryable: false });
  }
}

/** Waits at its run's gate. */
@Step('e2e-int-slow')
class SlowStep implements StepHandler<object, string> {
  async run(_args: object, ctx: StepContext): Promise<StepOutcome<string>> {
    note(ctx.runId, `run:${ctx.stepName}`);
    const gate = gateOf(ctx.runId);
    for (const w of gate.entered.splice(0)) w();
    if (!gate.open) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`gate of ${ctx.runId} never opened`)), GATE_LIMIT_MS);
        gate.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return success('done');
  }
}

/** reserve, then interrupt `approve` (correlation id `order-<orderId>`, a Decision payload), then charge. */
function approvalReactor(
  name: string,
  options: Pick<InterruptOptions<Decision, { orderId: string }>, 'maxAttempts' | 'timeoutMs'> = {},
): Type {
  @Reactor(name)
  class ApprovalReactor implements ReactorBlueprint<Order> {
    build(r: ReactorBuilder<Order>) {
      const orderId = r.input('orderId', { type: 'string' });
      const amount = r.input('amount', { type: 'number' });
      const reserve = r.step('reserve', ReserveStep, { orderId });
      const decision = r.interrupt<Decision, { orderId: string }>('approve', {
        args: { orderId },
        waitFor: [reserve],
        correlationId: ({ args }) => `order-${args.orderId}`,
        payload: { approved: { type: 'boolean' }, by: { type: 'string', minLength: 1 } },
        ...options,
      });
      return r.step('charge', ChargeStep, { decision, amount });
    }
  }
  return ApprovalReactor;
}

/** slow (at its gate), then interrupt `answer` (a string), then `use`, which returns it. */
@Reactor('e2e-int-early')
class EarlyReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const slow = r.step('slow', SlowStep, {});
    const answer = r.interrupt<string>('answer', { waitFor: [slow], payload: { type: 'string' } });
    return r.step('use', ({ a }: { a: string }, ctx: StepContext) => (note(ctx.runId, `run:use:${a}`), success(a)), {
      a: answer,
    });
  }
}

const reactors = {
  approval: approvalReactor('e2e-int-approval'),
  attempts: approvalReactor('e2e-int-attempts', { maxAttempts: 2 }),
  timeout: approvalReactor('e2e-int-timeout', { timeoutMs: 300 }),
};

const PROVIDERS = [ReserveStep, ChargeStep, SlowStep, EarlyReactor, ...Object.values(reactors)];

const approve: Decision = { approved: true, by: 'alice' };

describe('interrupts on Redis and BullMQ (e2e)', () => {
  const prefix = uniquePrefix('e2e-interrupts');
  let redis: Redis;
  let appA: TestingModule;
  let appB: TestingModule;
  let clientA: ReactorClient;
  let clientB: ReactorClient;
  let orders = 0;

  /** A fresh order (its correlation id is unique among the runs of this file). */
  function order(amount = 42): Order {
    return { orderId: `o-${++orders}`, amount };
  }

  /** Run `reactor` on app A until it pauses at `approve`. */
  async function paused(reactor: Type, input: Order): Promise<string> {
    const outcome = await clientA.run(reactor as never, input as never);
    expect(outcome).toMatchObject({ status: 'paused', stepName: 'approve' });
    return outcome.runId;
  }

  async function statusOf(runId: string): Promise<string | undefined> {
    return (await clientA.get(runId))?.status;
  }

  beforeAll(async () => {
    redis = createTestRedis();
    const options = { sweeper: { enabled: false }, snoozeDelayMs: 50 };
    ({ app: appA, client: clientA } = await createRedisApp(prefix, options, { providers: PROVIDERS }));
    ({ app: appB, client: clientB } = await createRedisApp(prefix, options, { providers: PROVIDERS }));
  });

  afterAll(async () => {
    for (const gate of gates.values()) for (const w of gate.waiters.splice(0)) w();
    await appA?.close();
    await appB?.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  it('pauses with its correlation id and what it waits for, shows paused, and continue applies the payload', async () => {
    const input = order();
    const outcome = await clientA.run(reactors.approval, input);

    expect(outcome).toMatchObject({
      status: 'paused',
      stepName: 'approve',
      correlationId: `order-${input.orderId}`,
      results: { reserve: `R-${input.orderId}` },
      waitingFor: [{ path: 'approve', correlationId: `order-${input.orderId}` }],
    });
    const runId = outcome.runId;
    const view = await clientA.get(runId);
    expect(view?.status).toBe('paused');
    expect(view?.trace.map((t) => t.type)).toContain('pause');
    // Another app sees it paused too, and `wait` returns at the pause.
    expect((await clientB.get(runId))?.status).toBe('paused');
    expect((await clientB.wait(runId, WAIT)).status).toBe('paused');
    expect(ledgerOf(runId)).toEqual(['run:reserve']);

    const resumed = await clientA.continue(runId, 'approve', approve);

    expect(resumed).toMatchObject({
      accepted: 'applied',
      runId,
      outcome: { status: 'completed', value: 'charged 42' },
    });
    const done = await clientB.get(runId);
    expect(done?.status).toBe('completed');
    expect(done?.results.approve).toEqual(approve);
    expect(done?.trace.filter((t) => t.type === 'resume')).toHaveLength(1);
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:charge:alice']);
  });

  it('20 concurrent resumes across two apps: exactly one is applied, 19 are ALREADY_RESUMED, charge runs once', async () => {
    const runId = await paused(reactors.approval, order());

    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? clientA : clientB).continue(runId, 'approve', { approved: true, by: `u${i}` }),
      ),
    );

    const fulfilled = results.filter((r): r is PromiseFulfilledResult<ContinueResult> => r.status === 'fulfilled');
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(fulfilled).toHaveLength(1);
    expect(rejected).toHaveLength(19);
    for (const r of rejected) expect(r.reason).toMatchObject({ code: 'ALREADY_RESUMED' });
    expect(['applied', 'deferred']).toContain(fulfilled[0].value.accepted);

    await pollUntil(async () => (await statusOf(runId)) === 'completed', WAIT.timeoutMs);
    const done = await clientA.get(runId);
    const winner = (done?.results.approve as Decision).by;
    const charges = ledgerOf(runId).filter((e) => e.startsWith('run:charge'));
    expect(charges).toEqual([`run:charge:${winner}`]);
    expect(done?.trace.filter((t) => t.type === 'resume')).toHaveLength(1);
  });

  it('continueByCorrelationId applies the payload to the run holding the id', async () => {
    const input = order(7);
    const runId = await paused(reactors.approval, input);

    const resumed = await clientB.continueByCorrelationId(reactors.approval, 'approve', `order-${input.orderId}`, {
      approved: true,
      by: 'bob',
    });

    expect(resumed).toMatchObject({ accepted: 'applied', runId, outcome: { status: 'completed', value: 'charged 7' } });
    expect((await clientA.get(runId))?.status).toBe('completed');
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:charge:bob']);
  });

  it('a resume by correlation id before any run exists is queued; the run that binds the id completes without pausing', async () => {
    const input = order(9);
    const correlationId = `order-${input.orderId}`;

    const early = await clientB.continueByCorrelationId(reactors.approval, 'approve', correlationId, {
      approved: true,
      by: 'carol',
    });
    expect(early).toMatchObject({ accepted: 'queued', correlationId });
    expect(early.accepted === 'queued' && early.expiresAt).toBeGreaterThan(Date.now());

    const outcome = await clientA.run(reactors.approval, input);

    expect(outcome).toMatchObject({ status: 'completed', value: 'charged 9', results: { approve: { by: 'carol' } } });
    expect(outcome.trace.map((t) => t.type)).not.toContain('pause');
    expect(ledgerOf(outcome.runId)).toEqual(['run:reserve', 'run:charge:carol']);
  });

  it('a resume by run id before the run reaches the interrupt is queued and applied on arrival', async () => {
    const started = await clientA.start(EarlyReactor, {});
    expect(started.status).toBe('dispatched');
    const runId = started.runId;
    await gateEntered(runId);

    const early = await clientB.continue(runId, 'answer', 'yes');

    expect(early).toMatchObject({ accepted: 'queued', runId });
    expect(ledgerOf(runId)).toEqual(['run:slow']);
    openGate(runId);
    const done = await clientA.wait(runId, WAIT);
    expect(done).toMatchObject({ status: 'completed', value: 'yes', results: { answer: 'yes' } });
    expect(done.trace.map((t) => t.type)).not.toContain('pause');
    expect(ledgerOf(runId)).toEqual(['run:slow', 'run:use:yes']);
  });

  it('an active timeout fires with nobody calling (a delayed job): INTERRUPT_TIMED_OUT, reserve undone', async () => {
    const before = Date.now();
    const outcome = await clientA.run(reactors.timeout, order());
    expect(outcome.status).toBe('paused');
    if (outcome.status !== 'paused') return;
    expect(outcome.timeoutAt).toBeGreaterThanOrEqual(before + 300);
    const runId = outcome.runId;
    // The wake-up is a BullMQ job delayed to the deadline (or already due, on a slow machine).
    const queue = appA.get<RedisReactorRuntime>(REACTOR_RUNTIME).dispatcher.queue;
    const jobs = await queue.getJobs(['delayed', 'waiting', 'active']);
    const wake = jobs.find((job) => (job.data as { runId?: string }).runId === runId);
    if ((await statusOf(runId)) === 'paused') expect(wake).toBeDefined();
    if (wake && (await wake.isDelayed()))
      expect(wake.timestamp + wake.delay).toBeGreaterThanOrEqual(outcome.timeoutAt!);

    await pollUntil(async () => (await statusOf(runId)) === 'failed', WAIT.timeoutMs);

    const view = await clientA.get(runId);
    expect(view?.failure).toMatchObject({ code: 'INTERRUPT_TIMED_OUT', stepName: 'approve' });
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'undo:reserve']);
    expect(Date.now()).toBeGreaterThanOrEqual(outcome.timeoutAt!);
    await expect(clientB.continue(runId, 'approve', approve)).rejects.toMatchObject({ code: 'RUN_NOT_PAUSED' });
  });

  it('invalid payloads with maxAttempts 2: the first leaves it paused (1 left), the second fails it with rollback', async () => {
    const runId = await paused(reactors.attempts, order());

    const first = await clientA.continue(runId, 'approve', { approved: 'yes', by: 'x' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(PayloadValidationError);
    expect(first).toMatchObject({ code: 'PAYLOAD_INVALID', attemptsLeft: 1, runFailed: false });
    expect((first as PayloadValidationError).fieldErrors).toHaveProperty('approved');
    expect(await statusOf(runId)).toBe('paused');
    expect(ledgerOf(runId)).toEqual(['run:reserve']);

    const second = await clientB.continue(runId, 'approve', { approved: true, by: '' }).catch((e: unknown) => e);
    expect(second).toMatchObject({ code: 'PAYLOAD_INVALID', attemptsLeft: 0, runFailed: true });

    await pollUntil(async () => (await statusOf(runId)) === 'failed', WAIT.timeoutMs);
    expect((await clientA.get(runId))?.failure).toMatchObject({ code: 'PAYLOAD_INVALID', stepName: 'approve' });
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'undo:reserve']);
  });

  it('a resume while the run’s lease is held elsewhere is deferred; the run completes once the lease is released', async () => {
    const runId = await paused(reactors.approval, order());
    const locks = appB.get<LockManager>(REACTOR_LOCKS);
    const held = await locks.acquire(runLeaseKey(runId), 60_000);
    expect(held).not.toBeNull();

    try {
      const resumed = await clientA.continue(runId, 'approve', approve);
      expect(resumed).toMatchObject({ accepted: 'deferred', runId, reason: 'busy' });
      // Nothing went on while the lease is held.
      expect(await statusOf(runId)).toBe('paused');
      expect(ledgerOf(runId)).toEqual(['run:reserve']);
    } finally {
      expect(await locks.release(held!)).toBe(true);
    }

    await pollUntil(async () => (await statusOf(runId)) === 'completed', WAIT.timeoutMs);
    expect((await clientA.get(runId))?.value).toBe('charged 42');
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'run:charge:alice']);
  });

  it('cancel while paused undoes reserve; a later continue is RUN_NOT_PAUSED', async () => {
    const runId = await paused(reactors.approval, order());

    const cancelled = await clientB.cancel(runId, 'customer left');

    expect(cancelled).toMatchObject({ status: 'cancelled', reason: 'customer left' });
    expect(await statusOf(runId)).toBe('cancelled');
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'undo:reserve']);
    await expect(clientA.continue(runId, 'approve', approve)).rejects.toMatchObject({
      code: 'RUN_NOT_PAUSED',
      status: 'cancelled',
    });
    expect(ledgerOf(runId)).toEqual(['run:reserve', 'undo:reserve']);
  });
});
