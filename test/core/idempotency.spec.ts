import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { IdempotencyConflictError, InvalidRunStateError } from '../../lib/core/errors/run-state.error';
import { inputsHash } from '../../lib/core/model/inputs-hash';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness, deferred } from './harness';

function charge(log: string[], gate?: Promise<void>) {
  return defineReactor('charge', (r: ReactorBuilder<{ amount: number }>) =>
    r.step(
      'charge',
      async ({ amount }: { amount: number }) => {
        log.push(`charge:${amount}`);
        await gate;
        return success(`ch_${amount}`);
      },
      { amount: r.input('amount', { type: 'number' }) },
    ),
  );
}

describe('idempotency', () => {
  it('run with a key a second time returns the first run (replayed) instead of starting a second saga', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = charge(log);
    const first = await engine.run(def, { amount: 5 }, { idempotencyKey: 'order-1' });
    const again = await engine.run(def, { amount: 5 }, { idempotencyKey: 'order-1' });
    expect(first.status).toBe('completed');
    expect(first.replayed).toBeUndefined();
    expect(again).toEqual({ ...first, replayed: true });
    expect(log).toEqual(['charge:5']);
    const other = await engine.run(def, { amount: 7 }, { idempotencyKey: 'order-2' });
    expect(other.runId).not.toBe(first.runId);
  });

  it('concurrent callers with one key start one run; a replayed run() waits for its outcome', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const gate = deferred();
    const def = charge(log, gate.promise);
    const calls = Array.from({ length: 5 }, () => engine.run(def, { amount: 9 }, { idempotencyKey: 'order-9' }));
    while (log.length === 0) await new Promise((r) => setImmediate(r));
    gate.resolve();
    const outcomes = await Promise.all(calls);
    expect(log).toEqual(['charge:9']);
    expect(new Set(outcomes.map((o) => o.runId)).size).toBe(1);
    expect(outcomes.every((o) => o.status === 'completed')).toBe(true);
    expect(outcomes.filter((o) => o.replayed).length).toBe(4);
  });

  it('a key starts a new run once its window has passed', async () => {
    const { engine, clock } = createHarness({ idempotencyWindowMs: 60_000 });
    const log: string[] = [];
    const def = charge(log);
    const first = await engine.run(def, { amount: 1 }, { idempotencyKey: 'k' });
    clock.advance(60_001);
    const second = await engine.run(def, { amount: 1 }, { idempotencyKey: 'k' });
    expect(second.runId).not.toBe(first.runId);
    expect(second.replayed).toBeUndefined();
    expect(log).toEqual(['charge:1', 'charge:1']);
  });

  it("start with a run id that exists returns that run; another reactor's run id is refused", async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const def = charge(log);
    const first = await engine.run(def, { amount: 3 }, { runId: 'fixed-id' });
    const again = await engine.start(def, { amount: 3 }, { runId: 'fixed-id' });
    expect(again.runId).toBe('fixed-id');
    expect(again.replayed).toBe(true);
    expect(again.status).toBe(first.status);
    expect(log).toEqual(['charge:3']);
    const other = defineReactor('other', (r: ReactorBuilder<object>) => r.step('x', () => success(1), {}));
    const refused = await engine.start(other, {}, { runId: 'fixed-id' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidRunStateError);
    expect((refused as Error).message).toBe(
      "A run with id 'fixed-id' exists for reactor 'charge', not 'other'; run ids must be unique.",
    );
  });

  it('refuses an empty key with a clear error', async () => {
    const { engine } = createHarness();
    await expect(engine.run(charge([]), { amount: 1 }, { idempotencyKey: '' })).rejects.toThrow(
      "Reactor 'charge': idempotencyKey must be a non-empty string of at most 512 characters.",
    );
  });
});

describe('idempotency keys and inputs (issue 26)', () => {
  it('the stored run keeps a salted hash of its inputs, never them; key order and undefined properties do not count', async () => {
    const { engine, storage } = createHarness();
    const log: string[] = [];
    const def = charge(log);
    const first = await engine.run(def, { amount: 7 }, { idempotencyKey: 'k-1' });
    const stored = await storage.load(first.runId);
    expect(stored?.inputsHash).toBe(inputsHash(first.runId, { amount: 7 }));
    expect(stored?.inputsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(inputsHash('a', { x: 1, y: { b: 2, a: [1, { d: 1, c: undefined }] } })).toBe(
      inputsHash('a', { y: { a: [1, { d: 1 }], b: 2 }, x: 1 }),
    );
    expect(inputsHash('a', { x: 1 })).not.toBe(inputsHash('b', { x: 1 }));
    expect(inputsHash('a', { x: 1 })).not.toBe(inputsHash('a', { x: '1' }));
    // A run started without a key keeps no hash.
    const plain = await engine.run(def, { amount: 7 });
    expect((await storage.load(plain.runId))?.inputsHash).toBeUndefined();
  });

  it('concurrent callers with one key and other inputs: one runs, the other is refused, the key stays bound', async () => {
    const { engine } = createHarness();
    const log: string[] = [];
    const gate = deferred();
    const def = charge(log, gate.promise);
    const a = engine.run(def, { amount: 1 }, { idempotencyKey: 'k-2' });
    const b = engine.run(def, { amount: 2 }, { idempotencyKey: 'k-2' });
    const refused = await b.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(IdempotencyConflictError);
    expect((refused as Error).message).toBe(
      `Reactor 'charge': idempotency key 'k-2' is bound to run '${(refused as IdempotencyConflictError).runId}', started with other inputs. Use a new key for other inputs, or the same inputs to get that run back.`,
    );
    gate.resolve();
    const ran = await a;
    expect(ran).toMatchObject({ status: 'completed', runId: (refused as IdempotencyConflictError).runId });
    expect(log).toEqual(['charge:1']);
    expect(await engine.run(def, { amount: 1 }, { idempotencyKey: 'k-2' })).toMatchObject({
      runId: ran.runId,
      replayed: true,
    });
  });
});
