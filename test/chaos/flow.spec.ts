/**
 * Chaos (issue 24): flow control of a reactor's starts across worker child processes on Redis.
 *
 * 1. Debounce from two processes: starts of one key made in turn by two worker processes (each
 *    awaited before the next, all within the debounce period of each other) all name one run, which
 *    executes once, with the last start's inputs; a second key, interleaved, gets a run of its own.
 * 2. A worker SIGKILLed while it executes a tenant's two admitted runs (`concurrency: { limit: 2 }`)
 *    and 18 more of its starts wait in the tenant's queue: a new worker (sweeper on) recovers the
 *    two, and the queue drains through the freed slots; all 20 complete, never more than 2 of the
 *    tenant executing, each step completed once (only the two killed ones started twice). The
 *    recovery time (kill to all done) is printed.
 *
 * Starts are made inside the worker processes on the test's command (flow.worker.ts), never by
 * sleeping: every wait is a condition with a deadline.
 */
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { createTestRedis, scanKeys } from '../setup/redis';
import { quitAndWait } from '../e2e/e2e.fixtures';
import { useChaosProducer, waitFor, WorkerProcess } from './chaos.harness';
import {
  DEBOUNCE_PERIOD_MS,
  FLOW_CHAOS_PROVIDERS,
  FlowChaosKeys,
  TENANT_HOLD_MS,
  TENANT_LIMIT,
  type DebounceExecution,
  type FlowCommand,
  type FlowReply,
} from './flow.fixtures';

const WORKER = 'test/chaos/flow.worker.ts';
const LEASE_TTL_MS = 1500;
const SWEEPER_INTERVAL_MS = 1000;

type StartReply = NonNullable<FlowReply['outcomes']>[number];

describe('chaos: flow control across worker processes (Redis, BullMQ, child processes)', () => {
  const chaos = useChaosProducer('chaos-flow', { leaseTtlMs: LEASE_TTL_MS }, { providers: FLOW_CHAOS_PROVIDERS });
  const { prefix } = chaos;
  const keys = new FlowChaosKeys(prefix);
  /** For BLPOP on the workers' replies (a blocking command holds its connection). */
  let replies: Redis | undefined;

  beforeAll(() => {
    replies = createTestRedis({ connectionName: 'flow-chaos-replies' });
  });
  afterAll(async () => {
    if (replies) await quitAndWait(replies);
  });

  /** Have `worker` start `reactor` once per input, in order; resolves each start's outcome. */
  async function startIn(worker: WorkerProcess, reactor: string, inputs: FlowCommand['inputs']): Promise<StartReply[]> {
    const command: FlowCommand = { id: randomUUID(), reactor, inputs };
    await chaos.redis.rpush(keys.commands(worker.name), JSON.stringify(command));
    const popped = await replies!.blpop(keys.reply(command.id), 20);
    if (!popped) throw new Error(`worker ${worker.name} did not answer within 20 s (output:\n${worker.output})`);
    const reply = JSON.parse(popped[1]) as FlowReply;
    if (reply.error !== undefined) throw new Error(`a start in worker ${worker.name} threw: ${reply.error}`);
    return reply.outcomes;
  }

  function outputs(workers: WorkerProcess[]): string {
    return workers.map((w) => `--- ${w.name}\n${w.output}`).join('\n');
  }

  it('debounce: starts of one key from two processes, in turn within the period, make ONE run with the last inputs; another key its own', async () => {
    const { client } = chaos.producer;
    const env = { LEASE_TTL_MS: String(LEASE_TTL_MS) };
    const workers = await Promise.all([
      WorkerProcess.start('A', prefix, env, WORKER),
      WorkerProcess.start('B', prefix, env, WORKER),
    ]);
    const [keyOne, keyTwo] = [`k1-${randomUUID()}`, `k2-${randomUUID()}`];

    // 20 starts of key one alternating between A and B, each awaited; every 4th followed by a
    // start of key two from the other process. Each start returns well within the period.
    const one: Array<StartReply & { seq: number; from: string; at: number }> = [];
    const two: Array<StartReply & { seq: number; from: string }> = [];
    for (let seq = 0; seq < 20; seq++) {
      const worker = workers[seq % 2];
      const [started] = await startIn(worker, 'flow-chaos-debounce', [{ key: keyOne, seq, from: worker.name }]);
      one.push({ ...started, seq, from: worker.name, at: Date.now() });
      if (seq % 4 === 1) {
        const other = workers[(seq + 1) % 2];
        const [second] = await startIn(other, 'flow-chaos-debounce', [
          { key: keyTwo, seq: 100 + seq, from: other.name },
        ]);
        two.push({ ...second, seq: 100 + seq, from: other.name });
      }
    }
    // The test's premise: no two consecutive starts of key one were a period apart.
    const gaps = one.slice(1).map((s, i) => s.at - one[i].at);
    expect(Math.max(...gaps)).toBeLessThan(DEBOUNCE_PERIOD_MS);

    const runOne = one[0].runId;
    const runTwo = two[0].runId;
    expect(runTwo).not.toBe(runOne);
    for (const [starts, key, runId] of [
      [one, keyOne, runOne],
      [two, keyTwo, runTwo],
    ] as const) {
      for (const started of starts) {
        expect(started).toMatchObject({ runId, status: 'dispatched', flow: { state: 'debounced', key } });
      }
    }

    // Each run executes once, with its key's last start's inputs, once its gather is due.
    const lastOne = one[one.length - 1];
    const lastTwo = two[two.length - 1];
    const [doneOne, doneTwo] = await Promise.all([
      client.wait(runOne, { timeoutMs: 20_000 }),
      client.wait(runTwo, { timeoutMs: 20_000 }),
    ]);
    expect(doneOne).toMatchObject({ status: 'completed', value: { seq: lastOne.seq, from: lastOne.from } });
    expect(doneTwo).toMatchObject({ status: 'completed', value: { seq: lastTwo.seq, from: lastTwo.from } });
    expect((await client.get(runOne))?.inputs).toEqual({ key: keyOne, seq: lastOne.seq, from: lastOne.from });

    expect(Number(await chaos.redis.get(keys.executions(keyOne)))).toBe(1);
    expect(Number(await chaos.redis.get(keys.executions(keyTwo)))).toBe(1);
    const [executedOne] = (await chaos.redis.lrange(keys.executed(keyOne), 0, -1)).map(
      (entry) => JSON.parse(entry) as DebounceExecution,
    );
    expect(executedOne).toMatchObject({ runId: runOne, seq: lastOne.seq, from: lastOne.from });
    // Not before the gather was due (the last start's due time; same machine, a few ms of clock skew).
    expect(executedOne.at).toBeGreaterThanOrEqual(lastOne.flow!.startAt! - 50);
    const [executedTwo] = (await chaos.redis.lrange(keys.executed(keyTwo), 0, -1)).map(
      (entry) => JSON.parse(entry) as DebounceExecution,
    );
    expect(executedTwo).toMatchObject({ runId: runTwo, seq: lastTwo.seq, from: lastTwo.from });

    // No other run of the reactor exists: 25 starts, two runs.
    const { runs } = await client.list({ reactor: 'flow-chaos-debounce', limit: 100 });
    expect(runs.map((run) => run.runId).sort()).toEqual([runOne, runTwo].sort());
    expect(workers.every((w) => w.alive)).toBe(true);
    process.stdout.write(
      `[flow-chaos] debounce: ${one.length} + ${two.length} starts from 2 processes (max gap ${Math.max(...gaps)} ms), ` +
        `2 runs, each executed once, ${executedOne.at - lastOne.at} ms after the last start of its key\n`,
    );
  }, 90_000);

  it('concurrency: a worker SIGKILLed with 2 runs of a tenant executing and 18 queued; a new worker completes all 20, never more than 2 at once', async () => {
    const { client, engine } = chaos.producer;
    const tenant = `tenant-${randomUUID()}`;
    const w1 = await WorkerProcess.start('W1', prefix, { LEASE_TTL_MS: String(LEASE_TTL_MS) }, WORKER);

    const started = await startIn(
      w1,
      'flow-chaos-tenant',
      Array.from({ length: 20 }, (_, n) => ({ tenant, n })),
    );
    const runIds = started.map((s) => s.runId);
    expect(new Set(runIds).size).toBe(20);
    // The first two took the tenant's slots; the others wait in its queue, in start order.
    expect(started.slice(0, TENANT_LIMIT).map((s) => s.flow)).toEqual([undefined, undefined]);
    expect(started.slice(TENANT_LIMIT).map((s) => s.flow)).toEqual(
      started.slice(TENANT_LIMIT).map((_, i) => ({ state: 'queued', key: tenant, position: i + 1 })),
    );
    const admitted = runIds.slice(0, TENANT_LIMIT);

    // Both admitted runs are inside their step in W1 (the gate is closed).
    await waitFor(
      async () => (await chaos.redis.smembers(keys.live(tenant))).sort().join() === [...admitted].sort().join(),
      { timeoutMs: 15_000, what: () => `the 2 admitted runs inside their step in W1 (output:\n${w1.output})` },
    );
    const queues = await engine.flowQueues('flow-chaos-tenant', { peek: 20 });
    expect(queues?.limit).toBe(TENANT_LIMIT);
    const view = queues?.keys.find((k) => k.key === tenant);
    expect(view?.live.map((l) => l.runId).sort()).toEqual([...admitted].sort());
    expect(view?.queued).toBe(18);
    expect(view?.next).toEqual(runIds.slice(TENANT_LIMIT));

    const killedAt = Date.now();
    await w1.kill('SIGKILL');
    expect((await w1.exited).signal).toBe('SIGKILL');
    await chaos.redis.set(keys.gate(), '1');

    const w2 = await WorkerProcess.start(
      'W2',
      prefix,
      { LEASE_TTL_MS: String(LEASE_TTL_MS), SWEEPER_INTERVAL_MS: String(SWEEPER_INTERVAL_MS) },
      WORKER,
    );
    const readyAt = Date.now();
    let unfinished: string[] = [];
    await waitFor(
      async () => {
        const views = await Promise.all(runIds.map((runId) => client.get(runId)));
        unfinished = views.flatMap((v, i) =>
          v?.status === 'completed' ? [] : [`${runIds[i]}: ${v?.status ?? 'missing'}`],
        );
        return unfinished.length === 0;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 50,
        what: () => `all 20 runs completed (not: ${unfinished.join(', ')}; output:\n${outputs([w1, w2])})`,
      },
    );
    const doneAt = Date.now();

    // Never more than the limit inside the step (a killed run counts until its recovery leaves).
    expect(Number(await chaos.redis.get(keys.maxLive(tenant)))).toBe(TENANT_LIMIT);
    expect(await chaos.redis.scard(keys.live(tenant))).toBe(0);
    // Each step completed once; only the two killed inside it started twice.
    const counts = async (key: (runId: string) => string) =>
      Object.fromEntries(await Promise.all(runIds.map(async (id) => [id, Number(await chaos.redis.get(key(id)))])));
    expect(await counts((id) => keys.completed(id))).toEqual(Object.fromEntries(runIds.map((id) => [id, 1])));
    expect(await counts((id) => keys.started(id))).toEqual(
      Object.fromEntries(runIds.map((id) => [id, admitted.includes(id) ? 2 : 1])),
    );
    for (const [n, runId] of runIds.entries()) {
      expect(await client.wait(runId, { timeoutMs: 1_000 })).toMatchObject({ status: 'completed', value: n });
    }
    // No run lost (each completed, above), none extra: the step ran for these 20 runs only
    // (counted from the step's own keys, not from the storage's indexes).
    const stepRuns = (await scanKeys(chaos.redis, `${keys.started('')}*`)).map((key) =>
      key.slice(keys.started('').length),
    );
    expect(stepRuns.sort()).toEqual([...runIds].sort());
    // The tenant's key holds nothing now.
    const after = (await engine.flowQueues('flow-chaos-tenant'))?.keys.find((k) => k.key === tenant);
    expect(after?.live ?? []).toEqual([]);
    expect(after?.queued ?? 0).toBe(0);
    expect(w2.alive).toBe(true);

    process.stdout.write(
      `[flow-chaos] concurrency: SIGKILL of W1 -> all 20 runs completed in ${doneAt - killedAt} ms ` +
        `(W2 booted in ${readyAt - killedAt} ms, then ${doneAt - readyAt} ms; lease TTL ${LEASE_TTL_MS} ms, ` +
        `sweep interval ${SWEEPER_INTERVAL_MS} ms, limit ${TENANT_LIMIT}, hold ${TENANT_HOLD_MS} ms per run)\n`,
    );
  }, 90_000);
});
