import { ContextTooLargeError, CorruptRecordError, LeaseLostError } from '../../lib/core/errors';
import type { RunState, RunStatus } from '../../lib/core/model/run-state';
import type { SaveOptions } from '../../lib/core/ports';
import { encodeDelta } from '../../lib/storage/run-record.codec';
import { letTimePass, type AdapterFactory, type AdapterHarness, type HarnessOptions } from './adapter-harness';
import { makeRunState, newRunId, T0 } from './run-state.factory';
import { fieldsHolding, SECRET, testCipher } from './test-cipher';

const NON_TERMINAL: RunStatus[] = ['pending', 'running', 'rolling_back', 'paused'];
const TERMINAL: RunStatus[] = ['completed', 'failed', 'halted', 'cancelled'];
const LONG_TTL = 60_000;

/** The ReactorStorage contract (`lib/core/ports/reactor-storage.port.ts`), for any adapter. */
export function describeStorageConformance(name: string, factory: AdapterFactory): void {
  describe(`ReactorStorage conformance: ${name}`, () => {
    let h: AdapterHarness;
    const extra: AdapterHarness[] = [];

    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await h.cleanup();
      for (const other of extra.splice(0)) await other.cleanup();
    });

    async function harnessWith(options: HarnessOptions): Promise<AdapterHarness> {
      const other = await factory(options);
      extra.push(other);
      return other;
    }

    const short = () => h.shortTtlMs ?? 100;
    const leaseName = (runId: string) => `run:${runId}`;

    describe('save and load', () => {
      it('round-trips a run', async () => {
        const state = makeRunState();
        await expect(h.storage.save(state)).resolves.toBe(true);
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
      });

      it("round-trips the inputs a run was given from a redacted value, its own and its children's", async () => {
        const state = makeRunState({ redactedInputs: ['card'], retriedFrom: 'run-0', retryCount: 2 });
        state.children = { pay: makeRunState({ runId: `${state.runId}:pay`, redactedInputs: ['token'] }) };
        await expect(h.storage.save(state)).resolves.toBe(true);
        const loaded = await h.storage.load(state.runId);
        expect(loaded?.redactedInputs).toEqual(['card']);
        expect(loaded).toMatchObject({ retriedFrom: 'run-0', retryCount: 2 });
        expect(loaded?.children.pay.redactedInputs).toEqual(['token']);
        expect(loaded).toEqual(state);
      });

      it('shares nothing by reference with the saved or loaded objects', async () => {
        const state = makeRunState();
        const expected = structuredClone(state);
        await h.storage.save(state);
        (state.inputs.order as { total: number }).total = 0;
        state.completed.push('mutated-after-save');

        const first = await h.storage.load(state.runId);
        expect(first).toEqual(expected);
        first!.results.extra = 'mutated-after-load';
        (first!.undoStack[0].result as { reservationId: string }).reservationId = 'changed';

        const second = await h.storage.load(state.runId);
        expect(second).toEqual(expected);
        expect(second).not.toBe(first);
      });

      it('applies JSON rules (undefined fields vanish), like every durable adapter', async () => {
        const state = makeRunState({ value: undefined, inputs: { a: undefined, b: 1 } });
        await h.storage.save(state);
        const loaded = await h.storage.load(state.runId);
        expect(loaded).not.toHaveProperty('value');
        expect(loaded!.inputs).toEqual({ b: 1 });
      });

      it('returns undefined for a run that does not exist', async () => {
        await expect(h.storage.load(newRunId())).resolves.toBeUndefined();
      });

      it('overwrites a non-terminal run with its next checkpoint', async () => {
        const state = makeRunState();
        await h.storage.save(state);
        const next = {
          ...state,
          completed: ['reserve', 'charge'],
          results: { ...state.results, charge: 7 },
          updatedAt: T0 + 10,
        };
        await expect(h.storage.save(next)).resolves.toBe(true);
        await expect(h.storage.load(state.runId)).resolves.toEqual(next);
      });

      it('keeps runs apart', async () => {
        const a = makeRunState({ reactorName: 'a' });
        const b = makeRunState({ reactorName: 'b' });
        await h.storage.save(a);
        await h.storage.save(b);
        expect((await h.storage.load(a.runId))!.reactorName).toBe('a');
        expect((await h.storage.load(b.runId))!.reactorName).toBe('b');
      });
    });

    describe('createOnly', () => {
      it('creates a new run and refuses a duplicate id without writing', async () => {
        const first = makeRunState();
        await expect(h.storage.save(first, { createOnly: true })).resolves.toBe(true);
        const duplicate = { ...first, reactorName: 'other', updatedAt: T0 + 5 };
        await expect(h.storage.save(duplicate, { createOnly: true })).resolves.toBe(false);
        await expect(h.storage.load(first.runId)).resolves.toEqual(first);
      });

      it('refuses even when the existing run is terminal', async () => {
        const done = makeRunState({ status: 'completed' });
        await h.storage.save(done);
        await expect(h.storage.save(makeRunState({ runId: done.runId }), { createOnly: true })).resolves.toBe(false);
        expect((await h.storage.load(done.runId))!.status).toBe('completed');
      });
    });

    describe('fenced saves', () => {
      it('succeed while the lease is held', async () => {
        const state = makeRunState();
        const lease = (await h.locks.acquire(leaseName(state.runId), LONG_TTL))!;
        await expect(h.storage.save(state, { lease, leaseTtlMs: LONG_TTL, createOnly: true })).resolves.toBe(true);
        const next = { ...state, updatedAt: T0 + 1, completed: ['reserve', 'charge'] };
        await expect(h.storage.save(next, { lease, leaseTtlMs: LONG_TTL })).resolves.toBe(true);
        await expect(h.storage.load(state.runId)).resolves.toEqual(next);
        expect(await h.locks.release(lease)).toBe(true);
      });

      it('refresh the lease to leaseTtlMs', async () => {
        const state = makeRunState();
        const lease = (await h.locks.acquire(leaseName(state.runId), short()))!;
        await h.storage.save(state, { lease, leaseTtlMs: LONG_TTL });
        await letTimePass(h, short());
        expect(await h.locks.isHeld(lease.key)).toBe(true);
        // Still ours: a later fenced save and the release go through.
        await expect(h.storage.save({ ...state, updatedAt: T0 + 1 }, { lease, leaseTtlMs: LONG_TTL })).resolves.toBe(
          true,
        );
        expect(await h.locks.release(lease)).toBe(true);
      });

      it('leave the lease TTL alone without leaseTtlMs', async () => {
        const state = makeRunState();
        const lease = (await h.locks.acquire(leaseName(state.runId), short()))!;
        await h.storage.save(state, { lease });
        await letTimePass(h, short());
        expect(await h.locks.isHeld(lease.key)).toBe(false);
      });

      it('throw LeaseLostError and write nothing when the token does not hold the lease', async () => {
        const state = makeRunState();
        await h.storage.save(state);
        const held = (await h.locks.acquire(leaseName(state.runId), LONG_TTL))!;
        const forged = { key: held.key, token: `${held.token}-forged` };

        const error = await h.storage
          .save({ ...state, status: 'completed', updatedAt: T0 + 9 }, { lease: forged, leaseTtlMs: LONG_TTL })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LeaseLostError);
        expect(error).toMatchObject({ code: 'LEASE_LOST', runId: state.runId });
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
        expect(await h.storage.listActive(10)).toEqual([state.runId]);
        // The real holder is untouched.
        expect(await h.locks.release(held)).toBe(true);
      });

      it('throw LeaseLostError for a run that was never written, and create nothing', async () => {
        const state = makeRunState();
        const lease = { key: leaseName(state.runId), token: 'not-a-holder' };
        await expect(h.storage.save(state, { lease, createOnly: true })).rejects.toBeInstanceOf(LeaseLostError);
        await expect(h.storage.load(state.runId)).resolves.toBeUndefined();
        expect(await h.storage.listActive(10)).toEqual([]);
      });

      it('throw LeaseLostError after the lease expired and another worker took it', async () => {
        const state = makeRunState();
        const mine = (await h.locks.acquire(leaseName(state.runId), short()))!;
        await h.storage.save(state, { lease: mine });
        await letTimePass(h, short());
        const theirs = (await h.locks.acquire(leaseName(state.runId), LONG_TTL))!;
        expect(theirs).not.toBeNull();

        const stale = { ...state, completed: ['stale'], updatedAt: T0 + 50 };
        await expect(h.storage.save(stale, { lease: mine, leaseTtlMs: LONG_TTL })).rejects.toBeInstanceOf(
          LeaseLostError,
        );
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
        // The stale write did not refresh or steal the new holder's lease.
        await expect(h.storage.save({ ...state, updatedAt: T0 + 60 }, { lease: theirs })).resolves.toBe(true);
      });

      it('throw LeaseLostError after the lease expired, even if nobody took it', async () => {
        const state = makeRunState();
        const lease = (await h.locks.acquire(leaseName(state.runId), short()))!;
        await h.storage.save(state, { lease });
        await letTimePass(h, short());
        await expect(
          h.storage.save({ ...state, updatedAt: T0 + 1 }, { lease, leaseTtlMs: LONG_TTL }),
        ).rejects.toBeInstanceOf(LeaseLostError);
        expect(await h.locks.isHeld(lease.key)).toBe(false);
      });

      it('throw LeaseLostError after the lease was released', async () => {
        const state = makeRunState();
        const lease = (await h.locks.acquire(leaseName(state.runId), LONG_TTL))!;
        await h.storage.save(state, { lease });
        await h.locks.release(lease);
        await expect(h.storage.save({ ...state, updatedAt: T0 + 1 }, { lease })).rejects.toBeInstanceOf(LeaseLostError);
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
      });
    });

    describe('acquireLease (a run created by its caller)', () => {
      const tokenFor = (runId: string, token: string) => ({ key: leaseName(runId), token });

      it('takes the lease with the first write, so the next save is fenced by it', async () => {
        const state = makeRunState();
        const lease = tokenFor(state.runId, 'caller-token');
        await expect(
          h.storage.save(state, { lease, leaseTtlMs: LONG_TTL, createOnly: true, acquireLease: true }),
        ).resolves.toBe(true);
        expect(await h.locks.isHeld(lease.key)).toBe(true);
        expect(await h.locks.acquire(lease.key, LONG_TTL)).toBeNull();
        await expect(h.storage.save({ ...state, updatedAt: T0 + 1 }, { lease })).resolves.toBe(true);
        expect(await h.locks.release(lease)).toBe(true);
      });

      it('throws LeaseLostError and writes nothing when someone holds the lease', async () => {
        const state = makeRunState();
        const held = (await h.locks.acquire(leaseName(state.runId), LONG_TTL))!;
        const lease = tokenFor(state.runId, 'other-token');
        await expect(
          h.storage.save(state, { lease, leaseTtlMs: LONG_TTL, createOnly: true, acquireLease: true }),
        ).rejects.toBeInstanceOf(LeaseLostError);
        await expect(h.storage.load(state.runId)).resolves.toBeUndefined();
        expect(await h.locks.release(held)).toBe(true);
      });

      it('with createOnly, refuses an existing run before taking anything', async () => {
        const state = makeRunState();
        await h.storage.save(state, { createOnly: true });
        const lease = tokenFor(state.runId, 'late-token');
        await expect(
          h.storage.save(
            { ...state, updatedAt: T0 + 1 },
            { lease, leaseTtlMs: LONG_TTL, createOnly: true, acquireLease: true },
          ),
        ).resolves.toBe(false);
        expect(await h.locks.isHeld(lease.key)).toBe(false);
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
      });
    });

    describe('terminal records', () => {
      it.each(TERMINAL)(
        'a %s record is never replaced by a non-terminal state (save returns false)',
        async (status) => {
          const done = makeRunState({ status, updatedAt: T0 + 100, finishedAt: T0 + 100 });
          await h.storage.save(done);
          for (const stale of NON_TERMINAL) {
            await expect(
              h.storage.save({ ...done, status: stale, finishedAt: undefined, updatedAt: T0 + 200 }),
            ).resolves.toBe(false);
          }
          await expect(h.storage.load(done.runId)).resolves.toEqual(done);
          expect(await h.storage.listActive(10)).toEqual([]);
        },
      );

      it('refuses the stale write even when it is fenced by a held lease', async () => {
        const done = makeRunState({ status: 'completed' });
        await h.storage.save(done);
        const lease = (await h.locks.acquire(leaseName(done.runId), LONG_TTL))!;
        await expect(h.storage.save({ ...done, status: 'running' }, { lease, leaseTtlMs: LONG_TTL })).resolves.toBe(
          false,
        );
        expect((await h.storage.load(done.runId))!.status).toBe('completed');
      });

      it('lets a terminal state replace a terminal record (undo of a completed run)', async () => {
        const done = makeRunState({ status: 'completed' });
        await h.storage.save(done);
        const cancelled: RunState = {
          ...done,
          status: 'cancelled',
          cancellation: { reason: 'undo', rollbackFailures: [] },
          updatedAt: T0 + 5,
        };
        await expect(h.storage.save(cancelled)).resolves.toBe(true);
        await expect(h.storage.load(done.runId)).resolves.toEqual(cancelled);
      });

      it('lets a non-terminal state replace a terminal record with reopen', async () => {
        const done = makeRunState({ status: 'completed' });
        await h.storage.save(done);
        const rollingBack: RunState = { ...done, status: 'rolling_back', updatedAt: T0 + 5 };
        const options: SaveOptions = { reopen: true };
        await expect(h.storage.save(rollingBack, options as SaveOptions)).resolves.toBe(true);
        expect((await h.storage.load(done.runId))!.status).toBe('rolling_back');
        expect(await h.storage.listActive(10)).toEqual([done.runId]);
      });
    });

    describe('checkpoints as deltas', () => {
      /** One step of a run, as the engine records it on the state it keeps saving. */
      function completeStep(state: RunState, step: string, value: unknown): void {
        state.attempts[step] = (state.attempts[step] ?? 0) + 1;
        state.trace.push({ type: 'run', step, at: state.updatedAt, attempt: state.attempts[step] });
        state.results[step] = value;
        state.completed.push(step);
        state.undoStack.push({ step, args: { n: state.completed.length }, result: value });
        state.trace.push({ type: 'complete', step, at: state.updatedAt });
        state.updatedAt += 1;
      }
      const newRun = () => makeRunState({ results: {}, completed: [], undoStack: [], attempts: {}, trace: [] });

      it('stores a trace argument that is a stored result as a reference; the head keeps what an earlier version reads', async () => {
        const state = newRun();
        await h.storage.save(state, { createOnly: true });
        const reserved = { reservation: 'r-1', note: 'n'.repeat(200) };
        completeStep(state, 'reserve', reserved);
        await h.storage.save(state);
        state.trace.push({
          type: 'run',
          step: 'charge',
          at: state.updatedAt,
          attempt: 1,
          arguments: { reserved, cents: 5 },
        });
        state.status = 'completed';
        state.value = reserved;
        await h.storage.save(state);
        const raw = await h.readRaw(state.runId);
        const holding = Object.entries(raw).filter(([, value]) => value.includes('nnnnnnnn'));
        // The result and the run's value (in `head`, with `updatedAt`: a record an earlier version
        // of this package reads during a rolling upgrade); never the trace.
        expect(holding.map(([field]) => field).sort()).toEqual(['head', 'r:reserve']);
        expect(JSON.parse(raw.head)).toMatchObject({ value: reserved, updatedAt: state.updatedAt });
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
      });

      it('a run checkpointed after each of 300 steps loads as it was at every point, read mid-way by others', async () => {
        const state = newRun();
        await h.storage.save(state, { createOnly: true });
        for (let i = 0; i < 300; i++) {
          completeStep(state, `s${i}`, { i, payload: 'x'.repeat(i % 7) });
          await expect(h.storage.save(state)).resolves.toBe(true);
          if (i % 50 === 0) {
            // Another reader, mid-way: its copy is the run so far and changing it changes nothing stored.
            const read = await h.storage.load(state.runId);
            expect(read).toEqual(state);
            read!.completed.push('reader-mutation');
            read!.trace.length = 0;
          }
        }
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
      });

      it('keeps earlier results intact however large, and later checkpoints still land', async () => {
        const state = newRun();
        completeStep(state, 'big', { blob: 'é'.repeat(50_000) });
        await h.storage.save(state);
        for (let i = 0; i < 20; i++) {
          completeStep(state, `small${i}`, i);
          await h.storage.save(state);
        }
        const loaded = await h.storage.load(state.runId);
        expect(loaded).toEqual(state);
        expect((loaded!.results.big as { blob: string }).blob).toHaveLength(50_000);
      });

      it('pops undo entries as a rollback walks the stack, and an undefined result stays undefined', async () => {
        const state = newRun();
        for (const step of ['a', 'b', 'c']) completeStep(state, step, step === 'b' ? undefined : step.toUpperCase());
        await h.storage.save(state);
        state.status = 'rolling_back';
        state.undoStack.pop();
        await h.storage.save(state);
        await expect(h.storage.load(state.runId)).resolves.toEqual(state);
        state.undoStack.pop();
        state.undoStack.pop();
        state.status = 'failed';
        await h.storage.save(state);
        const loaded = await h.storage.load(state.runId);
        expect(loaded).toEqual(state);
        expect(loaded!.undoStack).toEqual([]);
        expect(loaded!.completed).toEqual(['a', 'b', 'c']);
        expect(loaded!.results).not.toHaveProperty('b');
      });

      it('a loaded run continues by deltas, and a new object for the same run replaces the record whole', async () => {
        const state = newRun();
        for (let i = 0; i < 5; i++) completeStep(state, `s${i}`, i);
        await h.storage.save(state);
        const resumed = (await h.storage.load(state.runId))!;
        completeStep(resumed, 's5', 5);
        resumed.children.child = makeRunState({ runId: `${state.runId}/child` });
        await h.storage.save(resumed);
        await expect(h.storage.load(state.runId)).resolves.toEqual(resumed);

        // A state this adapter never saw nor loaded: nothing of the old record survives it.
        const fresh = newRun();
        fresh.runId = state.runId;
        completeStep(fresh, 'only', 1);
        await h.storage.save(fresh);
        await expect(h.storage.load(state.runId)).resolves.toEqual(fresh);
      });

      it('a stale writer after many deltas writes nothing once another worker took the run over', async () => {
        const state = newRun();
        const first = (await h.locks.acquire(leaseName(state.runId), short()))!;
        await h.storage.save(state, { lease: first, leaseTtlMs: short(), createOnly: true });
        for (let i = 0; i < 50; i++) {
          completeStep(state, `s${i}`, i);
          await h.storage.save(state, { lease: first, leaseTtlMs: short() });
        }
        await letTimePass(h, short());
        const second = { key: leaseName(state.runId), token: 'second-worker' };
        const claim = await h.storage.acquireAndLoad(state.runId, second, LONG_TTL);
        expect(claim).toEqual({ acquired: true, state });
        const taken = (claim as { state: RunState }).state;
        completeStep(taken, 'by-second', 'B');
        await h.storage.save(taken, { lease: second, leaseTtlMs: LONG_TTL });

        completeStep(state, 'by-first', 'A');
        await expect(h.storage.save(state, { lease: first, leaseTtlMs: short() })).rejects.toBeInstanceOf(
          LeaseLostError,
        );
        await expect(h.storage.load(state.runId)).resolves.toEqual(taken);
      });

      it('reads a run stored whole (the format before deltas) and rewrites it in fields on its next save', async () => {
        const state = makeRunState();
        expect(h.writeRaw).toBeDefined(); // both adapters can store a record verbatim
        await h.writeRaw!(state.runId, JSON.stringify(state));
        const loaded = (await h.storage.load(state.runId))!;
        expect(loaded).toEqual(state);
        completeStep(loaded, 'charge', { chargeId: 'c-1' });
        await h.storage.save(loaded);
        await expect(h.storage.load(state.runId)).resolves.toEqual(loaded);
      });
    });

    describe('cancel requests', () => {
      it('are stored with a live run and reported by its next checkpoint and by a load, not before', async () => {
        const state = makeRunState({ status: 'running' });
        await h.storage.save(state);
        expect(h.storage.cancelRequest!(state)).toBeUndefined();
        await expect(h.storage.requestCancel!(state.runId, 'changed my mind')).resolves.toBe('running');
        expect(h.storage.cancelRequest!(state)).toBeUndefined();
        state.completed.push('a');
        state.results.a = 1;
        await h.storage.save(state);
        expect(h.storage.cancelRequest!(state)).toBe('changed my mind');
        const loaded = await h.storage.load(state.runId);
        expect(h.storage.cancelRequest!(loaded!)).toBe('changed my mind');
        expect(loaded).toEqual(state);
      });

      it('survive a full write of the run and end with its terminal write', async () => {
        const state = makeRunState({ status: 'running' });
        await h.storage.save(state);
        await h.storage.requestCancel!(state.runId, 'stop');
        const copy = structuredClone(state); // an object this adapter has not seen: written whole
        await h.storage.save(copy);
        expect(h.storage.cancelRequest!(copy)).toBe('stop');
        copy.status = 'cancelled';
        await h.storage.save(copy);
        expect(h.storage.cancelRequest!((await h.storage.load(state.runId))!)).toBeUndefined();
      });

      it('leave a terminal run as it is and say its status; a missing run is undefined', async () => {
        const done = makeRunState({ status: 'completed' });
        await h.storage.save(done);
        await expect(h.storage.requestCancel!(done.runId, 'late')).resolves.toBe('completed');
        expect(h.storage.cancelRequest!((await h.storage.load(done.runId))!)).toBeUndefined();
        await expect(h.storage.requestCancel!(newRunId(), 'x')).resolves.toBeUndefined();
      });

      it('store nothing with a run that is rolling back, and say its status', async () => {
        const state = makeRunState({ status: 'rolling_back' });
        await h.storage.save(state);
        await expect(h.storage.requestCancel!(state.runId, 'too late')).resolves.toBe('rolling_back');
        expect(h.storage.cancelRequest!((await h.storage.load(state.runId))!)).toBeUndefined();
        state.status = 'failed';
        await h.storage.save(state);
        expect(h.storage.cancelRequest!(state)).toBeUndefined();
      });
    });

    describe('idempotency keys', () => {
      it('bind a key to the first run id, per reactor, until the window ends', async () => {
        const key = `order-${newRunId()}`;
        await expect(h.storage.claimIdempotencyKey!('checkout', key, 'run-1', short())).resolves.toBe('run-1');
        await expect(h.storage.claimIdempotencyKey!('checkout', key, 'run-2', short())).resolves.toBe('run-1');
        await expect(h.storage.claimIdempotencyKey!('refund', key, 'run-3', short())).resolves.toBe('run-3');
        // A key with the characters of a Redis hash tag is only a key.
        await expect(h.storage.claimIdempotencyKey!('checkout', `{${key}}`, 'run-4', short())).resolves.toBe('run-4');
        await letTimePass(h, short());
        await expect(h.storage.claimIdempotencyKey!('checkout', key, 'run-5', short())).resolves.toBe('run-5');
      });

      it('give concurrent callers one run id', async () => {
        const key = `order-${newRunId()}`;
        const ids = await Promise.all(
          Array.from({ length: 10 }, (_, i) => h.storage.claimIdempotencyKey!('checkout', key, `run-${i}`, LONG_TTL)),
        );
        expect(new Set(ids).size).toBe(1);
      });

      it('unbind a key only from the run it is bound to, so the next caller binds it', async () => {
        const key = `order-${newRunId()}`;
        await h.storage.claimIdempotencyKey!('checkout', key, 'run-1', LONG_TTL);
        await h.storage.releaseIdempotencyKey!('checkout', key, 'run-other');
        await expect(h.storage.claimIdempotencyKey!('checkout', key, 'run-2', LONG_TTL)).resolves.toBe('run-1');
        await h.storage.releaseIdempotencyKey!('checkout', key, 'run-1');
        await expect(h.storage.claimIdempotencyKey!('checkout', key, 'run-3', LONG_TTL)).resolves.toBe('run-3');
        // A key that is bound to nothing stays unbound.
        await h.storage.releaseIdempotencyKey!('checkout', `free-${key}`, 'run-1');
        await expect(h.storage.claimIdempotencyKey!('checkout', `free-${key}`, 'run-4', LONG_TTL)).resolves.toBe(
          'run-4',
        );
      });
    });

    describe('listRuns', () => {
      it("pages a reactor's runs newest first, filtered by status and since, from the index the create writes", async () => {
        const reactorName = `listed-${newRunId()}`;
        const created: RunState[] = [];
        for (let i = 0; i < 7; i++) {
          const state = makeRunState({
            reactorName,
            status: i % 2 === 0 ? 'completed' : 'failed',
            createdAt: T0 + i,
            updatedAt: T0 + i,
          });
          await h.storage.save(state, { createOnly: true });
          created.push(state);
        }
        // A later checkpoint (not a create) does not add the run twice; another reactor's runs stay apart.
        await h.storage.save({ ...created[0], updatedAt: T0 + 50 });
        await h.storage.save(makeRunState({ reactorName: `${reactorName}-other` }), { createOnly: true });

        const newestFirst = [...created].reverse().map((r) => r.runId);
        const first = await h.storage.listRuns!({ reactorName, limit: 3 });
        expect(first.runs.map((r) => r.runId)).toEqual(newestFirst.slice(0, 3));
        expect(first.runs[0]).toEqual({ runId: created[6].runId, reactorName, status: 'completed', createdAt: T0 + 6 });
        const rest = await h.storage.listRuns!({ reactorName, limit: 10, before: first.next });
        expect(rest.runs.map((r) => r.runId)).toEqual(newestFirst.slice(3));
        expect(rest.next).toBeUndefined();

        const failed = await h.storage.listRuns!({ reactorName, status: 'failed', limit: 10 });
        expect(failed.runs.map((r) => r.runId)).toEqual([created[5], created[3], created[1]].map((r) => r.runId));
        const recent = await h.storage.listRuns!({ reactorName, since: T0 + 5, limit: 10 });
        expect(recent.runs.map((r) => r.runId)).toEqual([created[6].runId, created[5].runId]);
      });

      it('lists by tag (issue 25): tags given on create or added by a later checkpoint, stored and indexed', async () => {
        const reactorName = `tagged-${newRunId()}`;
        const created: RunState[] = [];
        for (let i = 0; i < 5; i++) {
          const state = makeRunState({
            reactorName,
            status: i === 3 ? 'failed' : 'running',
            createdAt: T0 + i,
            updatedAt: T0 + i,
            ...(i % 2 === 0 ? { tags: { customer: 'acme' } } : {}),
          });
          await h.storage.save(state, { createOnly: true });
          created.push(state);
        }
        // A later checkpoint tags run 3 (a new object, as ctx.tag makes) and run 1 with another value.
        created[3].tags = { customer: 'acme', 'order.id': 'a=b c/d' };
        created[3].updatedAt = T0 + 60;
        await h.storage.save(created[3]);
        created[1].tags = { customer: 'globex' };
        await h.storage.save(created[1]);
        // Run 0 is tagged again to another value: its old entry no longer matches.
        created[0].tags = { customer: 'initech' };
        await h.storage.save(created[0]);
        await h.storage.save(makeRunState({ reactorName: `${reactorName}-other`, tags: { customer: 'acme' } }), {
          createOnly: true,
        });

        const tag = { key: 'customer', value: 'acme' };
        const first = await h.storage.listRuns!({ reactorName, tag, limit: 2 });
        expect(first.runs.map((r) => r.runId)).toEqual([created[4].runId, created[3].runId]);
        expect(first.runs[1]).toEqual({ runId: created[3].runId, reactorName, status: 'failed', createdAt: T0 + 3 });
        const rest = await h.storage.listRuns!({ reactorName, tag, limit: 10, before: first.next });
        expect(rest.runs.map((r) => r.runId)).toEqual([created[2].runId]);
        const failed = await h.storage.listRuns!({ reactorName, tag, status: 'failed', limit: 10 });
        expect(failed.runs.map((r) => r.runId)).toEqual([created[3].runId]);
        const odd = await h.storage.listRuns!({ reactorName, tag: { key: 'order.id', value: 'a=b c/d' }, limit: 10 });
        expect(odd.runs.map((r) => r.runId)).toEqual([created[3].runId]);
        const globex = await h.storage.listRuns!({ reactorName, tag: { key: 'customer', value: 'globex' }, limit: 10 });
        expect(globex.runs.map((r) => r.runId)).toEqual([created[1].runId]);
        const initech = await h.storage.listRuns!({
          reactorName,
          tag: { key: 'customer', value: 'initech' },
          limit: 9,
        });
        expect(initech.runs.map((r) => r.runId)).toEqual([created[0].runId]);
        expect(
          (await h.storage.listRuns!({ reactorName, tag: { key: 'customer', value: 'x' }, limit: 9 })).runs,
        ).toEqual([]);
        // The tags are stored with the run, and a record without them has none.
        expect((await h.storage.load(created[3].runId))?.tags).toEqual({ customer: 'acme', 'order.id': 'a=b c/d' });
        const plain = makeRunState({ reactorName });
        await h.storage.save(plain, { createOnly: true });
        expect((await h.storage.load(plain.runId))?.tags).toBeUndefined();
      });
    });

    describe('retention per status (issue 25)', () => {
      // Minutes, so that PTTL read on Redis in real time is still close to what was stamped.
      const CTX = 60_000;
      const RETENTION = { completed: 2 * CTX, failed: 10 * CTX, halted: CTX / 2, cancelled: 15 * CTX };
      let r: AdapterHarness;
      /** The adapters' time: the fake clock's, else real time (the Redis storage's clock). */
      const now = () => r.clock?.now() ?? Date.now();

      beforeEach(async () => {
        r = await harnessWith({ contextTtlMs: CTX, retention: RETENTION });
      });

      /** The record's TTL is `ms`, give or take what real time took since the write. */
      async function expectTtl(runId: string, ms: number): Promise<void> {
        const ttl = await r.ttlOf!(runId);
        expect(ttl).toBeLessThanOrEqual(ms);
        expect(ttl).toBeGreaterThan(ms - 5_000);
      }

      const paused = (timeoutAt?: number) =>
        makeRunState({
          status: 'paused',
          updatedAt: now(),
          interrupts: { approve: { path: 'approve', pausedAt: now(), ...(timeoutAt ? { timeoutAt } : {}) } },
        });
      /** A run parked at a sleep step until `wakeAt` (what `r.sleep` stores: its due time in `retryAt`). */
      const sleeping = (wakeAt: number) =>
        makeRunState({ updatedAt: now(), handoff: { mode: 'all', step: 'nap' }, retryAt: { nap: wakeAt } });

      it("stamps a finished run's record with its status's retention, and a live run's with contextTtlMs", async () => {
        const runs = TERMINAL.map((status) => makeRunState({ status }));
        const live = makeRunState({ updatedAt: now() });
        for (const run of [...runs, live]) await r.storage.save(run);
        for (const run of runs) await expectTtl(run.runId, RETENTION[run.status as keyof typeof RETENTION]);
        await expectTtl(live.runId, CTX);
      });

      it('re-stamps the TTL on the write that finishes the run (from contextTtlMs to the status retention)', async () => {
        const run = makeRunState({ updatedAt: now() });
        await r.storage.save(run);
        await expectTtl(run.runId, CTX);
        run.status = 'failed';
        await r.storage.save(run);
        await expectTtl(run.runId, RETENTION.failed);
      });

      it('gives a run undone after completing (completed, then cancelled) the cancelled retention', async () => {
        const run = makeRunState({ status: 'completed' });
        await r.storage.save(run);
        await expectTtl(run.runId, RETENTION.completed);
        await r.storage.save({ ...run, status: 'cancelled', updatedAt: run.updatedAt + 1 });
        await expectTtl(run.runId, RETENTION.cancelled);
        // And back: a run reopened (retry) is live again, on contextTtlMs.
        await r.storage.save({ ...run, status: 'running', updatedAt: now() }, { reopen: true });
        await expectTtl(run.runId, CTX);
      });

      it('keeps a broken run (markBroken) for the failed retention', async () => {
        const run = makeRunState({ updatedAt: now() });
        await r.storage.save(run);
        await r.storage.markBroken(run.runId, undefined, { message: 'unreadable', code: 'CORRUPT_RECORD' });
        await expectTtl(run.runId, RETENTION.failed);
      });

      it('keeps a paused run with a deadline past contextTtlMs until the deadline, plus contextTtlMs', async () => {
        const deadline = now() + 20 * CTX;
        const timed = paused(deadline);
        const untimed = paused();
        await r.storage.save(timed);
        await r.storage.save(untimed);
        await expectTtl(timed.runId, 21 * CTX);
        // Without a deadline: contextTtlMs from its last write, as any live run.
        await expectTtl(untimed.runId, CTX);
        // A deadline already past adds nothing.
        const late = paused(now() - 1);
        await r.storage.save(late);
        await expectTtl(late.runId, CTX);
        if (!r.advance) return; // real time: the TTLs above are what Redis expires by
        await letTimePass(r, 2 * CTX);
        expect(await r.storage.load(untimed.runId)).toBeUndefined();
        expect((await r.storage.load(timed.runId))?.status).toBe('paused');
        expect(await r.storage.listActive(10, deadline + 1)).toEqual([timed.runId]);
        await letTimePass(r, deadline - now() + CTX - 2);
        expect((await r.storage.load(timed.runId))?.status).toBe('paused');
        await letTimePass(r, 1);
        expect(await r.storage.load(timed.runId)).toBeUndefined();
      });

      it('keeps a paused run until the earliest deadline of its own interrupts and its paused children', async () => {
        const run = paused(now() + 30 * CTX);
        run.children = {
          child: makeRunState({
            runId: `${run.runId}:child`,
            status: 'paused',
            interrupts: { sign: { path: 'child.sign', pausedAt: now(), timeoutAt: now() + 5 * CTX } },
          }),
        };
        await r.storage.save(run);
        await expectTtl(run.runId, 6 * CTX);
      });

      it('keeps a sleeping run until its wake-up, plus contextTtlMs', async () => {
        const wakeAt = now() + 8 * CTX;
        const run = sleeping(wakeAt);
        await r.storage.save(run);
        await expectTtl(run.runId, 9 * CTX);
        if (!r.advance) return;
        await letTimePass(r, 3 * CTX);
        expect((await r.storage.load(run.runId))?.retryAt).toEqual({ nap: wakeAt });
        // Woken, it lives contextTtlMs from its next write.
        const woken = (await r.storage.load(run.runId))!;
        delete woken.retryAt;
        delete woken.handoff;
        woken.updatedAt = now();
        await r.storage.save(woken);
        await expectTtl(run.runId, CTX);
      });

      it('lists a failed run kept longer than contextTtlMs: the runs index keeps the longest retention', async () => {
        const reactorName = `kept-${newRunId()}`;
        // Created longer than contextTtlMs ago, failed, kept for its retention.
        const old = makeRunState({ reactorName, status: 'failed', createdAt: now() - 3 * CTX, updatedAt: now() });
        await r.storage.save(old, { createOnly: true });
        // A later create trims the index (of its shard, on Redis): of runs created longer ago than
        // the longest retention only (test/storage/redis-retention.spec.ts checks the trim itself).
        const fresh = makeRunState({ reactorName, createdAt: now(), updatedAt: now() });
        await r.storage.save(fresh, { createOnly: true });
        const listed = await r.storage.listRuns!({ reactorName, limit: 10 });
        expect(listed.runs.map((run) => run.runId)).toEqual([fresh.runId, old.runId]);
        if (!r.advance) return;
        await letTimePass(r, 2 * CTX);
        // The live run expired (contextTtlMs); the failed one is still stored and listed.
        const later = await r.storage.listRuns!({ reactorName, limit: 10 });
        expect(later.runs.map((run) => run.runId)).toEqual([old.runId]);
      });
    });

    describe('size limit', () => {
      it('throws ContextTooLargeError over maxContextBytes, counting UTF-8 bytes, and writes nothing', async () => {
        const limited = await harnessWith({ maxContextBytes: 2000 });
        const fits = makeRunState({ inputs: { note: 'a'.repeat(500) } });
        await expect(limited.storage.save(fits)).resolves.toBe(true);

        // 900 characters but 1800 bytes: over the limit with the rest of the state.
        const big = makeRunState({ inputs: { note: 'é'.repeat(900) } });
        const error = await limited.storage.save(big).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ContextTooLargeError);
        expect(error).toMatchObject({ code: 'CONTEXT_TOO_LARGE', runId: big.runId, limit: 2000 });
        // The size of the stored record, in UTF-8 bytes: the 1,800 bytes of the note and the rest.
        expect((error as ContextTooLargeError).bytes).toBe(encodeDelta(big, undefined, Infinity).bytes);
        expect((error as ContextTooLargeError).bytes).toBeGreaterThan(Buffer.byteLength(JSON.stringify(big.inputs)));
        await expect(limited.storage.load(big.runId)).resolves.toBeUndefined();

        // An oversized checkpoint of an existing run leaves the previous one in place.
        await expect(limited.storage.save({ ...fits, inputs: { note: 'é'.repeat(900) } })).rejects.toBeInstanceOf(
          ContextTooLargeError,
        );
        await expect(limited.storage.load(fits.runId)).resolves.toEqual(fits);
      });

      it('defaults to 16 MiB', async () => {
        const big = makeRunState({ inputs: { blob: 'x'.repeat(16 * 1024 * 1024) } });
        await expect(h.storage.save(big)).rejects.toMatchObject({ code: 'CONTEXT_TOO_LARGE', limit: 16 * 1024 * 1024 });
      });
    });

    describe('active index', () => {
      it('lists a run waiting for a scheduled retry by when the retry is due, not by its last write', async () => {
        const waiting = makeRunState({ updatedAt: T0, retryAt: { charge: T0 + 600_000 } });
        const stalled = makeRunState({ updatedAt: T0 + 5 });
        await h.storage.save(waiting);
        await h.storage.save(stalled);
        expect(await h.storage.listActive(10, T0 + 60_000)).toEqual([stalled.runId]);
        expect(await h.storage.listActive(10, T0 + 600_001)).toEqual([stalled.runId, waiting.runId]);
      });

      it('lists a paused run by its interrupt deadline, and one without a deadline never in a sweep page', async () => {
        const record = (timeoutAt?: number) => ({ path: 'approve', pausedAt: T0, ...(timeoutAt ? { timeoutAt } : {}) });
        const idle = makeRunState({ status: 'paused', updatedAt: T0, interrupts: { approve: record() } });
        const timed = makeRunState({ status: 'paused', updatedAt: T0, interrupts: { approve: record(T0 + 600_000) } });
        const stalled = makeRunState({ updatedAt: T0 + 5 });
        for (const run of [idle, timed, stalled]) await h.storage.save(run);
        expect(await h.storage.listActive(10, T0 + 60_000)).toEqual([stalled.runId]);
        expect(await h.storage.listActive(10, T0 + 600_001)).toEqual([stalled.runId, timed.runId]);
        expect(await h.storage.listActive(10, T0 + 365 * 24 * 3_600_000)).toEqual([stalled.runId, timed.runId]);
      });

      it('lists non-terminal runs and not terminal ones', async () => {
        const runs = [...NON_TERMINAL, ...TERMINAL].map((status, i) => makeRunState({ status, updatedAt: T0 + i }));
        for (const run of runs) await h.storage.save(run);
        expect(await h.storage.listActive(100)).toEqual(
          runs.filter((r) => NON_TERMINAL.includes(r.status)).map((r) => r.runId),
        );
      });

      it('orders by updatedAt, oldest first, and respects the limit', async () => {
        const offsets = [50, 10, 40, 20, 30];
        const runs = offsets.map((offset) => makeRunState({ updatedAt: T0 + offset }));
        for (const run of runs) await h.storage.save(run);
        const byAge = [...runs].sort((a, b) => a.updatedAt - b.updatedAt).map((r) => r.runId);
        expect(await h.storage.listActive(100)).toEqual(byAge);
        expect(await h.storage.listActive(3)).toEqual(byAge.slice(0, 3));
        expect(await h.storage.listActive(1)).toEqual(byAge.slice(0, 1));
        expect(await h.storage.listActive(0)).toEqual([]);
      });

      it('with updatedBefore, lists only runs last updated before that time (exclusive)', async () => {
        const offsets = [50, 10, 40, 20, 30];
        const runs = offsets.map((offset) => makeRunState({ updatedAt: T0 + offset }));
        for (const run of runs) await h.storage.save(run);
        const byAge = [...runs].sort((a, b) => a.updatedAt - b.updatedAt).map((r) => r.runId);
        expect(await h.storage.listActive(100, T0 + 30)).toEqual(byAge.slice(0, 2));
        expect(await h.storage.listActive(1, T0 + 30)).toEqual(byAge.slice(0, 1));
        expect(await h.storage.listActive(100, T0 + 10)).toEqual([]);
        expect(await h.storage.listActive(100, T0 + 51)).toEqual(byAge);
      });

      it('spans many runs (all shards) and merges them in order', async () => {
        const runs = Array.from({ length: 60 }, (_, i) => makeRunState({ updatedAt: T0 + ((i * 37) % 60) }));
        await Promise.all(runs.map((run) => h.storage.save(run)));
        const byAge = [...runs].sort((a, b) => a.updatedAt - b.updatedAt).map((r) => r.runId);
        expect(await h.storage.listActive(1000)).toEqual(byAge);
        expect(await h.storage.listActive(7)).toEqual(byAge.slice(0, 7));
      });

      it('moves a run on each checkpoint and drops it once terminal', async () => {
        const a = makeRunState({ updatedAt: T0 + 1 });
        const b = makeRunState({ updatedAt: T0 + 2 });
        await h.storage.save(a);
        await h.storage.save(b);
        expect(await h.storage.listActive(10)).toEqual([a.runId, b.runId]);

        await h.storage.save({ ...a, updatedAt: T0 + 3 });
        expect(await h.storage.listActive(10)).toEqual([b.runId, a.runId]);

        await h.storage.save({ ...b, status: 'completed', updatedAt: T0 + 4 });
        expect(await h.storage.listActive(10)).toEqual([a.runId]);

        await h.storage.save({ ...a, status: 'paused', updatedAt: T0 + 5 });
        expect(await h.storage.listActive(10)).toEqual([a.runId]);
      });

      it('does not re-index a terminal run on a refused createOnly or stale save', async () => {
        const done = makeRunState({ status: 'completed' });
        await h.storage.save(done);
        await h.storage.save({ ...done, status: 'running' }, { createOnly: true });
        await h.storage.save({ ...done, status: 'running' });
        expect(await h.storage.listActive(10)).toEqual([]);
      });
    });

    describe('encrypted inputs (a run marked encryptInputs, storage given an input cipher)', () => {
      /** A run whose secret sits everywhere inputs are kept: inputs, undo, a child, an inline map, a rollback. */
      function secretRun(): RunState {
        const state = makeRunState({
          encryptInputs: true,
          status: 'rolling_back',
          inputs: { card: SECRET, order: { id: 'o-1' } },
          undoStack: [{ step: 'reserve', args: { card: SECRET }, result: { reservationId: 'r-1' } }],
          rollback: {
            target: 'failed',
            compensate: [{ step: 'charge', args: { card: SECRET }, message: 'declined' }],
            failures: [],
          },
        });
        state.children = {
          pay: makeRunState({ runId: `${state.runId}:pay`, encryptInputs: true, inputs: { card: SECRET } }),
        };
        state.maps = {
          lines: {
            mapId: `${state.runId}:lines`,
            mode: 'inline',
            elements: { 0: makeRunState({ encryptInputs: true, inputs: { card: SECRET } }) },
          },
        };
        return state;
      }

      it('stores no field holding the inputs in clear, and reads the run back whole', async () => {
        const e = await harnessWith({ inputCipher: testCipher });
        expect(e.storage.encryptsInputs).toBe(true);
        const state = secretRun();
        await e.storage.save(state);
        const raw = await e.readRaw(state.runId);
        expect(fieldsHolding(raw)).toEqual([]);
        for (const field of ['head', 'inputs', 'u:0', 'c:pay', 'm:lines']) expect(raw[field]).toMatch(/^~/);
        expect(JSON.parse(raw.state)).toMatchObject({ encryptInputs: true, reactorName: 'checkout' });
        await expect(e.storage.load(state.runId)).resolves.toEqual(state);
      });

      it('writes later checkpoints as deltas, sealed too', async () => {
        const e = await harnessWith({ inputCipher: testCipher });
        const state = secretRun();
        await e.storage.save(state);
        const loaded = (await e.storage.load(state.runId))!;
        loaded.undoStack.push({ step: 'charge', args: { card: SECRET, amount: 5 }, result: { id: 'ch-1' } });
        loaded.results.charge = { id: 'ch-1' };
        loaded.completed.push('charge');
        loaded.children.pay.inputs = { card: SECRET, retry: true };
        await e.storage.save(loaded);
        const raw = await e.readRaw(state.runId);
        expect(fieldsHolding(raw)).toEqual([]);
        expect(raw['u:1']).toMatch(/^~/);
        await expect(e.storage.load(state.runId)).resolves.toEqual(loaded);
      });

      it('seals the arguments a trace entry shows (an input not also redacted would be in clear)', async () => {
        const e = await harnessWith({ inputCipher: testCipher });
        const state = secretRun();
        state.trace.push({ type: 'run', step: 'charge', at: state.updatedAt, attempt: 1, arguments: { card: SECRET } });
        await e.storage.save(state);
        const raw = await e.readRaw(state.runId);
        expect(fieldsHolding(raw)).toEqual([]);
        // The arguments alone are sealed: the entry stays JSON for every reader.
        const [, , , rest] = JSON.parse(raw[`t:${state.trace.length - 1}`]) as [
          string,
          string,
          number,
          { arguments: string },
        ];
        expect(rest.arguments).toMatch(/^~/);
        await expect(e.storage.load(state.runId)).resolves.toEqual(state);
      });

      it('seals the progress only while a rollback keeps arguments in it (it is written every checkpoint)', async () => {
        const e = await harnessWith({ inputCipher: testCipher });
        const { rollback: _rollback, ...rest } = secretRun();
        const state: RunState = { ...rest, status: 'running' };
        await e.storage.save(state);
        const raw = await e.readRaw(state.runId);
        expect(raw.head).toMatch(/^\{/);
        expect(fieldsHolding(raw)).toEqual([]);
        await expect(e.storage.load(state.runId)).resolves.toEqual(state);
      });

      it('stores a run that is not marked in clear, cipher or not', async () => {
        const e = await harnessWith({ inputCipher: testCipher });
        const state = makeRunState({ inputs: { card: SECRET } });
        await e.storage.save(state);
        expect(fieldsHolding(await e.readRaw(state.runId))).toEqual(['inputs']);
        await expect(e.storage.load(state.runId)).resolves.toEqual(state);
      });

      it('refuses to store a marked run without a cipher (ConfigurationError naming the option), writing nothing', async () => {
        expect(h.storage.encryptsInputs).toBe(false);
        const state = secretRun();
        await expect(h.storage.save(state)).rejects.toMatchObject({
          name: 'ConfigurationError',
          option: 'inputCipher',
        });
        await expect(h.storage.load(state.runId)).resolves.toBeUndefined();
      });

      it('markBroken keeps the sealed fields sealed and readable', async () => {
        const e = await harnessWith({ inputCipher: testCipher });
        const state = secretRun();
        await e.storage.save(state);
        await e.storage.markBroken(state.runId, 'checkout', {
          code: 'CORRUPT_RECORD',
          message: 'a field could not be read',
        });
        const raw = await e.readRaw(state.runId);
        expect(fieldsHolding(raw)).toEqual([]);
        const broken = (await e.storage.load(state.runId))!;
        expect(broken).toMatchObject({ status: 'failed', encryptInputs: true, inputs: state.inputs });
        expect(broken.undoStack).toEqual(state.undoStack);
        expect(broken.children).toEqual(state.children);
      });
    });

    describe('markBroken', () => {
      const reason = { code: 'UNKNOWN_REACTOR', message: "Reactor 'checkout' is not registered in this process." };

      it('turns the run into a failed record carrying the reason, still loadable, keeping what undo needs', async () => {
        const state = makeRunState({ createdAt: T0 - 1000 });
        await h.storage.save(state);
        await h.storage.markBroken(state.runId, 'checkout', reason);

        const broken = (await h.storage.load(state.runId))!;
        expect(broken).toMatchObject({
          runId: state.runId,
          reactorName: 'checkout',
          definitionHash: state.definitionHash,
          status: 'failed',
          createdAt: T0 - 1000,
          failure: {
            code: reason.code,
            message: reason.message,
            errorMessage: reason.message,
            reactorName: 'checkout',
            retryable: false,
            rollbackFailures: [],
          },
        });
        // Every field that could be read is kept: inputs, results in order, the undo stack, the trace.
        expect(broken).toMatchObject({
          inputs: state.inputs,
          results: state.results,
          completed: state.completed,
          undoStack: state.undoStack,
          attempts: state.attempts,
          trace: state.trace,
        });
        expect(typeof broken.updatedAt).toBe('number');
        expect(await h.storage.listActive(10)).toEqual([]);
      });

      it('keeps the stored reactor name when none is given', async () => {
        const state = makeRunState({ reactorName: 'billing' });
        await h.storage.save(state);
        await h.storage.markBroken(state.runId, undefined, reason);
        expect((await h.storage.load(state.runId))!).toMatchObject({
          reactorName: 'billing',
          failure: { reactorName: 'billing' },
        });
      });

      it('is idempotent: the first reason wins', async () => {
        const state = makeRunState();
        await h.storage.save(state);
        await h.storage.markBroken(state.runId, 'checkout', reason);
        const first = await h.storage.load(state.runId);
        await h.storage.markBroken(state.runId, 'checkout', { code: 'CORRUPT_RECORD', message: 'second' });
        await h.storage.markBroken(state.runId, 'checkout', reason);
        await expect(h.storage.load(state.runId)).resolves.toEqual(first);
      });

      it('stops a stale worker: its non-terminal saves write nothing afterwards', async () => {
        const state = makeRunState();
        const lease = (await h.locks.acquire(leaseName(state.runId), LONG_TTL))!;
        await h.storage.save(state, { lease });
        await h.storage.markBroken(state.runId, 'checkout', reason);
        await expect(h.storage.save({ ...state, updatedAt: T0 + 1 }, { lease })).resolves.toBe(false);
        expect((await h.storage.load(state.runId))!.status).toBe('failed');
        expect(await h.storage.listActive(10)).toEqual([]);
      });

      it('leaves a missing run missing', async () => {
        const runId = newRunId();
        await h.storage.markBroken(runId, 'checkout', reason);
        await expect(h.storage.load(runId)).resolves.toBeUndefined();
        expect(await h.storage.listActive(10)).toEqual([]);
      });
    });

    describe('unreadable records', () => {
      const raw = (fn: (h: AdapterHarness) => Promise<void>) => async () => {
        if (!h.writeRaw) return; // this adapter cannot simulate damage; see its own spec
        await fn(h);
      };

      it(
        'load throws CorruptRecordError for corrupt JSON',
        raw(async (h) => {
          const runId = newRunId();
          await h.writeRaw!(runId, '{"schemaVersion":1,"runId":"' + runId + '", "trunc');
          const error = await h.storage.load(runId).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(CorruptRecordError);
          expect(error).toMatchObject({ code: 'CORRUPT_RECORD', runId });
        }),
      );

      it(
        'load throws CorruptRecordError (SCHEMA_VERSION) for another schema version',
        raw(async (h) => {
          const state = makeRunState();
          await h.writeRaw!(state.runId, JSON.stringify({ ...state, schemaVersion: 99 }));
          await expect(h.storage.load(state.runId)).rejects.toMatchObject({
            code: 'SCHEMA_VERSION',
            runId: state.runId,
          });
        }),
      );

      it(
        'load throws CorruptRecordError for valid JSON of the wrong shape',
        raw(async (h) => {
          const state = makeRunState();
          await h.writeRaw!(state.runId, JSON.stringify({ ...state, completed: 'nope' }));
          await expect(h.storage.load(state.runId)).rejects.toMatchObject({ code: 'CORRUPT_RECORD' });
          await h.writeRaw!(state.runId, '[1,2]');
          await expect(h.storage.load(state.runId)).rejects.toMatchObject({ code: 'CORRUPT_RECORD' });
        }),
      );

      it(
        'markBroken replaces a corrupt record with a loadable failed one, keeping what it can',
        raw(async (h) => {
          const runId = newRunId();
          await h.writeRaw!(runId, '{not json');
          await h.storage.markBroken(runId, 'checkout', { code: 'CORRUPT_RECORD', message: 'unreadable' });
          const broken = (await h.storage.load(runId))!;
          expect(broken).toMatchObject({
            runId,
            reactorName: 'checkout',
            status: 'failed',
            failure: { code: 'CORRUPT_RECORD' },
          });
          expect(await h.storage.listActive(10)).toEqual([]);

          const old = makeRunState({ reactorName: 'legacy', createdAt: T0 - 5 });
          await h.writeRaw!(old.runId, JSON.stringify({ ...old, schemaVersion: 0 }));
          await h.storage.markBroken(old.runId, undefined, { code: 'SCHEMA_VERSION', message: 'old format' });
          expect(await h.storage.load(old.runId)).toMatchObject({
            reactorName: 'legacy',
            definitionHash: old.definitionHash,
            createdAt: T0 - 5,
            status: 'failed',
          });
        }),
      );
    });
  });
}
