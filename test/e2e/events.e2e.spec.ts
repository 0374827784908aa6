/**
 * Events (issue 23) through `ReactorClient.emit`, on both runtimes: the embedded one (memory
 * storage, in-process jobs) and Redis + BullMQ. A reactor declared `on: { event }` starts on an
 * event (its `input` and `match` applied), once per event id; an interrupt declared with `event`
 * is answered by one: with `match(payload, run)` among the runs the event's index lists as waiting
 * (filtered, the index kept clean), or with `match(payload)` naming a correlation id, an early
 * event kept in the id's mailbox; an invalid payload is refused and counted like a `continue`'s;
 * one id emitted twice at once at a waiting run answers it once (both modes); a `match` or `input`
 * that throws is rejected while the event's other targets go on; an id is at most 256 characters.
 */
import 'reflect-metadata';
import type { TestingModule } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { InvalidArgumentError } from '../../lib/core/errors';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorRuntime } from '../../lib/config/reactor-runtime.interface';
import { REACTOR_RUNTIME } from '../../lib/config/reactor.constants';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { createEmbeddedApp, createRedisApp, useRedisPrefixes } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };

type Paid = { orderId: string; amountCents: number };
type Decision = { orderId: string; approved: boolean; by: string };

@Reactor('evt-fulfil', {
  on: {
    event: 'evt.order.paid',
    input: (p: Paid) => ({ orderId: p.orderId, cents: p.amountCents }),
    match: (p: Paid) => p.amountCents > 0,
  },
})
class FulfilReactor implements ReactorBlueprint<{ orderId: string; cents: number }> {
  build(r: ReactorBuilder<{ orderId: string; cents: number }>) {
    const orderId = r.input('orderId', { type: 'string' });
    r.input('cents', { type: 'integer', min: 1 });
    return r.step('ship', ({ orderId: id }: { orderId: string }) => success(`shipped ${id}`), { orderId });
  }
}

@Reactor('evt-approval')
class ApprovalReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    r.input('orderId', { type: 'string' });
    const decision = r.interrupt<Decision>('approve', {
      event: 'evt.approval.decided',
      payload: { approved: { type: 'boolean' }, by: { type: 'string', minLength: 1 } },
      maxAttempts: 2,
      match: (p, run) => p.orderId === run?.inputs.orderId,
    });
    return r.step('record', ({ decision: d }: { decision: Decision }) => success(`${d.approved}:${d.by}`), {
      decision,
    });
  }
}

@Reactor('evt-payment')
class PaymentReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    const paid = r.interrupt<Paid, { orderId: string }>('paid', {
      args: { orderId },
      correlationId: ({ args }) => args.orderId,
      event: 'evt.payment.settled',
      match: (p) => p.orderId,
    });
    return r.step('book', ({ paid: p }: { paid: Paid }) => success(p.amountCents), { paid });
  }
}

/** Composes `evt-approval`: its interrupt is `review.approve` in the parent's run. */
@Reactor('evt-parent')
class ParentReactor implements ReactorBlueprint<{ orderId: string }> {
  build(r: ReactorBuilder<{ orderId: string }>) {
    const orderId = r.input('orderId', { type: 'string' });
    return r.compose('review', ApprovalReactor, { orderId });
  }
}

/** Two reactors started by one event: `evt-risky`'s `match` or `input` throws on demand, `evt-steady`'s never. */
type Risky = { key: string; boom?: 'match' | 'input' };
@Reactor('evt-risky', {
  on: {
    event: 'evt.risky',
    match: (p: Risky) => {
      if (p.boom === 'match') throw new Error('match blew up');
      return true;
    },
    input: (p: Risky) => {
      if (p.boom === 'input') throw new Error('input blew up');
      return { key: p.key };
    },
  },
})
class RiskyReactor implements ReactorBlueprint<{ key: string }> {
  build(r: ReactorBuilder<{ key: string }>) {
    return r.input('key', { type: 'string' });
  }
}
@Reactor('evt-steady', { on: { event: 'evt.risky', input: (p: Risky) => ({ key: p.key }) } })
class SteadyReactor implements ReactorBlueprint<{ key: string }> {
  build(r: ReactorBuilder<{ key: string }>) {
    return r.input('key', { type: 'string' });
  }
}

const PROVIDERS = [FulfilReactor, ApprovalReactor, PaymentReactor, ParentReactor, RiskyReactor, SteadyReactor];

const { prefix } = useRedisPrefixes();

/** A unique order id per test (the apps and their stores outlive a test). */
const orderId = (name: string) => `${name}-${Math.random().toString(36).slice(2)}`;

describe.each([
  ['embedded', () => createEmbeddedApp(PROVIDERS)],
  ['redis + bullmq', async () => (await createRedisApp(prefix('evt'), {}, { providers: PROVIDERS })).app],
])('events on the %s runtime', (_name, createApp) => {
  let app: TestingModule;
  let client: ReactorClient;
  let runtime: ReactorRuntime;
  beforeAll(async () => {
    app = await createApp();
    client = app.get(ReactorClient);
    runtime = app.get<ReactorRuntime>(REACTOR_RUNTIME);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** The runs the index of `event` lists, as `runId:path`. */
  const listed = async (event: string) =>
    (await runtime.interrupts.eventWatchers!(event)).map((w) => `${w.runId}:${w.path}`).sort();

  it('an event starts the reactor declared on it (input mapped, match applied), once per event id', async () => {
    const id = orderId('o');
    const first = await client.emit('evt.order.paid', { orderId: id, amountCents: 500 }, { id: `evt-${id}` });
    expect(first).toMatchObject({ started: [{ reactor: 'evt-fulfil' }], answered: [], rejected: [] });
    const { runId } = first.started[0];
    expect(await client.wait(runId, WAIT)).toMatchObject({ status: 'completed', value: `shipped ${id}` });
    expect((await client.get(runId))?.inputs).toEqual({ orderId: id, cents: 500 });

    // The same id again, in a row and twice at once: nothing more starts.
    const again = await Promise.all([
      client.emit('evt.order.paid', { orderId: id, amountCents: 500 }, { id: `evt-${id}` }),
      client.emit('evt.order.paid', { orderId: id, amountCents: 500 }, { id: `evt-${id}` }),
    ]);
    expect(again.map((r) => r.started)).toEqual([[], []]);
    const runs = await client.list({ reactor: 'evt-fulfil', limit: 1000 });
    expect(runs.runs.filter((r) => r.runId === runId)).toHaveLength(1);

    // Refused by match: nothing starts.
    expect(await client.emit('evt.order.paid', { orderId: id, amountCents: 0 })).toMatchObject({ started: [] });
    // No id: every emit is a new event.
    const a = await client.emit('evt.order.paid', { orderId: id, amountCents: 7 });
    const b = await client.emit('evt.order.paid', { orderId: id, amountCents: 7 });
    expect(a.started[0].runId).not.toBe(b.started[0].runId);
    // An event nothing declares does nothing.
    expect(await client.emit('evt.nobody', {})).toEqual({ started: [], answered: [], mailed: [], rejected: [] });
  });

  it('an event answers the waiting runs its match accepts, and each entry leaves the index as it settles', async () => {
    const [idA, idB] = [orderId('a'), orderId('b')];
    const runA = await client.run(ApprovalReactor, { orderId: idA });
    const runB = await client.run(ApprovalReactor, { orderId: idB });
    expect([runA.status, runB.status]).toEqual(['paused', 'paused']);
    expect(await listed('evt.approval.decided')).toEqual(
      expect.arrayContaining([`${runA.runId}:approve`, `${runB.runId}:approve`]),
    );

    const emitted = await client.emit('evt.approval.decided', { orderId: idA, approved: true, by: 'ann' }, { id: idA });
    expect(emitted).toMatchObject({ started: [], answered: [{ runId: runA.runId, step: 'approve' }], rejected: [] });
    expect(await client.wait(runA.runId, WAIT)).toMatchObject({ status: 'completed', value: 'true:ann' });
    // Filtered: B still waits, and only B is listed.
    expect((await client.get(runB.runId))?.status).toBe('paused');
    const entries = await listed('evt.approval.decided');
    expect(entries).toContain(`${runB.runId}:approve`);
    expect(entries).not.toContain(`${runA.runId}:approve`);

    // The same event again answers nothing twice.
    expect(
      await client.emit('evt.approval.decided', { orderId: idA, approved: false, by: 'bob' }, { id: idA }),
    ).toMatchObject({ answered: [] });

    // A run cancelled while it waits: the next emit of the event drops its entry.
    await client.cancel(runB.runId, 'no longer needed');
    expect(await client.wait(runB.runId, WAIT)).toMatchObject({ status: 'cancelled' });
    expect(await client.emit('evt.approval.decided', { orderId: idB, approved: true, by: 'ann' })).toMatchObject({
      answered: [],
    });
    expect(await listed('evt.approval.decided')).not.toContain(`${runB.runId}:approve`);
  });

  it("an interrupt inside a composed child is listed and answered by its path, matched on the child's inputs", async () => {
    const id = orderId('c');
    const run = await client.run(ParentReactor, { orderId: id });
    expect(run.status).toBe('paused');
    expect(await listed('evt.approval.decided')).toContain(`${run.runId}:review.approve`);
    const emitted = await client.emit('evt.approval.decided', { orderId: id, approved: true, by: 'dee' });
    expect(emitted.answered).toEqual([{ runId: run.runId, step: 'review.approve' }]);
    expect(await client.wait(run.runId, WAIT)).toMatchObject({ status: 'completed', value: 'true:dee' });
    expect(await listed('evt.approval.decided')).not.toContain(`${run.runId}:review.approve`);
  });

  it('an invalid payload is refused and counted as an attempt; a valid one then answers the run', async () => {
    const id = orderId('v');
    const run = await client.run(ApprovalReactor, { orderId: id });
    const refused = await client.emit('evt.approval.decided', { orderId: id, approved: 'yes', by: '' });
    expect(refused.answered).toEqual([]);
    expect(refused.rejected).toHaveLength(1);
    expect(refused.rejected[0]).toMatchObject({ reactor: 'evt-approval', runId: run.runId, step: 'approve' });
    expect(refused.rejected[0].error).toMatchObject({ code: 'PAYLOAD_INVALID' });
    expect(refused.rejected[0].error.message).toMatch(/1 attempt\(s\) left/);
    expect((await client.get(run.runId))?.status).toBe('paused');

    const answered = await client.emit('evt.approval.decided', { orderId: id, approved: false, by: 'cy' });
    expect(answered.answered).toEqual([{ runId: run.runId, step: 'approve' }]);
    expect(await client.wait(run.runId, WAIT)).toMatchObject({ status: 'completed', value: 'false:cy' });
  });

  it('an event for a correlation id no run holds yet waits in its mailbox; the run takes it when it gets there', async () => {
    const id = orderId('p');
    const early = await client.emit('evt.payment.settled', { orderId: id, amountCents: 42 }, { id: `pay-${id}` });
    expect(early).toMatchObject({
      answered: [],
      mailed: [{ reactor: 'evt-payment', step: 'paid', correlationId: id }],
      rejected: [],
    });
    // Emitted again: mailed once.
    expect(
      await client.emit('evt.payment.settled', { orderId: id, amountCents: 42 }, { id: `pay-${id}` }),
    ).toMatchObject({ mailed: [], answered: [] });
    expect(await client.run(PaymentReactor, { orderId: id })).toMatchObject({ status: 'completed', value: 42 });

    // A run that waits already is answered by its correlation id.
    const late = orderId('q');
    const run = await client.run(PaymentReactor, { orderId: late });
    expect(run.status).toBe('paused');
    const emitted = await client.emit('evt.payment.settled', { orderId: late, amountCents: 9 });
    expect(emitted).toMatchObject({ answered: [{ runId: run.runId, step: 'paid' }], mailed: [] });
    expect(await client.wait(run.runId, WAIT)).toMatchObject({ status: 'completed', value: 9 });
  });

  it('one event id emitted twice at once at a run waiting by match answers it once', async () => {
    const id = orderId('m2');
    const run = await client.run(ApprovalReactor, { orderId: id });
    expect(run.status).toBe('paused');
    const payload = { orderId: id, approved: true, by: 'eve' };
    const both = await Promise.all([
      client.emit('evt.approval.decided', payload, { id: `twice-${id}` }),
      client.emit('evt.approval.decided', payload, { id: `twice-${id}` }),
    ]);
    // Exactly one answer in total (first claim wins), nothing refused: the loser did nothing.
    expect(both.flatMap((r) => r.answered)).toEqual([{ runId: run.runId, step: 'approve' }]);
    expect(both.flatMap((r) => r.rejected)).toEqual([]);
    expect(await client.wait(run.runId, WAIT)).toMatchObject({ status: 'completed', value: 'true:eve' });
    // Applied once: one resume of the interrupt, one run of the step that reads the answer.
    const { trace } = (await client.get(run.runId))!;
    expect(trace.filter((e) => e.step === 'approve' && e.type === 'resume')).toHaveLength(1);
    expect(trace.filter((e) => e.step === 'record' && e.type === 'run')).toHaveLength(1);
  });

  it('one event id emitted twice at once at a run waiting by correlation id answers it once', async () => {
    const id = orderId('c2');
    const run = await client.run(PaymentReactor, { orderId: id });
    expect(run.status).toBe('paused');
    const payload = { orderId: id, amountCents: 77 };
    const both = await Promise.all([
      client.emit('evt.payment.settled', payload, { id: `twice-${id}` }),
      client.emit('evt.payment.settled', payload, { id: `twice-${id}` }),
    ]);
    expect(both.flatMap((r) => r.answered)).toEqual([{ runId: run.runId, step: 'paid' }]);
    expect(both.flatMap((r) => r.rejected)).toEqual([]);
    expect(await client.wait(run.runId, WAIT)).toMatchObject({ status: 'completed', value: 77 });
    const { trace } = (await client.get(run.runId))!;
    expect(trace.filter((e) => e.step === 'paid' && e.type === 'resume')).toHaveLength(1);
    expect(trace.filter((e) => e.step === 'book' && e.type === 'run')).toHaveLength(1);
  });

  it("a target's match or input that throws is listed in rejected; the event's other targets go on", async () => {
    for (const boom of ['match', 'input'] as const) {
      const key = orderId(boom);
      const emitted = await client.emit('evt.risky', { key, boom });
      expect(emitted.rejected).toHaveLength(1);
      expect(emitted.rejected[0]).toMatchObject({ reactor: 'evt-risky' });
      expect(emitted.rejected[0].error.message).toContain(`${boom} blew up`);
      expect(emitted.started).toEqual([{ reactor: 'evt-steady', runId: expect.any(String) }]);
      expect(await client.wait(emitted.started[0].runId, WAIT)).toMatchObject({ status: 'completed', value: key });
    }
  });

  it('an event id of 256 characters is taken; one of 257 is refused before anything starts', async () => {
    const key = orderId('len');
    const ok = await client.emit('evt.risky', { key }, { id: 'i'.repeat(255) + key.slice(0, 1) });
    expect(ok.started.map((s) => s.reactor).sort()).toEqual(['evt-risky', 'evt-steady']);
    const before = (await client.list({ reactor: 'evt-steady', limit: 1000 })).runs.length;
    await expect(client.emit('evt.risky', { key }, { id: 'i'.repeat(257) })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('options.id'),
    });
    expect((await client.list({ reactor: 'evt-steady', limit: 1000 })).runs.length).toBe(before);
  });

  it('refuses a bad event name or id before doing anything', async () => {
    await expect(client.emit('', {})).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(client.emit('evt.order.paid', {}, { id: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.emit('evt.order.paid', {}, 'id' as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
