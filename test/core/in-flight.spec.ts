import { InFlight } from '../../lib/core/executor/in-flight';
import { deferred } from './harness';

/** A promise that counts the reactions attached to it (`then` calls). */
class Counted<T> extends Promise<T> {
  thens = 0;
  override then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.thens++;
    return super.then(onFulfilled, onRejected);
  }
}

describe('InFlight: the steps one execution has in flight', () => {
  it('gives them back in the order they settle, not the order they were added', async () => {
    const inFlight = new InFlight<string, string>();
    const a = deferred<string>();
    const b = deferred<string>();
    const c = deferred<string>();
    inFlight.add('a', a.promise);
    inFlight.add('b', b.promise);
    inFlight.add('c', c.promise);
    const first = inFlight.next();
    c.resolve('c');
    await expect(first).resolves.toBe('c');
    expect(inFlight.size).toBe(2);
    // Both settle before the next call: the one that settled first comes first.
    b.resolve('b');
    a.resolve('a');
    await Promise.resolve();
    await expect(inFlight.next()).resolves.toBe('b');
    await expect(inFlight.next()).resolves.toBe('a');
    expect(inFlight.size).toBe(0);
  });

  it('throws a rejection in its turn and keeps the others', async () => {
    const inFlight = new InFlight<string, string>();
    const a = deferred<string>();
    const b = deferred<string>();
    inFlight.add('a', a.promise);
    inFlight.add('b', b.promise);
    const next = inFlight.next();
    a.reject(new Error('boom'));
    await expect(next).rejects.toThrow('boom');
    expect(inFlight.size).toBe(1);
    b.resolve('b');
    await expect(inFlight.next()).resolves.toBe('b');
    expect(inFlight.size).toBe(0);
  });

  it('a lone step is awaited as it is, its rejection thrown', async () => {
    const inFlight = new InFlight<string, string>();
    inFlight.add('a', Promise.resolve('a'));
    await expect(inFlight.next()).resolves.toBe('a');
    inFlight.add('b', Promise.reject(new Error('lone')));
    await expect(inFlight.next()).rejects.toThrow('lone');
    expect(inFlight.size).toBe(0);
  });

  it('attaches one reaction per promise however many settle before it (Promise.race attached one per call)', async () => {
    const inFlight = new InFlight<number, number>();
    const slow = deferred<number>();
    const long = new Counted<number>((resolve) => void slow.promise.then(resolve));
    inFlight.add(0, long);
    const quick: Array<Counted<number>> = [];
    for (let i = 1; i <= 9; i++) {
      const step = new Counted<number>((resolve) => resolve(i));
      quick.push(step);
      inFlight.add(i, step);
    }
    const order: number[] = [];
    for (let i = 1; i <= 9; i++) order.push(await inFlight.next());
    slow.resolve(0);
    order.push(await inFlight.next());
    expect(order).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
    expect(long.thens).toBe(1);
    expect(quick.map((p) => p.thens)).toEqual(Array(9).fill(1));
  });
});
