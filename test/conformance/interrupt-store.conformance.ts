import type { RunStatus } from '../../lib/core/model/run-state';
import type { InterruptStore, ReactorStorage, ResumeClaim } from '../../lib/core/ports';
import { makeRunState, newRunId, T0 } from './run-state.factory';

/** An interrupt store and the storage holding the runs it claims on (one backend, one clock). */
export interface InterruptStoreHarness {
  interrupts: InterruptStore;
  storage: ReactorStorage;
  /** Remove everything this harness created. */
  cleanup(): Promise<void>;
}

/** Builds a fresh, isolated harness (called once per test). */
export type InterruptStoreFactory = () => InterruptStoreHarness | Promise<InterruptStoreHarness>;

const RETENTION = 60_000;
const TERMINAL: RunStatus[] = ['completed', 'failed', 'halted', 'cancelled'];

const payload = (value: unknown, at = T0): ResumeClaim => ({ kind: 'payload', payload: value, at });
const fieldErrors = { amount: ['must be positive'], note: [] };

/** The InterruptStore contract (`lib/core/ports/interrupt-store.port.ts`), for any adapter. */
export function describeInterruptStoreConformance(name: string, factory: InterruptStoreFactory): void {
  describe(`InterruptStore conformance: ${name}`, () => {
    let h: InterruptStoreHarness;
    let interrupts: InterruptStore;
    beforeEach(async () => {
      h = await factory();
      interrupts = h.interrupts;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    /** Store a top-level run with `status`, indexed (when live) at `updatedAt`. */
    /**
     * A stored run. A paused one waits at interrupt `approve` with its deadline at `updatedAt`, so
     * that it sits in the live-run index there (a paused run sits at its earliest deadline).
     */
    async function newRun(status: RunStatus = 'paused', updatedAt = T0): Promise<string> {
      const interrupts =
        status === 'paused' ? { approve: { path: 'approve', pausedAt: T0, timeoutAt: updatedAt } } : undefined;
      const state = makeRunState({ status, updatedAt, createdAt: T0, ...(interrupts ? { interrupts } : {}) });
      expect(await h.storage.save(state)).toBe(true);
      return state.runId;
    }

    const claim = (runId: string, path: string, c: ResumeClaim, now = T0, expiresAt?: number) =>
      interrupts.claim(runId, path, c, {
        now,
        retentionMs: RETENTION,
        ...(expiresAt === undefined ? {} : { expiresAt }),
      });
    const reject = (runId: string, path: string, maxAttempts: number, now = T0) =>
      interrupts.reject(runId, path, { fieldErrors, now, maxAttempts, retentionMs: RETENTION });

    /** The run's score in the live-run index, checked through `listActive` (scores are integers here). */
    async function isIndexedAt(runId: string, score: number): Promise<boolean> {
      const before = await h.storage.listActive(1000, score);
      const through = await h.storage.listActive(1000, score + 1);
      return !before.includes(runId) && through.includes(runId);
    }

    describe('claim', () => {
      it('is won by exactly one of 20 parallel claims; the others see the winner', async () => {
        const runId = await newRun();
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) => claim(runId, 'approve', payload({ n: i }, T0 + i))),
        );
        const won = replies.flatMap((r, i) => (r.won ? [i] : []));
        expect(won).toHaveLength(1);
        const winner = payload({ n: won[0] }, T0 + won[0]);
        expect(replies[won[0]]).toEqual({ won: true, status: 'paused' });
        for (const [i, reply] of replies.entries()) {
          if (i !== won[0]) expect(reply).toEqual({ won: false, status: 'paused', existing: winner });
        }
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({ approve: winner });
      });

      it('keeps each interrupt path of a run apart, and each run apart', async () => {
        const a = await newRun();
        const b = await newRun();
        await expect(claim(a, 'approve', payload('a'))).resolves.toEqual({ won: true, status: 'paused' });
        await expect(claim(a, 'child.approve', payload('a-child'))).resolves.toEqual({ won: true, status: 'paused' });
        await expect(claim(b, 'approve', payload('b'))).resolves.toEqual({ won: true, status: 'paused' });
        await expect(interrupts.claims(a, ['approve', 'child.approve', 'other'], 'take', T0)).resolves.toEqual({
          approve: payload('a'),
          'child.approve': payload('a-child'),
        });
        await expect(interrupts.claims(b, ['approve', 'child.approve'], 'take', T0)).resolves.toEqual({
          approve: payload('b'),
        });
      });

      it('stores every kind of claim as JSON and gives a fresh copy on each read', async () => {
        const runId = await newRun('running');
        const claims: Record<string, ResumeClaim> = {
          p: payload({ order: { id: 'o-1', lines: [1, 2] }, empty: [], nothing: null }),
          r: { kind: 'rejected', fieldErrors, attempts: 3, at: T0 + 1 },
          t: { kind: 'timeout', at: T0 + 2 },
        };
        for (const [path, c] of Object.entries(claims)) await claim(runId, path, c);
        const read = await interrupts.claims(runId, ['p', 'r', 't'], 'peek', T0);
        expect(read).toEqual(claims);
        ((read.p as { payload: { order: { id: string } } }).payload.order as { id: string }).id = 'mutated';
        await expect(interrupts.claims(runId, ['p'], 'peek', T0)).resolves.toEqual({ p: claims.p });
      });

      it('is refused for a missing run, with no status, and writes nothing', async () => {
        const runId = newRunId();
        await expect(claim(runId, 'approve', payload(1))).resolves.toEqual({ won: false });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({});
      });

      it.each([...TERMINAL, 'rolling_back' as const])('is refused for a %s run, with its status', async (status) => {
        const runId = await newRun(status);
        await expect(claim(runId, 'approve', payload(1))).resolves.toEqual({ won: false, status });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({});
      });

      it.each(['pending', 'running'] as const)('is won on a %s run (an early claim, say)', async (status) => {
        const runId = await newRun(status);
        await expect(claim(runId, 'approve', payload(1))).resolves.toEqual({ won: true, status });
      });

      it('moves a paused run to `now` in the live-run index, and only a paused one', async () => {
        const paused = await newRun('paused', T0);
        const running = await newRun('running', T0 + 10);
        const later = await newRun('paused', T0 + 20);
        expect(await h.storage.listActive(10)).toEqual([paused, running, later]);

        await expect(claim(paused, 'approve', payload(1), T0 + 100)).resolves.toMatchObject({ won: true });
        await expect(claim(running, 'approve', payload(1), T0 + 200)).resolves.toMatchObject({ won: true });
        expect(await h.storage.listActive(10)).toEqual([running, later, paused]);
        expect(await isIndexedAt(paused, T0 + 100)).toBe(true);
        expect(await isIndexedAt(running, T0 + 10)).toBe(true);

        // A lost claim moves nothing.
        await expect(claim(later, 'approve', payload(1), T0 + 300)).resolves.toMatchObject({ won: true });
        await expect(claim(later, 'approve', payload(2), T0 + 400)).resolves.toMatchObject({ won: false });
        expect(await isIndexedAt(later, T0 + 300)).toBe(true);
      });

      it('never puts a finished run back in the live-run index', async () => {
        const state = makeRunState({ status: 'paused', updatedAt: T0, createdAt: T0 });
        await h.storage.save(state);
        await claim(state.runId, 'approve', payload(1), T0 + 100);
        await h.storage.save({ ...state, status: 'completed', updatedAt: T0 + 200 });
        expect(await h.storage.listActive(10)).toEqual([]);
        await expect(interrupts.claims(state.runId, ['approve'], 'peek', T0 + 300)).resolves.toEqual({
          approve: payload(1),
        });
        await expect(claim(state.runId, 'other', payload(2), T0 + 300)).resolves.toEqual({
          won: false,
          status: 'completed',
        });
        expect(await h.storage.listActive(10)).toEqual([]);
      });
    });

    describe('reject', () => {
      it('counts invalid payloads and claims `rejected` when the count reaches maxAttempts', async () => {
        const runId = await newRun('paused', T0);
        await expect(reject(runId, 'approve', 3, T0 + 1)).resolves.toEqual({
          counted: true,
          attempts: 1,
          final: false,
          status: 'paused',
        });
        await expect(reject(runId, 'approve', 3, T0 + 2)).resolves.toEqual({
          counted: true,
          attempts: 2,
          final: false,
          status: 'paused',
        });
        // Counting alone claims nothing, and does not move the run.
        await expect(interrupts.claims(runId, ['approve'], 'take', T0 + 2)).resolves.toEqual({});
        expect(await isIndexedAt(runId, T0)).toBe(true);

        await expect(reject(runId, 'approve', 3, T0 + 3)).resolves.toEqual({
          counted: true,
          attempts: 3,
          final: true,
          status: 'paused',
        });
        const rejected: ResumeClaim = { kind: 'rejected', fieldErrors, attempts: 3, at: T0 + 3 };
        await expect(interrupts.claims(runId, ['approve'], 'take', T0 + 3)).resolves.toEqual({ approve: rejected });
        expect(await isIndexedAt(runId, T0 + 3)).toBe(true);

        // The rejection is the interrupt's claim: nothing more is counted or claimed.
        await expect(reject(runId, 'approve', 3, T0 + 4)).resolves.toEqual({ counted: false, existing: rejected });
        await expect(claim(runId, 'approve', payload('late'), T0 + 5)).resolves.toEqual({
          won: false,
          status: 'paused',
          existing: rejected,
        });
      });

      it('counts without limit when maxAttempts is 0', async () => {
        const runId = await newRun();
        for (let n = 1; n <= 10; n++) {
          await expect(reject(runId, 'approve', 0)).resolves.toEqual({
            counted: true,
            attempts: n,
            final: false,
            status: 'paused',
          });
        }
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({});
        await expect(claim(runId, 'approve', payload('ok'))).resolves.toEqual({ won: true, status: 'paused' });
      });

      it('counts per interrupt path', async () => {
        const runId = await newRun();
        await reject(runId, 'a', 2);
        await expect(reject(runId, 'b', 2)).resolves.toMatchObject({ attempts: 1, final: false });
        await expect(reject(runId, 'a', 2)).resolves.toMatchObject({ attempts: 2, final: true });
        await expect(interrupts.claims(runId, ['a', 'b'], 'peek', T0)).resolves.toEqual({
          a: { kind: 'rejected', fieldErrors, attempts: 2, at: T0 },
        });
      });

      it('counts nothing once a payload is claimed, and answers that claim', async () => {
        const runId = await newRun();
        await claim(runId, 'approve', payload('ok'));
        await expect(reject(runId, 'approve', 1)).resolves.toEqual({ counted: false, existing: payload('ok') });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({ approve: payload('ok') });
      });

      it('is refused for a missing run, and for a terminal or rolling_back one with its status', async () => {
        await expect(reject(newRunId(), 'approve', 1)).resolves.toEqual({ counted: false });
        for (const status of ['failed', 'rolling_back'] as const) {
          const runId = await newRun(status);
          await expect(reject(runId, 'approve', 1)).resolves.toEqual({ counted: false, status });
          await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({});
        }
      });

      it('counts past an early claim whose expiry has come, and its rejection holds for good', async () => {
        const runId = await newRun();
        await claim(runId, 'approve', payload('early'), T0, T0 + 1000);
        await expect(reject(runId, 'approve', 1, T0 + 500)).resolves.toEqual({
          counted: false,
          existing: payload('early'),
        });
        await expect(reject(runId, 'approve', 1, T0 + 1000)).resolves.toMatchObject({ counted: true, final: true });
        const rejected: ResumeClaim = { kind: 'rejected', fieldErrors, attempts: 1, at: T0 + 1000 };
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 99_000)).resolves.toEqual({
          approve: rejected,
        });
      });
    });

    describe('early claims and claims(take | peek)', () => {
      it('ignores an early claim once its expiry has come; a later claim then replaces it', async () => {
        const runId = await newRun();
        await expect(claim(runId, 'approve', payload('early'), T0, T0 + 1000)).resolves.toEqual({
          won: true,
          status: 'paused',
        });
        await expect(claim(runId, 'approve', payload('second'), T0 + 999)).resolves.toEqual({
          won: false,
          status: 'paused',
          existing: payload('early'),
        });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 999)).resolves.toEqual({
          approve: payload('early'),
        });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 1000)).resolves.toEqual({});
        // Gone for good, even asked with an earlier `now`.
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 999)).resolves.toEqual({});

        await expect(claim(runId, 'approve', payload('third'), T0 + 1001)).resolves.toEqual({
          won: true,
          status: 'paused',
        });
        // Without an expiry of its own, the new claim holds for good.
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 99_000)).resolves.toEqual({
          approve: payload('third'),
        });
      });

      it('replaces an expired early claim by another early claim with its own expiry', async () => {
        const runId = await newRun();
        await claim(runId, 'approve', payload('first'), T0, T0 + 1000);
        await expect(claim(runId, 'approve', payload('second'), T0 + 2000, T0 + 3000)).resolves.toMatchObject({
          won: true,
        });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 2999)).resolves.toEqual({
          approve: payload('second'),
        });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 3000)).resolves.toEqual({});
      });

      it('take makes an early claim permanent', async () => {
        const runId = await newRun();
        await claim(runId, 'approve', payload('early'), T0, T0 + 1000);
        await expect(interrupts.claims(runId, ['approve', 'other'], 'take', T0 + 500)).resolves.toEqual({
          approve: payload('early'),
        });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 5000)).resolves.toEqual({
          approve: payload('early'),
        });
        await expect(claim(runId, 'approve', payload('late'), T0 + 5000)).resolves.toMatchObject({
          won: false,
          existing: payload('early'),
        });
      });

      it('take does not revive an early claim that has expired', async () => {
        const runId = await newRun();
        await claim(runId, 'approve', payload('early'), T0, T0 + 1000);
        await expect(interrupts.claims(runId, ['approve'], 'take', T0 + 1000)).resolves.toEqual({});
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0)).resolves.toEqual({});
      });

      it('peek leaves an early claim to expire', async () => {
        const runId = await newRun();
        await claim(runId, 'approve', payload('early'), T0, T0 + 1000);
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 500)).resolves.toEqual({
          approve: payload('early'),
        });
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 5000)).resolves.toEqual({});
      });

      it('peek moves the run to `now` in the live-run index when it finds a claim; take does not', async () => {
        const runId = await newRun('running', T0);
        const other = await newRun('running', T0 + 10);
        await interrupts.claims(runId, ['approve'], 'peek', T0 + 100); // nothing found
        expect(await isIndexedAt(runId, T0)).toBe(true);

        await claim(runId, 'approve', payload(1), T0 + 100);
        expect(await isIndexedAt(runId, T0)).toBe(true); // running: a claim does not move it
        await interrupts.claims(runId, ['approve'], 'take', T0 + 200);
        expect(await isIndexedAt(runId, T0)).toBe(true);
        await expect(interrupts.claims(runId, ['approve'], 'peek', T0 + 300)).resolves.toEqual({
          approve: payload(1),
        });
        expect(await isIndexedAt(runId, T0 + 300)).toBe(true);
        expect(await h.storage.listActive(10)).toEqual([other, runId]);
      });

      it('answers nothing for no paths, or for a run without claims', async () => {
        const runId = await newRun();
        await expect(interrupts.claims(runId, [], 'take', T0)).resolves.toEqual({});
        await expect(interrupts.claims(runId, ['approve'], 'take', T0)).resolves.toEqual({});
        await expect(interrupts.claims(newRunId(), ['approve'], 'peek', T0)).resolves.toEqual({});
      });
    });

    describe('correlation ids', () => {
      const opts = { retentionMs: RETENTION };
      const newReactor = () => `approvals-${newRunId().slice(4, 12)}`;

      it('binds a new id, refreshes it for the same run, and refuses another run', async () => {
        const reactor = newReactor();
        const [r1, r2] = [newRunId(), newRunId()];
        await expect(interrupts.findCorrelationId(reactor, 'order-1')).resolves.toBeUndefined();
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', r1, 'approve', opts)).resolves.toEqual({
          ok: true,
        });
        await expect(interrupts.findCorrelationId(reactor, 'order-1')).resolves.toBe(r1);
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', r1, 'approve', opts)).resolves.toEqual({
          ok: true,
        });
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', r2, 'approve', opts)).resolves.toEqual({
          ok: false,
          boundTo: r1,
        });
        // `replacing` another run than the bound one takes nothing over.
        await expect(
          interrupts.bindCorrelationId(reactor, 'order-1', r2, 'approve', { ...opts, replacing: newRunId() }),
        ).resolves.toEqual({ ok: false, boundTo: r1 });
        await expect(interrupts.findCorrelationId(reactor, 'order-1')).resolves.toBe(r1);
      });

      it('takes an id over from the run it is replacing', async () => {
        const reactor = newReactor();
        const [r1, r2] = [newRunId(), newRunId()];
        await interrupts.bindCorrelationId(reactor, 'order-1', r1, 'approve', opts);
        await expect(
          interrupts.bindCorrelationId(reactor, 'order-1', r2, 'approve', { ...opts, replacing: r1 }),
        ).resolves.toEqual({ ok: true });
        await expect(interrupts.findCorrelationId(reactor, 'order-1')).resolves.toBe(r2);
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', r1, 'approve', opts)).resolves.toEqual({
          ok: false,
          boundTo: r2,
        });
        // Replacing a run on an unbound id just binds it.
        await expect(
          interrupts.bindCorrelationId(reactor, 'order-2', r1, 'approve', { ...opts, replacing: r2 }),
        ).resolves.toEqual({ ok: true });
        await expect(interrupts.findCorrelationId(reactor, 'order-2')).resolves.toBe(r1);
      });

      it('keeps ids apart per reactor, whatever colons or braces the names hold', async () => {
        const [r1, r2, r3] = [newRunId(), newRunId(), newRunId()];
        const reactor = newReactor();
        await interrupts.bindCorrelationId(`${reactor}:a`, 'b', r1, 'approve', opts);
        await expect(interrupts.bindCorrelationId(reactor, 'a:b', r2, 'approve', opts)).resolves.toEqual({
          ok: true,
        });
        await expect(interrupts.bindCorrelationId(`{${reactor}}`, '{x}', r3, 'approve', opts)).resolves.toEqual({
          ok: true,
        });
        await expect(interrupts.findCorrelationId(`${reactor}:a`, 'b')).resolves.toBe(r1);
        await expect(interrupts.findCorrelationId(reactor, 'a:b')).resolves.toBe(r2);
        await expect(interrupts.findCorrelationId(`{${reactor}}`, '{x}')).resolves.toBe(r3);
        await expect(interrupts.findCorrelationId(`${newReactor()}`, 'a:b')).resolves.toBeUndefined();
      });

      it('mails a resume to an unbound id: queued, then exists, per interrupt path', async () => {
        const reactor = newReactor();
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'approve', payload('yes'), { now: T0, ttlMs: 5000 }),
        ).resolves.toEqual({ kind: 'queued', expiresAt: T0 + 5000 });
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'approve', payload('again'), { now: T0 + 1, ttlMs: 5000 }),
        ).resolves.toEqual({ kind: 'exists' });
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'ship', payload('ship'), { now: T0 + 2, ttlMs: 9000 }),
        ).resolves.toEqual({ kind: 'queued', expiresAt: T0 + 9002 });
        // Mailing binds nothing.
        await expect(interrupts.findCorrelationId(reactor, 'order-1')).resolves.toBeUndefined();
      });

      it('binding takes the mailed resume of its own interrupt path only', async () => {
        const reactor = newReactor();
        const runId = newRunId();
        const mail = (path: string, c: ResumeClaim) =>
          interrupts.mailResume(reactor, 'order-1', path, c, { now: T0, ttlMs: RETENTION });
        await mail('approve', payload('yes'));
        await mail('ship', payload('ship'));
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', runId, 'approve', opts)).resolves.toEqual({
          ok: true,
          early: payload('yes'),
        });
        // Taken once.
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', runId, 'approve', opts)).resolves.toEqual({
          ok: true,
        });
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', runId, 'ship', opts)).resolves.toEqual({
          ok: true,
          early: payload('ship'),
        });
      });

      it('a refused binding takes nothing from the mailbox', async () => {
        const reactor = newReactor();
        const [r1, r2] = [newRunId(), newRunId()];
        await interrupts.mailResume(reactor, 'order-1', 'approve', payload('yes'), { now: T0, ttlMs: RETENTION });
        await interrupts.bindCorrelationId(reactor, 'order-1', r1, 'other', opts);
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', r2, 'approve', opts)).resolves.toEqual({
          ok: false,
          boundTo: r1,
        });
        await expect(interrupts.bindCorrelationId(reactor, 'order-1', r1, 'approve', opts)).resolves.toEqual({
          ok: true,
          early: payload('yes'),
        });
      });

      it('answers the bound run instead of mailing, unless told to ignore it', async () => {
        const reactor = newReactor();
        const [r1, r2] = [newRunId(), newRunId()];
        await interrupts.bindCorrelationId(reactor, 'order-1', r1, 'approve', opts);
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'approve', payload('yes'), { now: T0, ttlMs: 5000 }),
        ).resolves.toEqual({ kind: 'bound', runId: r1 });
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'approve', payload('yes'), {
            now: T0,
            ttlMs: 5000,
            ignoreBoundTo: r2,
          }),
        ).resolves.toEqual({ kind: 'bound', runId: r1 });
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'approve', payload('yes'), {
            now: T0,
            ttlMs: 5000,
            ignoreBoundTo: r1,
          }),
        ).resolves.toEqual({ kind: 'queued', expiresAt: T0 + 5000 });
        await expect(
          interrupts.mailResume(reactor, 'order-1', 'approve', payload('no'), {
            now: T0,
            ttlMs: 5000,
            ignoreBoundTo: r1,
          }),
        ).resolves.toEqual({ kind: 'exists' });
        // The run that takes the id over finds it.
        await expect(
          interrupts.bindCorrelationId(reactor, 'order-1', r2, 'approve', { ...opts, replacing: r1 }),
        ).resolves.toEqual({ ok: true, early: payload('yes') });
      });
    });

    describe('the index of runs waiting for an event', () => {
      const sorted = async (event: string) =>
        (await interrupts.eventWatchers!(event)).map((w) => `${w.runId}|${w.path}`).sort();

      it('lists each run and path once, per event name, until it is unlisted', async () => {
        const [r1, r2] = [newRunId(), newRunId()];
        await interrupts.watchEvent!('order.paid', r1, 'approve');
        await interrupts.watchEvent!('order.paid', r1, 'approve');
        await interrupts.watchEvent!('order.paid', r1, 'child.pay');
        await interrupts.watchEvent!('order.paid', r2, 'approve');
        await interrupts.watchEvent!('order.{shipped}', r2, 'approve');
        expect(await sorted('order.paid')).toEqual([`${r1}|approve`, `${r1}|child.pay`, `${r2}|approve`].sort());
        expect(await sorted('order.{shipped}')).toEqual([`${r2}|approve`]);
        await interrupts.unwatchEvent!('order.paid', r1, 'approve');
        await interrupts.unwatchEvent!('order.paid', r1, 'approve');
        expect(await sorted('order.paid')).toEqual([`${r1}|child.pay`, `${r2}|approve`].sort());
        expect(await sorted('nobody')).toEqual([]);
      });
    });
  });
}
