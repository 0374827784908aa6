/**
 * The steps one execution has in flight, taken back in the order they settle.
 *
 * `Promise.race` over everything in flight attached a reaction to each promise on every call: a
 * wave of n parallel steps cost n + (n - 1) + ... + 1 reactions (and one more on a long step for
 * each sibling that settled before it). Here each promise gets one reaction, which queues how it
 * settled; {@link next} takes the oldest one. A lone step in flight is awaited as it is (the common
 * sequential run: no reaction and no queue).
 */
export class InFlight<K, T> {
  private readonly promises = new Map<K, Promise<T>>();
  /** Keys whose promise has the reaction that queues it (every one in flight once two were). */
  private readonly watched = new Set<K>();
  /** Settled and not taken yet, oldest first. */
  private readonly settled: Array<{ key: K; ok: boolean; value: unknown }> = [];
  private wake: (() => void) | undefined;

  get size(): number {
    return this.promises.size;
  }

  add(key: K, promise: Promise<T>): void {
    this.promises.set(key, promise);
  }

  /**
   * The next one to settle (the oldest settled one first), taken out; throws what it was rejected
   * with. Call only while something is in flight.
   */
  async next(): Promise<T> {
    if (this.promises.size === 1 && this.watched.size === 0) {
      const [key, promise] = this.promises.entries().next().value!;
      try {
        return await promise;
      } finally {
        this.promises.delete(key);
      }
    }
    for (const [key, promise] of this.promises) this.watch(key, promise);
    while (this.settled.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = undefined;
    const { key, ok, value } = this.settled.shift()!;
    this.watched.delete(key);
    this.promises.delete(key);
    if (!ok) throw value;
    return value as T;
  }

  private watch(key: K, promise: Promise<T>): void {
    if (this.watched.has(key)) return;
    this.watched.add(key);
    const queue = (ok: boolean) => (value: unknown) => {
      this.settled.push({ key, ok, value });
      this.wake?.();
    };
    promise.then(queue(true), queue(false));
  }
}
