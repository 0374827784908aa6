import { letTimePass, type AdapterFactory, type AdapterHarness } from './adapter-harness';
import { newRunId } from './run-state.factory';

const LONG_TTL = 60_000;

/** The LockManager contract (`lib/core/ports/lock-manager.port.ts`), for any adapter. */
export function describeLockManagerConformance(name: string, factory: AdapterFactory): void {
  describe(`LockManager conformance: ${name}`, () => {
    let h: AdapterHarness;
    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const short = () => h.shortTtlMs ?? 100;
    // Both kinds of logical key: a run's lease and an arbitrary coordination lock.
    const keys = () => [`run:${newRunId()}`, `orders:${newRunId()}`];

    it.each([0, 1])('acquire is exclusive (key kind %i)', async (kind) => {
      const key = keys()[kind];
      const lease = await h.locks.acquire(key, LONG_TTL);
      expect(lease).toEqual({ key, token: expect.any(String) });
      expect(lease!.token.length).toBeGreaterThanOrEqual(16);
      expect(await h.locks.acquire(key, LONG_TTL)).toBeNull();
      expect(await h.locks.isHeld(key)).toBe(true);
    });

    it('keys are independent', async () => {
      const [a, b] = keys();
      expect(await h.locks.acquire(a, LONG_TTL)).not.toBeNull();
      expect(await h.locks.acquire(b, LONG_TTL)).not.toBeNull();
      expect(await h.locks.isHeld(`run:${newRunId()}`)).toBe(false);
    });

    it('gives every acquisition a fresh random token', async () => {
      const [key] = keys();
      const first = (await h.locks.acquire(key, LONG_TTL))!;
      expect(await h.locks.release(first)).toBe(true);
      const second = (await h.locks.acquire(key, LONG_TTL))!;
      expect(second.token).not.toBe(first.token);
      // The previous holder's token no longer works.
      expect(await h.locks.extend(first, LONG_TTL)).toBe(false);
      expect(await h.locks.release(first)).toBe(false);
      expect(await h.locks.isHeld(key)).toBe(true);
    });

    it('release frees the key for the holder only', async () => {
      const [key] = keys();
      const lease = (await h.locks.acquire(key, LONG_TTL))!;
      expect(await h.locks.release({ key, token: 'someone-else' })).toBe(false);
      expect(await h.locks.isHeld(key)).toBe(true);
      expect(await h.locks.release(lease)).toBe(true);
      expect(await h.locks.isHeld(key)).toBe(false);
      expect(await h.locks.release(lease)).toBe(false);
      expect(await h.locks.acquire(key, LONG_TTL)).not.toBeNull();
    });

    it('extend works for the holder only, and keeps the lease past its first TTL', async () => {
      const [, key] = keys();
      const lease = (await h.locks.acquire(key, short()))!;
      expect(await h.locks.extend({ key, token: 'someone-else' }, LONG_TTL)).toBe(false);
      expect(await h.locks.extend(lease, LONG_TTL)).toBe(true);
      await letTimePass(h, short());
      expect(await h.locks.isHeld(key)).toBe(true);
      expect(await h.locks.acquire(key, LONG_TTL)).toBeNull();
    });

    it('a lease expires after its TTL; the old holder can then neither extend nor release', async () => {
      const [key] = keys();
      const old = (await h.locks.acquire(key, short()))!;
      await letTimePass(h, short());
      expect(await h.locks.isHeld(key)).toBe(false);
      expect(await h.locks.extend(old, LONG_TTL)).toBe(false);
      expect(await h.locks.isHeld(key)).toBe(false);

      const next = (await h.locks.acquire(key, LONG_TTL))!;
      expect(next).not.toBeNull();
      expect(await h.locks.release(old)).toBe(false);
      expect(await h.locks.extend(old, LONG_TTL)).toBe(false);
      expect(await h.locks.isHeld(key)).toBe(true);
      expect(await h.locks.release(next)).toBe(true);
    });

    it('isHeld is false for a key never taken', async () => {
      expect(await h.locks.isHeld(`run:${newRunId()}`)).toBe(false);
      expect(await h.locks.isHeld(`other:${newRunId()}`)).toBe(false);
    });

    it.each([0, -5, Number.NaN, Number.POSITIVE_INFINITY])('rejects a TTL of %p with RangeError', async (ttl) => {
      const [key] = keys();
      await expect(h.locks.acquire(key, ttl)).rejects.toBeInstanceOf(RangeError);
      const lease = (await h.locks.acquire(key, LONG_TTL))!;
      await expect(h.locks.extend(lease, ttl)).rejects.toBeInstanceOf(RangeError);
    });
  });
}
