/**
 * Lost jobs of a fan-out map on Redis. The worker here is a plain BullMQ worker over the module's
 * queue that hands jobs to the engine, except the one job each test chooses to lose:
 *
 * - the owner's resume enqueued by the element that completed the map (the collector signal was
 *   claimed, but its job is gone): the map is done and the owner waits forever without recovery;
 * - the first delivery of one element job: the window can never complete.
 *
 * A recovery sweep notices and re-sends what was lost; the run completes and no element runs twice.
 */
import { Worker } from 'bullmq';
import type Redis from 'ioredis';
import { elementRunId, mapIdOf } from '../../lib/core/model/keys';
import type { MapResults } from '../../lib/core/map/map-results';
import type { ReactorJob } from '../../lib/core/ports/job-dispatcher.port';
import { bullMqPrefix, REACTOR_QUEUE_NAME } from '../../lib/queue/queue.constants';
import { bullMqConnection, cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { ChaosMapReactor, mapItems } from './chaos.fixtures';
import { createChaosApp, waitFor, type ChaosApp } from './chaos.harness';

const LEASE_TTL_MS = 1000;
const COUNT = 25;

describe('chaos: lost map jobs are recovered by the sweeper (Redis, BullMQ)', () => {
  const prefix = uniquePrefix('chaos-map-recovery');
  let redis: Redis;
  let app: ChaosApp;
  let worker: Worker;
  /** Decides which job to lose; set by each test. */
  let lose: (job: ReactorJob) => Promise<boolean> = async () => false;
  const lost: ReactorJob[] = [];
  /** The worker's connection (a Cluster in the cluster run, closed after it). */
  const bull = bullMqConnection();

  beforeAll(async () => {
    redis = createTestRedis();
    app = await createChaosApp(prefix, { leaseTtlMs: LEASE_TTL_MS });
    worker = new Worker(
      REACTOR_QUEUE_NAME,
      async (job) => {
        const data = job.data as ReactorJob;
        if (await lose(data)) {
          lost.push(data);
          return;
        }
        await app.engine.handleJob(data);
      },
      { connection: bull.connection, prefix: bullMqPrefix(prefix), concurrency: 10 },
    );
  });

  beforeEach(() => {
    lost.length = 0;
  });

  afterAll(async () => {
    await worker?.close();
    await bull.close();
    await app?.app.close();
    await cleanupPrefix(redis, prefix);
    await quitAndWait(redis);
  });

  /** Lose the first resume of a chaos-map run whose map is done (the completion signal). */
  function loseOwnerSignal(): void {
    let once = false;
    lose = async (job) => {
      if (once || job.kind !== 'resume' || job.reactorName !== 'chaos-map') return false;
      const mapId = mapIdOf(job.runId, 'items');
      if (!(await app.runtime.maps.meta(mapId))) return false; // the first resume: it creates the map
      if (!(await app.runtime.maps.progress(mapId)).done) return false;
      return (once = true);
    };
  }

  async function expectEveryElementOnce(runId: string): Promise<void> {
    const done = await app.client.wait<MapResults<number>>(runId, { timeoutMs: 5_000 });
    expect(done.status).toBe('completed');
    if (done.status !== 'completed') return;
    expect(await done.value.values()).toEqual(Array.from({ length: COUNT }, (_, i) => i * 7));
    const mapId = mapIdOf(runId, 'items');
    const ran = await Promise.all(
      Array.from({ length: COUNT }, async (_, i) => Number(await redis.get(app.keys.element(elementRunId(mapId, i))))),
    );
    expect(ran).toEqual(Array.from({ length: COUNT }, () => 1));
  }

  /** Wait until the run's map is done and the owner's resume was lost: the owner sits in `running`. */
  async function waitForLostSignal(runId: string): Promise<void> {
    await waitFor(() => lost.length === 1, { timeoutMs: 10_000, what: 'the owner signal lost' });
    expect(lost[0]).toEqual({ kind: 'resume', runId, reactorName: 'chaos-map' });
    const view = await app.client.get(runId);
    expect(view?.status).toBe('running');
    expect(view?.maps.items).toMatchObject({ total: COUNT, settled: COUNT, succeeded: COUNT, done: true });
  }

  it('lost owner resume: sweepOnce re-sends it once the owner has been idle for the lease TTL', async () => {
    loseOwnerSignal();
    const { runId } = await app.client.start(ChaosMapReactor, mapItems(COUNT));
    await waitForLostSignal(runId);

    const sweeps: Array<{ reactors: number; maps: number }> = [];
    await waitFor(
      async () => {
        if ((await app.client.get(runId))?.status === 'completed') return true;
        sweeps.push(await app.client.sweepOnce());
        return false;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: 'run completed after sweeps' },
    );
    expect(sweeps.some((s) => s.reactors + s.maps >= 1)).toBe(true);
    await expectEveryElementOnce(runId);
    expect(lost).toHaveLength(1);
  });

  it('lost collector signal: the map sweeper alone (recoverMaps) resumes the owner of a done map', async () => {
    loseOwnerSignal();
    const { runId } = await app.client.start(ChaosMapReactor, mapItems(COUNT));
    await waitForLostSignal(runId);

    let touched = 0;
    await waitFor(async () => (touched = await app.engine.recoverMaps()) > 0, {
      timeoutMs: 10_000,
      intervalMs: 100,
      what: 'the map sweeper re-sent the owner resume',
    });
    expect(touched).toBe(1);
    await expectEveryElementOnce(runId);
    // The owner adopted the map: it left the index of open maps, so further sweeps find nothing.
    expect(await app.runtime.maps.listOpen(100)).not.toContain(mapIdOf(runId, 'items'));
    expect(await app.engine.recoverMaps()).toBe(0);
  });

  it('lost element job: the sweeper re-dispatches the element that has no record and no lease', async () => {
    let once = false;
    lose = async (job) => !once && job.kind === 'map-element' && job.index === 7 && (once = true);
    const { runId } = await app.client.start(ChaosMapReactor, mapItems(COUNT));
    const mapId = mapIdOf(runId, 'items');
    // Every other element settles; element 7 never ran, so the map cannot finish.
    const settled = async () =>
      (await app.runtime.maps.meta(mapId)) ? (await app.runtime.maps.progress(mapId)).settled : 0;
    await waitFor(async () => (await settled()) === COUNT - 1, {
      timeoutMs: 10_000,
      what: 'all elements but one settled',
    });
    expect(lost).toEqual([{ kind: 'map-element', runId, reactorName: 'chaos-map', mapId, index: 7 }]);
    expect(await app.runtime.maps.stalled(mapId, 10)).toEqual([7]);

    const sweeps: Array<{ reactors: number; maps: number }> = [];
    await waitFor(
      async () => {
        if ((await app.client.get(runId))?.status === 'completed') return true;
        sweeps.push(await app.client.sweepOnce());
        return false;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: 'run completed after sweeps' },
    );
    expect(sweeps[0]?.maps).toBe(1);
    await expectEveryElementOnce(runId);
  });
});
