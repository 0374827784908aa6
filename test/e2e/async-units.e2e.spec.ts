/**
 * Async units (`r.asyncStep`, `r.asyncReactor`) end to end on Redis and BullMQ, with real workers
 * in this process: a unit is a run of its own (`<runId>/<step>`) that goes on while its parent
 * does; its readers wait for it and get its value, or its `Failure`; a unit nobody reads fails
 * nothing (it retries and compensates by itself); a unit is never undone with its parent; a caller
 * waits at most `asyncWaitTimeoutMs`, then the run goes on in a worker; a worker parks (its job
 * ends, the unit's end resumes it) at most `asyncParkTimeoutMs` from the dispatch; two apps on one
 * prefix run each unit once.
 */
import { randomUUID } from 'node:crypto';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import type { StepContext } from '../../lib/core/definition/step';
import type { RunView } from '../../lib/core/engine/run-view';
import type { RunFailure } from '../../lib/core/model/failure';
import { Failure, failure, success } from '../../lib/core/results/step-outcome';
import { AsyncUnitFailedError } from '../../lib/core/steps/async.step';
import type { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import type { ReactorJob, ResumeJob } from '../../lib/core/ports/job-dispatcher.port';
import { BullMqJobDispatcher } from '../../lib/queue/bullmq-job.dispatcher';
import { ReactorQueues } from '../../lib/queue/reactor-queues';
import { Step } from '../../lib/nest/step.decorator';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { createRedisApp, pollUntil, quitAndWait, StepLog } from './e2e.fixtures';

const WAIT = { timeoutMs: 15_000 };
/** Longest a test waits for something that should happen within a second or two. */
const DEADLINE_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// What the steps did, in this process (shared by every Nest app of the file: the two-app test
// counts executions whichever app ran them), keyed by the top-level run id.

const calls = new Map<string, string[]>();
/** Executions of unit bodies, by the unit's run id. */
const unitBodies = new Map<string, number>();
/** What a reader of a unit received, by the top-level run id. */
const received = new Map<string, unknown>();

/** The top-level run of a step: a unit's run id is `<runId>/<step>`. */
function topOf(ctx: StepContext): string {
  return ctx.runId.split('/')[0];
}

function record(ctx: StepContext, entry: string): void {
  const top = topOf(ctx);
  const list = calls.get(top) ?? [];
  list.push(entry);
  calls.set(top, list);
}

function callsOf(runId: string, prefix?: string): string[] {
  const list = calls.get(runId) ?? [];
  return prefix === undefined ? list : list.filter((c) => c.startsWith(prefix));
}

function countBody(ctx: StepContext): void {
  unitBodies.set(ctx.runId, (unitBodies.get(ctx.runId) ?? 0) + 1);
}

interface GateState {
  open: boolean;
  waiters: Array<() => void>;
  entered: boolean;
  enteredWaiters: Array<() => void>;
}

/** Gates held by unit bodies of one top-level run, armed by a test before it starts the run. */
const gates = new Map<string, GateState>();

function armGate(runId: string): void {
  gates.set(runId, { open: false, waiters: [], entered: false, enteredWaiters: [] });
}

/** A unit body waits here when its top-level run has an armed gate that is not open. */
async function passGate(ctx: StepContext): Promise<void> {
  const gate = gates.get(topOf(ctx));
  if (!gate) return;
  gate.entered = true;
  for (const w of gate.enteredWaiters.splice(0)) w();
  if (gate.open) return;
  await new Promise<void>((resolve) => gate.waiters.push(resolve));
}

function openGate(runId: string): void {
  const gate = gates.get(runId);
  if (!gate) return;
  gate.open = true;
  for (const w of gate.waiters.splice(0)) w();
}

/** Resolves once a unit body of `runId` waits at its gate; throws after `timeoutMs`. */
async function gateEntered(runId: string, timeoutMs = DEADLINE_MS): Promise<void> {
  const gate = gates.get(runId);
  if (!gate) throw new Error(`no gate armed for ${runId}`);
  if (gate.entered) return;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve) => gate.enteredWaiters.push(resolve)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no unit of ${runId} reached its gate in ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Open every gate still armed (a failed test leaves no body waiting). */
function openAllGates(): void {
  for (const runId of gates.keys()) openGate(runId);
}

// ---------------------------------------------------------------------------------------------
// Steps.

/** The body of an async unit: `n * 10`, after its gate (if armed). Counted, and logged per app. */
@Step('e2e-async-score')
class ScoreStep {
  constructor(private readonly log: StepLog) {}
  async run({ n }: { n: number }, ctx: StepContext) {
    countBody(ctx);
    record(ctx, `run:${ctx.stepName}`);
    this.log.add(ctx.runId, `run:${ctx.stepName}`);
    await passGate(ctx);
    return success(n * 10);
  }
}

/** A step of the parent's own, with an undo. */
@Step('e2e-async-side')
class SideStep {
  run(_args: unknown, ctx: StepContext) {
    record(ctx, `run:${ctx.stepName}`);
    return success('side');
  }
  undo(_result: unknown, _args: unknown, ctx: StepContext) {
    record(ctx, `undo:${ctx.stepName}`);
  }
}

/** Reads the unit's value: `score + 1`. */
@Step('e2e-async-read')
class ReadStep {
  run({ score }: { score: number }, ctx: StepContext) {
    record(ctx, `run:${ctx.stepName}`);
    received.set(topOf(ctx), score);
    return success(score + 1);
  }
}

/** Always fails (retryable); compensate is logged. */
@Step('e2e-async-notify')
class NotifyStep {
  run(_args: unknown, ctx: StepContext) {
    countBody(ctx);
    record(ctx, `run:${ctx.stepName}#${ctx.attempt}`);
    return failure(new Error('smtp down'));
  }
  compensate(_error: unknown, _args: unknown, ctx: StepContext) {
    record(ctx, `compensate:${ctx.stepName}`);
  }
}

/** Fails for good; compensate is logged. */
@Step('e2e-async-check')
class CheckStep {
  run(_args: unknown, ctx: StepContext) {
    countBody(ctx);
    record(ctx, `run:${ctx.stepName}`);
    return failure(new Error('fraud suspected'), { retryable: false });
  }
  compensate(_error: unknown, _args: unknown, ctx: StepContext) {
    record(ctx, `compensate:${ctx.stepName}`);
  }
}

/** Reads the unit's outcome and decides: a `Failure` fails this step on purpose. */
@Step('e2e-async-decide')
class DecideStep {
  run({ result }: { result: unknown }, ctx: StepContext) {
    record(ctx, `run:${ctx.stepName}`);
    received.set(topOf(ctx), result);
    if (result instanceof Failure) {
      return failure(new Error(`check failed: ${(result.error as Error).message}`), { retryable: false });
    }
    return success('ok');
  }
}

/** The child reactor's step: `R-<sku>`, after its gate (if armed). */
@Step('e2e-async-reserve')
class ReserveStep {
  constructor(private readonly log: StepLog) {}
  async run({ sku }: { sku: string }, ctx: StepContext) {
    countBody(ctx);
    record(ctx, `run:${ctx.stepName}`);
    this.log.add(ctx.runId, `run:${ctx.stepName}`);
    await passGate(ctx);
    return success(`R-${sku}`);
  }
}

/** Ships what the child reserved. */
@Step('e2e-async-ship')
class ShipStep {
  run({ id }: { id: string }, ctx: StepContext) {
    record(ctx, `run:${ctx.stepName}`);
    return success(`shipped ${id}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Reactors.

/** score (async unit) and side go on together; read waits for both. */
@Reactor('e2e-async-basic')
class BasicReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const score = r.asyncStep('score', ScoreStep, { n: r.input('n', { type: 'number' }) });
    const side = r.step('side', SideStep, {});
    return r.step('read', ReadStep, { score }, { waitFor: [side] });
  }
}

/** A failing unit nobody reads (three attempts), next to the main step. */
@Reactor('e2e-async-unread')
class UnreadReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    r.asyncStep('notify', NotifyStep, {}, { retries: { maxAttempts: 3, baseDelayMs: 10 } });
    return r.step('main', SideStep, {});
  }
}

/** first (undoable), then decide reads the failing unit check and fails on purpose. */
@Reactor('e2e-async-decide')
class DecideReactor implements ReactorBlueprint<object> {
  build(r: ReactorBuilder<object>) {
    const first = r.step('first', SideStep, {});
    const check = r.asyncStep('check', CheckStep, {});
    return r.step('decide', DecideStep, { result: check }, { waitFor: [first] });
  }
}

@Reactor('e2e-async-child')
class ChildReactor implements ReactorBlueprint<{ sku: string }> {
  build(r: ReactorBuilder<{ sku: string }>) {
    return r.step('reserve', ReserveStep, { sku: r.input('sku', { type: 'string' }) });
  }
}

/** In the background: the child reactor as an async unit, read by ship. */
@Reactor('e2e-async-parent', { background: { all: true } })
class ParentReactor implements ReactorBlueprint<{ sku: string }> {
  build(r: ReactorBuilder<{ sku: string }>) {
    const reserved = r.asyncReactor('reserve', ChildReactor, { sku: r.input('sku', { type: 'string' }) });
    return r.step('ship', ShipStep, { id: reserved });
  }
}

/** In the background: first (undoable), then read waits for the unit stuck. */
@Reactor('e2e-async-park', { background: { all: true } })
class ParkReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const first = r.step('first', SideStep, {});
    const stuck = r.asyncStep('stuck', ScoreStep, { n: r.input('n', { type: 'number' }) });
    return r.step('read', ReadStep, { score: stuck }, { waitFor: [first] });
  }
}

/** A unit nobody reads (held at its gate), beside the run's own step and a step that only waits for its dispatch. */
@Reactor('e2e-async-fire')
class FireAndForgetReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const email = r.asyncStep('send-email', ScoreStep, { n: r.input('n', { type: 'number' }) });
    r.step('record', SideStep, {});
    return r.step('after-dispatch', SideStep, {}, { waitFor: [email] });
  }
}

const byAccount = (i: Record<string, unknown>) => `e2e-acct:${String(i.account)}`;

/** A unit body that takes, as its own lock, the account lock its parent holds. */
@Step('e2e-async-locked-work', { lock: { key: byAccount } })
class LockedWorkStep {
  run(_args: unknown, ctx: StepContext) {
    countBody(ctx);
    record(ctx, `run:${ctx.stepName}`);
    return success('worked');
  }
}

/** A child reactor whose lock is the account lock. */
@Reactor('e2e-async-locked-child', { lock: { key: byAccount } })
class LockedChildReactor implements ReactorBlueprint<{ account: string }> {
  build(r: ReactorBuilder<{ account: string }>) {
    return r.step('work', LockedWorkStep, { account: r.input('account', { type: 'string' }) });
  }
}

/** Holds the account lock; dispatches (after `first`) a child reactor that takes it too. */
@Reactor('e2e-async-deadlock-reactor', { lock: { key: byAccount } })
class DeadlockViaReactor implements ReactorBlueprint<{ account: string }> {
  build(r: ReactorBuilder<{ account: string }>) {
    const first = r.step('first', SideStep, {});
    r.asyncReactor(
      'audit',
      LockedChildReactor,
      { account: r.input('account', { type: 'string' }) },
      { waitFor: [first] },
    );
  }
}

/** Holds the account lock; dispatches (after `first`) an async step whose own lock is it. */
@Reactor('e2e-async-deadlock-step', { lock: { key: byAccount } })
class DeadlockViaStep implements ReactorBlueprint<{ account: string }> {
  build(r: ReactorBuilder<{ account: string }>) {
    const first = r.step('first', SideStep, {});
    r.asyncStep('notify', LockedWorkStep, { account: r.input('account', { type: 'string' }) }, { waitFor: [first] });
  }
}

/** Records what it read (each unit's value, or its Failure); returns `read`. */
@Step('e2e-async-public-read')
class PublicReadStep {
  run(args: Record<string, unknown>, ctx: StepContext) {
    record(ctx, `run:${ctx.stepName}`);
    received.set(topOf(ctx), args);
    return success('read');
  }
}

/** Returns nothing (its value is its results): score succeeds (n * 10), check fails; read reads both. */
@Reactor('e2e-async-public')
class PublicReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const score = r.asyncStep('score', ScoreStep, { n: r.input('n', { type: 'number' }) });
    const check = r.asyncStep('check', CheckStep, {});
    r.step('read', PublicReadStep, { score, check });
  }
}

/** Composes PublicReactor (its units in its value) and returns the child's value. */
@Reactor('e2e-async-public-compose')
class PublicComposeReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    return r.compose('child', PublicReactor, { n: r.input('n', { type: 'number' }) });
  }
}

/** In the background: a gated unit (cancelled by the test) that decide reads. */
@Reactor('e2e-async-cancel-unit', { background: { all: true } })
class CancelUnitReactor implements ReactorBlueprint<{ n: number }> {
  build(r: ReactorBuilder<{ n: number }>) {
    const score = r.asyncStep('score', ScoreStep, { n: r.input('n', { type: 'number' }) });
    return r.step('decide', DecideStep, { result: score });
  }
}

const PROVIDERS = [
  PublicReadStep,
  PublicReactor,
  PublicComposeReactor,
  CancelUnitReactor,
  ScoreStep,
  SideStep,
  ReadStep,
  NotifyStep,
  CheckStep,
  DecideStep,
  ReserveStep,
  ShipStep,
  BasicReactor,
  UnreadReactor,
  DecideReactor,
  ChildReactor,
  ParentReactor,
  ParkReactor,
  FireAndForgetReactor,
  LockedWorkStep,
  LockedChildReactor,
  DeadlockViaReactor,
  DeadlockViaStep,
];

const TERMINAL = ['completed', 'failed', 'halted', 'cancelled'];

// ---------------------------------------------------------------------------------------------

describe('async units on Redis and BullMQ (e2e)', () => {
  let redis: Redis;
  const prefixes: string[] = [];
  const apps: TestingModule[] = [];

  /** A Nest app with the module under a fresh prefix (or `prefix`), closed after the file. */
  async function app(
    name: string,
    options: Parameters<typeof createRedisApp>[1] = {},
    prefix = uniquePrefix(name),
  ): Promise<{ client: ReactorClient; app: TestingModule; prefix: string }> {
    if (!prefixes.includes(prefix)) prefixes.push(prefix);
    const created = await createRedisApp(prefix, { sweeper: { enabled: false }, ...options }, { providers: PROVIDERS });
    apps.push(created.app);
    return { client: created.client, app: created.app, prefix };
  }

  beforeAll(() => {
    redis = createTestRedis();
  });

  afterEach(() => {
    openAllGates();
  });

  afterAll(async () => {
    openAllGates();
    for (const a of apps) await a.close();
    for (const p of prefixes) await cleanupPrefix(redis, p);
    await quitAndWait(redis);
  });

  async function view(client: ReactorClient, runId: string): Promise<RunView> {
    const v = await client.get(runId);
    if (!v) throw new Error(`run ${runId} not found`);
    return v;
  }

  describe('default options', () => {
    let client: ReactorClient;

    beforeAll(async () => {
      ({ client } = await app('e2e-async'));
    });

    it("asyncStep: the run goes on with an independent step; the reader gets the unit's value; the unit ran once", async () => {
      const runId = randomUUID();
      armGate(runId);
      const running = client.run(BasicReactor as never, { n: 4 } as never, { runId });

      // The unit is held at its gate; the parent's own step runs meanwhile, its reader does not.
      await gateEntered(runId);
      await pollUntil(() => callsOf(runId).includes('run:side'), DEADLINE_MS);
      expect(callsOf(runId, 'run:read')).toEqual([]);
      expect((await view(client, runId)).asyncUnits.score).toMatchObject({
        runId: `${runId}/score`,
        status: 'running',
      });

      openGate(runId);
      const outcome = await running;

      expect(outcome).toMatchObject({ status: 'completed', runId, value: 41 });
      expect(received.get(runId)).toBe(40);
      const v = await view(client, runId);
      expect(v.status).toBe('completed');
      expect(v.asyncUnits.score).toMatchObject({
        runId: `${runId}/score`,
        reactorName: 'e2e-async-basic::score',
        status: 'completed',
        value: 40,
      });
      expect(typeof v.asyncUnits.score.dispatchedAt).toBe('number');
      expect(unitBodies.get(`${runId}/score`)).toBe(1);
      expect(callsOf(runId, 'run:score')).toEqual(['run:score']);
    });

    it("a unit's failure nobody reads: the run completes; the unit retries to maxAttempts and compensates once, after its last attempt", async () => {
      const outcome = await client.run(UnreadReactor as never, {} as never);

      expect(outcome.status).toBe('completed');
      const runId = outcome.runId;
      await pollUntil(async () => (await view(client, runId)).asyncUnits.notify?.status === 'failed', DEADLINE_MS);

      const v = await view(client, runId);
      expect(v.status).toBe('completed');
      expect(v.asyncUnits.notify).toMatchObject({
        runId: `${runId}/notify`,
        status: 'failed',
        failure: { errorMessage: 'smtp down', stepName: 'notify', attempts: 3 },
      });
      expect(callsOf(runId).filter((c) => c !== 'run:main')).toEqual([
        'run:notify#1',
        'run:notify#2',
        'run:notify#3',
        'compensate:notify',
      ]);
      expect(unitBodies.get(`${runId}/notify`)).toBe(3);
    });

    it('a unit nobody reads holds nothing: the run completes at once (waitFor: [unit] waits for its dispatch only); the unit runs on in its job', async () => {
      const runId = randomUUID();
      armGate(runId);
      const outcome = await client.run(FireAndForgetReactor as never, { n: 3 } as never, { runId });

      // Completed with the unit still held at its gate (or not yet started), not `dispatched` after asyncWaitTimeoutMs.
      expect(outcome).toMatchObject({ status: 'completed', runId, value: 'side' });
      expect(callsOf(runId, 'run:after-dispatch')).toEqual(['run:after-dispatch']);
      const v = await view(client, runId);
      expect(v.status).toBe('completed');
      expect([...v.completed].sort()).toEqual(['after-dispatch', 'record']);
      expect(v.results['send-email']).toBeUndefined();
      expect(v.asyncUnits['send-email']).toMatchObject({
        runId: `${runId}/send-email`,
        status: expect.stringMatching(/^(pending|running)$/),
      });

      // The unit runs in its own job, and ends on its own; the run is left as it completed.
      await gateEntered(runId);
      openGate(runId);
      await pollUntil(
        async () => (await view(client, runId)).asyncUnits['send-email']?.status === 'completed',
        DEADLINE_MS,
      );
      const after = await view(client, runId);
      expect(after.status).toBe('completed');
      expect(after.asyncUnits['send-email']).toMatchObject({ status: 'completed', value: 30 });
      expect(unitBodies.get(`${runId}/send-email`)).toBe(1);
    });

    it('an async unit taking the lock its parent holds is refused at dispatch: the parent fails DEADLOCK at once, naming the key; the unit is never stored or run', async () => {
      for (const [reactor, step, unitReactor] of [
        [DeadlockViaReactor, 'audit', 'e2e-async-locked-child'],
        [DeadlockViaStep, 'notify', 'e2e-async-deadlock-step::notify'],
      ] as const) {
        const account = randomUUID();
        const outcome = await client.run(reactor as never, { account } as never);

        expect(outcome.status).toBe('failed');
        if (outcome.status !== 'failed') return;
        const runId = outcome.runId;
        expect(outcome.failure).toMatchObject({ code: 'DEADLOCK', stepName: step });
        expect(outcome.failure.message).toContain(
          `(run '${runId}'): async unit '${step}' would deadlock: it takes the lock 'e2e-acct:${account}' (reactor '${unitReactor}'), which the run holds`,
        );
        // The run's own step was rolled back; the unit was never stored, queued or run.
        expect(callsOf(runId)).toEqual(['run:first', 'undo:first']);
        expect((await view(client, runId)).asyncUnits).toEqual({});
        expect(unitBodies.get(`${runId}/${step}`)).toBeUndefined();
      }
    });

    it("a reader receiving the unit's Failure fails on purpose: the parent rolls back its own steps, the unit is not undone", async () => {
      const outcome = await client.run(DecideReactor as never, {} as never);

      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      const runId = outcome.runId;
      expect(outcome.failure).toMatchObject({
        stepName: 'decide',
        errorMessage: expect.stringMatching(/^check failed: .*fraud suspected$/),
      });
      // The reader got a Failure whose error carries the unit's stored failure.
      const got = received.get(runId);
      expect(got).toBeInstanceOf(Failure);
      const error = (got as Failure).error;
      expect(error).toBeInstanceOf(AsyncUnitFailedError);
      expect((error as AsyncUnitFailedError).failure).toMatchObject<Partial<RunFailure>>({
        stepName: 'check',
        errorMessage: 'fraud suspected',
      });
      // The parent's own completed step was undone; the unit only compensated itself, once.
      expect(callsOf(runId).filter((c) => c.endsWith(':first'))).toEqual(['run:first', 'undo:first']);
      expect(callsOf(runId).filter((c) => c.endsWith(':check'))).toEqual(['run:check', 'compensate:check']);
      expect(unitBodies.get(`${runId}/check`)).toBe(1);
      const v = await view(client, runId);
      expect(v.status).toBe('failed');
      expect(v.asyncUnits.check).toMatchObject({ runId: `${runId}/check`, status: 'failed' });
    });
  });

  describe('what callers see of a unit, its jobs and its run id', () => {
    let client: ReactorClient;
    let queues: ReactorQueues;

    beforeAll(async () => {
      let created: TestingModule;
      ({ client, app: created } = await app('e2e-async-public'));
      queues = created.get(ReactorQueues);
    });

    /** `results` or the value as callers must see them: score's value, check's Failure; never `{ ok, ... }`. */
    function expectPublic(entries: Record<string, unknown> | undefined): void {
      expect(entries?.score).toBe(30);
      const check = entries?.check;
      expect(check).toBeInstanceOf(Failure);
      expect((check as Failure).error).toBeInstanceOf(AsyncUnitFailedError);
      expect(((check as Failure).error as AsyncUnitFailedError).failure).toMatchObject<Partial<RunFailure>>({
        stepName: 'check',
        errorMessage: 'fraud suspected',
      });
    }

    it("a unit's value in results and the run's value is its value or a Failure, as its reader gets it: run, get and wait alike", async () => {
      const outcome = await client.run(PublicReactor as never, { n: 3 } as never);

      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      const runId = outcome.runId;
      expectPublic(received.get(runId) as Record<string, unknown>);
      expectPublic(outcome.results);
      expectPublic(outcome.value as Record<string, unknown>);
      const v = await view(client, runId);
      expectPublic(v.results);
      expectPublic(v.value as Record<string, unknown>);
      const waited = await client.wait(runId, WAIT);
      expectPublic(waited.results);
      expectPublic((waited as { value: Record<string, unknown> }).value);
      expect(v.results.read).toBe('read');
    });

    it("a composed child's units: the parent's results and value read them the same way (a Failure survives get)", async () => {
      const started = await client.run(PublicComposeReactor as never, { n: 3 } as never);
      const outcome = await client.wait(started.runId, WAIT);

      expect(outcome.status).toBe('completed');
      expectPublic(outcome.results.child as Record<string, unknown>);
      expectPublic((outcome as { value: Record<string, unknown> }).value);
      const v = await view(client, started.runId);
      expectPublic(v.results.child as Record<string, unknown>);
      expectPublic(v.value as Record<string, unknown>);
      expectPublic(v.children.child.results);
    });

    it("a unit's BullMQ job is marked unit: true (identity only); the unit's run id reaches get", async () => {
      const runId = randomUUID();
      armGate(runId);
      const running = client.run(BasicReactor as never, { n: 4 } as never, { runId });
      await gateEntered(runId);

      // The unit's job is active while its body waits at the gate.
      const active = await queues.get()!.getJobs(['active']);
      const job = active.find((j) => (j.data as { runId?: string }).runId === `${runId}/score`);
      expect(job?.data).toEqual({
        kind: 'resume',
        runId: `${runId}/score`,
        reactorName: 'e2e-async-basic::score',
        unit: true,
        ...(job?.data.traceContext ? { traceContext: job.data.traceContext } : {}),
      });
      expect(await client.get(`${runId}/score`)).toMatchObject({
        runId: `${runId}/score`,
        reactorName: 'e2e-async-basic::score',
        status: 'running',
      });

      openGate(runId);
      expect(await running).toMatchObject({ status: 'completed', value: 41 });
      expect(await client.wait(`${runId}/score`, WAIT)).toMatchObject({ status: 'completed', value: 40 });
    });

    it('a unit job without the marker (queued before it existed) runs the unit and resumes its parent', async () => {
      const dispatch = BullMqJobDispatcher.prototype.dispatch;
      const seen: ReactorJob[] = [];
      const spy = jest.spyOn(BullMqJobDispatcher.prototype, 'dispatch').mockImplementation(function (
        this: BullMqJobDispatcher,
        job,
        options,
      ) {
        const { unit: _unit, ...old } = job as ResumeJob;
        seen.push(old);
        return dispatch.call(this, old as ReactorJob, options);
      });
      try {
        const outcome = await client.run(PublicReactor as never, { n: 3 } as never);
        expect(outcome.status).toBe('completed');
        const units = seen.filter((j) => j.runId.startsWith(`${outcome.runId}/`));
        expect(units.map((j) => j.runId).sort()).toEqual([`${outcome.runId}/check`, `${outcome.runId}/score`]);
        for (const job of units) expect('unit' in job).toBe(false);
        expectPublic(outcome.results);
      } finally {
        spy.mockRestore();
      }
    });

    it("cancel takes a unit's run id: a unit queued but not running ends cancelled at once, resumes its parent, and its reader gets a Failure saying so", async () => {
      const runId = randomUUID();
      const unitRunId = `${runId}/score`;
      // The unit's job is held back: the unit is stored and queued, but no worker executes it.
      const dispatch = BullMqJobDispatcher.prototype.dispatch;
      let held: { dispatcher: BullMqJobDispatcher; job: ReactorJob } | undefined;
      const spy = jest.spyOn(BullMqJobDispatcher.prototype, 'dispatch').mockImplementation(function (
        this: BullMqJobDispatcher,
        job,
        options,
      ) {
        if (job.runId === unitRunId && !held) {
          held = { dispatcher: this, job };
          return Promise.resolve('held');
        }
        return dispatch.call(this, job, options);
      });
      try {
        await client.start(CancelUnitReactor as never, { n: 1 } as never, { runId });
        await pollUntil(() => held !== undefined, DEADLINE_MS);
        expect(held?.job).toMatchObject({ runId: unitRunId, unit: true });
        expect(await client.get(unitRunId)).toMatchObject({ runId: unitRunId, status: 'pending' });

        expect(await client.cancel(unitRunId, 'not needed')).toMatchObject({
          status: 'cancelled',
          reason: 'not needed',
        });
        expect(await client.wait(unitRunId, WAIT)).toMatchObject({ status: 'cancelled', reason: 'not needed' });
        const outcome = await client.wait(runId, WAIT);
        expect(outcome.status).toBe('failed');
        const got = received.get(runId);
        expect(got).toBeInstanceOf(Failure);
        expect(((got as Failure).error as AsyncUnitFailedError).failure.message).toContain('was cancelled: not needed');
      } finally {
        spy.mockRestore();
      }
      // The held job, delivered late, finds the unit finished: its body never runs.
      await held!.dispatcher.dispatch(held!.job);
      await pollUntil(async () => {
        const counts = await queues.get()!.getJobCounts('active', 'waiting');
        return counts.active + counts.waiting === 0;
      }, DEADLINE_MS);
      expect(unitBodies.get(unitRunId)).toBeUndefined();
      // A new run still cannot take a unit-shaped id.
      await expect(client.start(CancelUnitReactor as never, { n: 1 } as never, { runId: unitRunId })).rejects.toThrow(
        /must not contain/,
      );
    });
  });

  describe('asyncReactor with a background parent (one worker slot)', () => {
    let client: ReactorClient;

    beforeAll(async () => {
      // One worker slot: the gated child can only run once the parent's job has ended (parked).
      ({ client } = await app('e2e-async-park1', { workerConcurrency: 1 }));
    });

    it("the parent parks in the worker while the child runs; the child's end resumes it promptly; the child ran once", async () => {
      const runId = randomUUID();
      armGate(runId);
      const started = await client.run(ParentReactor as never, { sku: 'book' } as never, { runId });
      expect(started.status).toBe('dispatched');

      // The child holds the only worker slot: the parent's job has ended, the parent waits parked.
      await gateEntered(runId);
      const parked = await view(client, runId);
      expect(TERMINAL).not.toContain(parked.status);
      expect(parked.asyncUnits.reserve).toMatchObject({
        runId: `${runId}/reserve`,
        reactorName: 'e2e-async-child',
        status: 'running',
      });
      expect(callsOf(runId, 'run:ship')).toEqual([]);

      openGate(runId);
      const opened = Date.now();
      await pollUntil(async () => (await view(client, runId)).status === 'completed', 5_000);
      const lagMs = Date.now() - opened;

      // The parent's fallback poll is due at least 1 s after it parked, and the gate opened right
      // after the park (the child could only start then): well under that, the child's end
      // resumed it.
      expect(lagMs).toBeLessThan(900);
      const outcome = await client.wait(runId, WAIT);
      expect(outcome).toMatchObject({ status: 'completed', value: 'shipped R-book' });
      expect((await view(client, runId)).asyncUnits.reserve).toMatchObject({
        status: 'completed',
        value: 'R-book',
      });
      expect(unitBodies.get(`${runId}/reserve`)).toBe(1);
      expect(callsOf(runId, 'run:reserve')).toEqual(['run:reserve']);
      expect(callsOf(runId, 'run:ship')).toEqual(['run:ship']);
    });
  });

  describe('asyncWaitTimeoutMs: 200', () => {
    let client: ReactorClient;

    beforeAll(async () => {
      ({ client } = await app('e2e-async-wait', { asyncWaitTimeoutMs: 200 }));
    });

    it('a caller waits for a gated unit at most asyncWaitTimeoutMs: run returns dispatched; the run completes in a worker', async () => {
      const runId = randomUUID();
      armGate(runId);
      const before = Date.now();
      const outcome = await client.run(BasicReactor as never, { n: 2 } as never, { runId });

      expect(outcome.status).toBe('dispatched');
      expect(Date.now() - before).toBeGreaterThanOrEqual(150);
      expect((await view(client, runId)).status).not.toBe('completed');

      openGate(runId);
      await pollUntil(async () => (await view(client, runId)).status === 'completed', DEADLINE_MS);
      const v = await view(client, runId);
      expect(v.outcome).toMatchObject({ status: 'completed', value: 21 });
      expect(v.asyncUnits.score).toMatchObject({ status: 'completed', value: 20 });
      expect(unitBodies.get(`${runId}/score`)).toBe(1);
      expect(callsOf(runId, 'run:read')).toEqual(['run:read']);
    });
  });

  describe('asyncParkTimeoutMs: 300', () => {
    let client: ReactorClient;

    beforeAll(async () => {
      ({ client } = await app('e2e-async-park-timeout', { asyncParkTimeoutMs: 300 }));
    });

    it('a worker waits for a unit at most asyncParkTimeoutMs: the parent fails with ASYNC_WAIT_TIMEOUT and rolls back', async () => {
      const runId = randomUUID();
      armGate(runId);
      const started = await client.run(ParkReactor as never, { n: 1 } as never, { runId });
      expect(started.status).toBe('dispatched');

      await pollUntil(async () => (await view(client, runId)).status === 'failed', DEADLINE_MS);
      const v = await view(client, runId);
      expect(v.outcome).toMatchObject({
        status: 'failed',
        failure: { code: 'ASYNC_WAIT_TIMEOUT', stepName: 'stuck' },
      });
      expect(callsOf(runId).filter((c) => c.endsWith(':first'))).toEqual(['run:first', 'undo:first']);
      expect(callsOf(runId, 'run:read')).toEqual([]);
      // The unit is still held: it is not undone or cancelled with its parent.
      expect(v.asyncUnits.stuck).toMatchObject({ runId: `${runId}/stuck`, status: 'running' });

      // Release it: it completes on its own; the parent stays failed.
      openGate(runId);
      await pollUntil(async () => (await view(client, runId)).asyncUnits.stuck?.status === 'completed', DEADLINE_MS);
      const after = await view(client, runId);
      expect(after.status).toBe('failed');
      expect(after.asyncUnits.stuck).toMatchObject({ status: 'completed', value: 10 });
      expect(unitBodies.get(`${runId}/stuck`)).toBe(1);
    });
  });

  describe('two apps on one prefix, both with workers', () => {
    let clientA: ReactorClient;
    let clientB: ReactorClient;
    let appA: TestingModule;
    let appB: TestingModule;

    beforeAll(async () => {
      const prefix = uniquePrefix('e2e-async-two');
      ({ client: clientA, app: appA } = await app('e2e-async-two', {}, prefix));
      ({ client: clientB, app: appB } = await app('e2e-async-two', {}, prefix));
    });

    it('units may run in either app: each body runs once and every parent completes', async () => {
      const parents = Array.from({ length: 6 }, (_, i) => ({ runId: randomUUID(), client: i % 2 ? clientB : clientA }));
      const basics = Array.from({ length: 6 }, (_, i) => ({ runId: randomUUID(), client: i % 2 ? clientA : clientB }));

      const [parentOutcomes, basicOutcomes] = await Promise.all([
        Promise.all(
          parents.map(async ({ runId, client }, i) => {
            const started = await client.run(ParentReactor as never, { sku: `sku${i}` } as never, { runId });
            expect(started.status).toBe('dispatched');
            return client.wait(runId, WAIT);
          }),
        ),
        Promise.all(
          basics.map(({ runId, client }, i) => client.run(BasicReactor as never, { n: i } as never, { runId })),
        ),
      ]);

      parentOutcomes.forEach((outcome, i) =>
        expect(outcome).toMatchObject({ status: 'completed', value: `shipped R-sku${i}` }),
      );
      basicOutcomes.forEach((outcome, i) => expect(outcome).toMatchObject({ status: 'completed', value: i * 10 + 1 }));

      const logA = appA.get(StepLog);
      const logB = appB.get(StepLog);
      const units = [
        ...parents.map(({ runId }) => ({ unit: `${runId}/reserve`, entry: 'run:reserve' })),
        ...basics.map(({ runId }) => ({ unit: `${runId}/score`, entry: 'run:score' })),
      ];
      for (const { unit, entry } of units) {
        expect(unitBodies.get(unit)).toBe(1);
        // Whichever app ran it, it ran in exactly one of them.
        expect([...logA.of(unit), ...logB.of(unit)]).toEqual([entry]);
      }
      for (const { runId } of parents) expect(callsOf(runId, 'run:ship')).toEqual(['run:ship']);
      for (const { runId } of basics) expect(callsOf(runId, 'run:read')).toEqual(['run:read']);
      const v = await view(clientA, parents[0].runId);
      expect(v.asyncUnits.reserve).toMatchObject({ status: 'completed', value: 'R-sku0' });
    });
  });
});
