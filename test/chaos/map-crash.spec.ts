/**
 * Crash of a fan-out map: worker A is SIGKILLed while a full window of elements (batchSize 10)
 * is running. Their element leases expire; the map sweeper re-dispatches exactly those (dispatched,
 * no record, no live lease); worker B runs them and the rest, and the owner run completes with
 * every index's value exactly once.
 */
import { elementRunId, mapIdOf } from '../../lib/core/model/keys';
import type { MapResults } from '../../lib/core/map/map-results';
import { CHAOS_MAP_BATCH, ChaosMapReactor, mapItems } from './chaos.fixtures';
import { useChaosProducer, waitFor, WorkerProcess } from './chaos.harness';

const LEASE_TTL_MS = 1500;
const COUNT = 60;
/** Worker A hangs in every element from this index on. */
const CRASH_FROM = 15;

describe('chaos: a worker killed while map elements run (Redis, BullMQ, child processes)', () => {
  const chaos = useChaosProducer('chaos-map-crash', { leaseTtlMs: LEASE_TTL_MS });
  const { prefix } = chaos;

  it('SIGKILL with a window of elements in flight: the lost ones re-run once, every index settles once', async () => {
    const { client, keys } = chaos.producer;
    const workerA = await WorkerProcess.start('A', prefix, {
      CRASH_FROM_ELEMENT: String(CRASH_FROM),
      LEASE_TTL_MS: String(LEASE_TTL_MS),
      WORKER_CONCURRENCY: String(CHAOS_MAP_BATCH),
    });
    const { runId } = await client.start(ChaosMapReactor, mapItems(COUNT));
    const mapId = mapIdOf(runId, 'items');

    // Elements 0..14 complete; 15..24 (a full window) are dispatched as the window slides, and hang.
    await waitFor(async () => (await chaos.redis.scard(keys.elementsInside(mapId))) === CHAOS_MAP_BATCH, {
      timeoutMs: 15_000,
      what: () => `a full window inside (output of A:\n${workerA.output})`,
    });
    const during = (await client.get(runId))?.maps.items;
    expect(during).toMatchObject({ total: COUNT, dispatched: CRASH_FROM + CHAOS_MAP_BATCH, settled: CRASH_FROM });
    await workerA.kill('SIGKILL');

    const workerB = await WorkerProcess.start('B', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS) });
    const sweeps: Array<{ reactors: number; maps: number }> = [];
    await waitFor(
      async () => {
        if ((await client.get(runId))?.status === 'completed') return true;
        sweeps.push(await client.sweepOnce());
        return false;
      },
      { timeoutMs: 20_000, intervalMs: 200, what: () => `run completed (output of B:\n${workerB.output})` },
    );
    expect(sweeps.some((s) => s.maps >= 1)).toBe(true);

    const done = await client.wait<MapResults<number>>(runId, { timeoutMs: 5_000 });
    expect(done.status).toBe('completed');
    if (done.status !== 'completed') return;
    const outcomes: Array<{ index: number; status: string }> = [];
    for await (const outcome of done.value) outcomes.push(outcome);
    expect(outcomes).toEqual(
      Array.from({ length: COUNT }, (_, index) => ({ index, status: 'completed', value: index * 7 })),
    );

    const ran = await Promise.all(
      Array.from({ length: COUNT }, async (_, i) =>
        Number(await chaos.redis.get(keys.element(elementRunId(mapId, i)))),
      ),
    );
    const expected = Array.from({ length: COUNT }, (_, i) =>
      i >= CRASH_FROM && i < CRASH_FROM + CHAOS_MAP_BATCH ? 2 : 1,
    );
    expect(ran).toEqual(expected);
    expect((await client.get(runId))?.maps.items).toMatchObject({
      total: COUNT,
      dispatched: COUNT,
      settled: COUNT,
      succeeded: COUNT,
      failed: 0,
      done: true,
    });
  }, 50_000);
});
