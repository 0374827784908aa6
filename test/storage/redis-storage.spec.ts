import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { CorruptRecordError, LeaseLostError, ReactorError } from '../../lib/core/errors';
import {
  RedisKeys,
  RedisLockManager,
  RedisReactorStorage,
  resolveScriptsDir,
  SCRIPT_FILES,
} from '../../lib/storage/redis';
import { MAX_RUNS_PER_COMMIT, MIN_RUNS_PER_COMMIT } from '../../lib/storage/redis/checkpoint-batcher';
import { StorageErrorCode, storageError } from '../../lib/storage/storage-error-codes';
import { waitFor } from '../conformance/adapter-harness';
import { makeRunState, newRunId, T0 } from '../conformance/run-state.factory';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from '../setup/redis';
import { crc16, keySlot } from './key-slot';
import { RedisMonitor } from './redis-monitor';

const filePrefix = uniquePrefix('redis-storage').replace(/:$/, '');
let redis: Redis;
let keys: RedisKeys;
let storage: RedisReactorStorage;
let locks: RedisLockManager;
const clients: Redis[] = [];

beforeAll(() => {
  redis = createTestRedis();
  keys = new RedisKeys({ prefix: filePrefix, shards: 16 });
  storage = new RedisReactorStorage(redis, { keys });
  locks = new RedisLockManager(redis, { keys });
});
afterAll(async () => {
  await cleanupPrefix(redis, filePrefix);
  for (const client of clients) client.disconnect();
  await redis.quit();
});

describe('RedisReactorStorage: unreadable records', () => {
  it('load throws CorruptRecordError for corrupt JSON in the stored blob', async () => {
    const state = makeRunState();
    await storage.save(state);
    await redis.hset(keys.runKey(state.runId), 'state', JSON.stringify(state).slice(0, -7));
    const error = await storage.load(state.runId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptRecordError);
    expect(error).toMatchObject({ code: 'CORRUPT_RECORD', runId: state.runId, retryable: false });
    expect((error as Error).message).toContain('not valid JSON');
  });

  it('load throws CorruptRecordError with code SCHEMA_VERSION for an unknown schema version', async () => {
    const state = makeRunState();
    await storage.save(state);
    await redis.hset(keys.runKey(state.runId), 'state', JSON.stringify({ ...state, schemaVersion: 2 }));
    const error = await storage.load(state.runId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptRecordError);
    expect(error).toMatchObject({ code: 'SCHEMA_VERSION', runId: state.runId });
  });

  it('load throws CorruptRecordError for a record hash without its state field', async () => {
    const runId = newRunId();
    await redis.hset(keys.runKey(runId), 'status', 'running', 'terminal', '0');
    await expect(storage.load(runId)).rejects.toMatchObject({ code: 'CORRUPT_RECORD', runId });
  });

  it('markBroken makes such a record loadable, failed, out of the index, once', async () => {
    const state = makeRunState({ reactorName: 'import' });
    await storage.save(state);
    await redis.hset(keys.runKey(state.runId), 'state', '{"reactorName":"import", garbage');
    await storage.markBroken(state.runId, undefined, { code: 'CORRUPT_RECORD', message: 'unreadable record' });
    const broken = await storage.load(state.runId);
    expect(broken).toMatchObject({
      runId: state.runId,
      reactorName: 'unknown',
      status: 'failed',
      failure: { code: 'CORRUPT_RECORD' },
    });
    expect(await redis.hget(keys.runKey(state.runId), 'broken')).toBe('1');
    expect(await redis.zscore(keys.activeIndexKeyOf(state.runId), state.runId)).toBeNull();

    await storage.markBroken(state.runId, 'import', { code: 'UNKNOWN_REACTOR', message: 'second call' });
    await expect(storage.load(state.runId)).resolves.toEqual(broken);
  });
});

describe('RedisReactorStorage: a broken record keeps what can be read', () => {
  it('markBroken of a record with one unreadable field keeps every other field: inputs, results, undo stack', async () => {
    const state = makeRunState({ reactorName: 'import' });
    await storage.save(state);
    // An entry after the step's own (its `run` entry is written with its result): unreadable.
    await redis.hset(keys.runKey(state.runId), 't:1', '{"type": "run", garbage');
    await expect(storage.load(state.runId)).rejects.toMatchObject({ code: 'CORRUPT_RECORD' });

    await storage.markBroken(state.runId, undefined, { code: 'CORRUPT_RECORD', message: 'unreadable trace entry' });
    const broken = await storage.load(state.runId);
    expect(broken).toMatchObject({
      reactorName: 'import',
      status: 'failed',
      failure: { code: 'CORRUPT_RECORD' },
      inputs: state.inputs,
      results: state.results,
      completed: state.completed,
      undoStack: state.undoStack,
      trace: state.trace,
    });
  });
});

describe('RedisReactorStorage: a run key of another type', () => {
  it('reads as a corrupt record (not a raw WRONGTYPE), and markBroken replaces it with a loadable failed run', async () => {
    const runId = newRunId();
    await redis.set(keys.runKey(runId), 'not a hash');
    await expect(storage.load(runId)).rejects.toMatchObject({ code: 'CORRUPT_RECORD', runId });
    const lease = { key: `run:${runId}`, token: randomUUID() };
    await expect(storage.acquireAndLoad(runId, lease, 30_000)).rejects.toMatchObject({ code: 'CORRUPT_RECORD' });

    await storage.markBroken(runId, 'import', { code: 'CORRUPT_RECORD', message: 'not a hash' });
    await expect(storage.load(runId)).resolves.toMatchObject({
      runId,
      reactorName: 'import',
      status: 'failed',
      failure: { code: 'CORRUPT_RECORD' },
    });
  });
});

describe('RedisReactorStorage: keys, TTLs and index', () => {
  it('indexes a run under its exact id, which the checkpoint script reads off the end of the record key (by its UTF-8 length)', async () => {
    for (const runId of [`ünïcödé-日本-😀-${randomUUID()}`, `plain-${randomUUID()}`]) {
      const state = makeRunState({ runId });
      await storage.save(state, { createOnly: true });
      state.updatedAt += 1;
      await storage.save(state);
      expect(await redis.zscore(keys.activeIndexKeyOf(runId), runId)).toBe(String(state.updatedAt));
      expect(await redis.zrange(keys.activeIndexKeyOf(runId), 0, -1)).toContain(runId);
      await expect(storage.load(runId)).resolves.toEqual(state);
    }
  });

  it('stores a run as a hash: its identity, its progress and time, the inputs, a field per result (with its first `run` trace entry and attempt count of 1), undo entry, status and terminal flag', async () => {
    const state = makeRunState();
    await storage.save(state);
    const { inputs, results, completed, undoStack, attempts, trace, children, ...header } = state;
    const { schemaVersion, runId, reactorName, definitionHash, createdAt, updatedAt, ...progress } = header;
    const { type, step, at, ...rest } = trace[0];
    expect(completed).toEqual(['reserve']);
    expect(children).toEqual({});
    expect(await redis.hgetall(keys.runKey(state.runId))).toEqual({
      state: JSON.stringify({ schemaVersion, runId, reactorName, definitionHash, createdAt }),
      // The time in `head` too (as of that write), for a reader of an earlier version.
      head: JSON.stringify({ ...progress, updatedAt }),
      at: String(updatedAt),
      inputs: JSON.stringify(inputs),
      // The step's first `run` entry (position 0, its time, the rest by name but its attempt, which
      // is 1), no `complete` entry yet (-1), and its attempt count of 1 are written with its result
      // (DD-speed22-8).
      'r:reserve': JSON.stringify([0, results.reserve, [1, 0, at, { ...rest, attempt: undefined }, -1, 0]]),
      'u:0': JSON.stringify([undoStack[0].step, undoStack[0].args]),
      status: 'running',
      terminal: '0',
    });
    expect(await redis.zscore(keys.activeIndexKeyOf(state.runId), state.runId)).toBe(String(state.updatedAt));
    expect({ type, step, attempts }).toEqual({ type: 'run', step: 'reserve', attempts: { reserve: 1 } });
    // A reader of the previous version takes the result as the second element and ignores the third.
    const [, value] = JSON.parse((await redis.hget(keys.runKey(state.runId), 'r:reserve'))!) as unknown[];
    expect(value).toEqual(results.reserve);
  });

  it('reads a record written before trace entries and attempts were folded into results: the same run', async () => {
    const state = makeRunState();
    await storage.save(state);
    const record = keys.runKey(state.runId);
    const { type, step, at, ...rest } = state.trace[0];
    // The previous layout: the result alone, the trace entry and the attempt count in fields of their own.
    await redis.hset(record, {
      'r:reserve': JSON.stringify([0, state.results.reserve]),
      't:0': JSON.stringify([type, step, at, rest]),
      'a:reserve': '1',
    });
    const read = await storage.load(state.runId);
    expect(read).toEqual(state);
    // And an attempt count of its own wins over one written with the result.
    await redis.hset(record, 'r:reserve', JSON.stringify([0, state.results.reserve, [1, -1, 0, 0, -1, 0]]));
    await redis.hset(record, 'a:reserve', '3');
    expect((await storage.load(state.runId))?.attempts).toEqual({ reserve: 3 });
  });

  it('re-stamps the retention TTL on every write and refreshes the lease PX', async () => {
    const state = makeRunState();
    const lease = (await locks.acquire(`run:${state.runId}`, 1000))!;
    await storage.save(state, { lease, leaseTtlMs: 45_000 });
    const ttl = await redis.pttl(keys.runKey(state.runId));
    expect(ttl).toBeGreaterThan(24 * 3600 * 1000 - 10_000);
    expect(ttl).toBeLessThanOrEqual(24 * 3600 * 1000);
    const leaseTtl = await redis.pttl(keys.leaseKey(state.runId));
    expect(leaseTtl).toBeGreaterThan(40_000);

    await redis.pexpire(keys.runKey(state.runId), 5000);
    await storage.save({ ...state, updatedAt: T0 + 1 });
    expect(await redis.pttl(keys.runKey(state.runId))).toBeGreaterThan(24 * 3600 * 1000 - 10_000);
    expect(await redis.pttl(keys.activeIndexKeyOf(state.runId))).toBe(-1); // shared index: no TTL
  });

  it('drops a run from the index when its record expired, on the next load', async () => {
    const short = new RedisReactorStorage(redis, { keys, contextTtlMs: 50 });
    const state = makeRunState();
    await short.save(state);
    await waitFor(async () => (await redis.exists(keys.runKey(state.runId))) === 0, 'the record to expire');
    expect(await short.listActive(1000)).toContain(state.runId);
    await expect(short.load(state.runId)).resolves.toBeUndefined();
    expect(await short.listActive(1000)).not.toContain(state.runId);
  });

  it('maps the run lease to the run slot and other leases to their own tag', () => {
    expect(keys.physicalLeaseKey('run:abc')).toBe(keys.leaseKey('abc'));
    expect(keys.physicalLeaseKey('orders:1')).toBe(`${filePrefix}:{lock:orders:1}`);
    expect(keys.runKey('abc')).toBe(`${filePrefix}:{${filePrefix}:s${keys.shardOf('abc')}}:run:abc`);
    expect(new RedisKeys().activeIndexKey(3)).toBe('reactor:{reactor:s3}:active');
    expect(() => new RedisKeys({ prefix: 'a{b' })).toThrow(RangeError);
    expect(() => new RedisKeys({ shards: 0 })).toThrow(RangeError);
  });

  it('puts a run in the shard of the FNV-1a hash of its root id’s UTF-8 bytes, ASCII or not (stored runs never move)', () => {
    const fnv = (id: string) => {
      let hash = 0x811c9dc5;
      for (const byte of Buffer.from(id, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
      return hash;
    };
    const sharded = new RedisKeys({ shards: 128 });
    for (const id of ['abc', 'r-1', newRunId(), 'café-1', 'заказ-42', '🚀-run', 'a\u0080b']) {
      expect(sharded.shardOf(id)).toBe(fnv(id) % 128);
      expect(sharded.shardOf(`${id}/child/step`)).toBe(fnv(id) % 128);
    }
    // Pinned: a change here would move every stored run to another shard.
    expect([sharded.shardOf('abc'), sharded.shardOf('café-1')]).toEqual([fnv('abc') % 128, fnv('café-1') % 128]);
    expect(sharded.shardOf('abc')).toBe(11);
  });
});

describe('Redis Cluster slots', () => {
  it('CRC16 matches Redis', () => {
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
  });

  it('puts every key a run script touches (record, lease, shard index) in one slot, for many run ids', () => {
    const shards = new Map<number, number>();
    const odd = ['{', '}', '{x}', 'a}b{c', ':', 'ünïcödé', ''];
    const ids = [...Array.from({ length: 2000 }, () => randomUUID()), ...odd.map((o) => `${o}${randomUUID()}${o}`)];
    for (const layout of [keys, new RedisKeys(), new RedisKeys({ prefix: 'p', shards: 5 })]) {
      for (const runId of ids) {
        const slot = keySlot(layout.runKey(runId));
        expect([
          keySlot(layout.leaseKey(runId)),
          keySlot(layout.physicalLeaseKey(`run:${runId}`)),
          keySlot(layout.activeIndexKeyOf(runId)),
          keySlot(layout.runScopedKey(runId, 'map', 'm1', 'results')),
        ]).toEqual([slot, slot, slot, slot]);
        if (layout === keys) shards.set(layout.shardOf(runId), (shards.get(layout.shardOf(runId)) ?? 0) + 1);
      }
    }
    // Every shard is used, none is starved (expected ~126 each).
    expect(shards.size).toBe(16);
    for (const count of shards.values()) expect(count).toBeGreaterThan(60);
  });

  it('tags coordination keys by their own name', () => {
    expect(keySlot(keys.coordinationKey('semaphore', 'payments', 'tokens'))).toBe(
      keySlot(keys.coordinationKey('semaphore', 'payments', 'held')),
    );
    expect(keySlot(keys.lockKey('orders:1'))).toBe(keySlot('{lock:orders:1}'));
    expect(keys.sweepGuardKey('reactor')).toBe(`${filePrefix}:{sweep:reactor}:guard`);
  });
});

describe('round trips (counted with MONITOR)', () => {
  let monitor: RedisMonitor;

  beforeAll(async () => {
    monitor = await RedisMonitor.start(redisUrl());
  });
  afterAll(() => monitor.close());

  const commandsOf = (client: Redis, action: () => Promise<unknown>) => monitor.commandsOf(client, action);

  function fresh(): { client: Redis; storage: RedisReactorStorage; locks: RedisLockManager } {
    const client = createTestRedis();
    clients.push(client);
    return {
      client,
      storage: new RedisReactorStorage(client, { keys }),
      locks: new RedisLockManager(client, { keys }),
    };
  }

  const names = (commands: string[][]) => commands.map((c) => c[0].toLowerCase());

  /** Keys of an EVAL/EVALSHA: [name, script|sha, numkeys, ...keys, ...args]. */
  const scriptKeys = (command: string[]) => command.slice(3, 3 + Number(command[2]));

  it('a fenced save is exactly one command: EVAL on a fresh connection, EVALSHA after', async () => {
    const { client, storage, locks } = fresh();
    const state = makeRunState();
    const lease = (await locks.acquire(`run:${state.runId}`, 30_000))!;

    const first = await commandsOf(client, () => storage.save(state, { lease, leaseTtlMs: 30_000, createOnly: true }));
    expect(names(first)).toEqual(['eval']);
    // The create: record, lease, active index and the reactor's runs, in one slot.
    expect(scriptKeys(first[0])).toHaveLength(4);
    expect(new Set(scriptKeys(first[0]).map(keySlot)).size).toBe(1);

    for (let i = 1; i <= 3; i++) {
      const next = await commandsOf(client, () =>
        storage.save({ ...state, updatedAt: T0 + i }, { lease, leaseTtlMs: 30_000 }),
      );
      expect(names(next)).toEqual(['evalsha']);
      const slots = new Set(scriptKeys(next[0]).map(keySlot));
      expect(scriptKeys(next[0])).toHaveLength(3); // record, lease, active index: one slot
      expect(slots.size).toBe(1);
    }

    // A lost lease costs the same single command.
    const lost = await commandsOf(client, () =>
      storage.save(state, { lease: { ...lease, token: 'x' } }).catch(() => undefined),
    );
    expect(names(lost)).toEqual(['evalsha']);
  });

  it('group commit: the saves of one event-loop turn share calls, each run fenced and answered on its own', async () => {
    const { client, storage, locks } = fresh();
    const states = Array.from({ length: 4 }, () => makeRunState());
    const leases = await Promise.all(states.map((s) => locks.acquire(`run:${s.runId}`, 30_000)));
    for (let i = 0; i < states.length; i++) await storage.save(states[i], { lease: leases[i]!, leaseTtlMs: 30_000 });
    // Run 1 lost its lease (another worker holds it now); run 2's record is not a hash.
    await redis.set(keys.leaseKey(states[1].runId), 'someone-else');
    await redis.del(keys.runKey(states[2].runId));
    await redis.set(keys.runKey(states[2].runId), 'not a hash');

    const outcomes: Array<PromiseSettledResult<boolean>> = [];
    const sent = await commandsOf(client, async () => {
      outcomes.push(
        ...(await Promise.allSettled(
          states.map((s, i) =>
            storage.save({ ...s, updatedAt: T0 + 1, status: 'running' }, { lease: leases[i]!, leaseTtlMs: 30_000 }),
          ),
        )),
      );
    });

    // Two calls of two runs (nothing in flight: MIN_RUNS_PER_COMMIT), each with a run refused.
    expect(names(sent)).toEqual(['evalsha', 'evalsha']);
    expect(sent.map((c) => scriptKeys(c).filter((key) => key.includes(':run:')))).toEqual([
      [keys.runKey(states[0].runId), keys.runKey(states[1].runId)],
      [keys.runKey(states[2].runId), keys.runKey(states[3].runId)],
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toContain('WRONGTYPE');
    for (const i of [0, 3]) await expect(storage.load(states[i].runId)).resolves.toMatchObject({ updatedAt: T0 + 1 });
    // The refused run's record is as its last write left it.
    await expect(storage.load(states[1].runId)).resolves.toMatchObject({ updatedAt: states[1].updatedAt });
  });

  it('group commit: a call is sent at once with a third of the runs in flight (2 to 8), the rest at the end of the turn', async () => {
    const { client, storage, locks } = fresh();
    const first = Array.from({ length: 19 }, () => makeRunState());
    const later = Array.from({ length: 24 }, () => makeRunState());
    const states = [...first, ...later];
    const leases = await Promise.all(states.map((s) => locks.acquire(`run:${s.runId}`, 30_000)));
    const save = (s: (typeof states)[number]) =>
      storage.save(s, { lease: leases[states.indexOf(s)]!, leaseTtlMs: 30_000 });
    const gate = `${filePrefix}:gate`;
    const sent = await commandsOf(client, async () => {
      // The connection waits on the gate first: no call sent after it is answered, all stay in flight.
      const held = client.blpop(gate, 0);
      const saving = first.map(save);
      // The next turn: the first runs' calls are all in flight (none answered).
      await new Promise((resolve) => setImmediate(resolve));
      saving.push(...later.map(save));
      await redis.lpush(gate, 'open');
      await held;
      expect((await Promise.all(saving)).every((w) => w)).toBe(true);
    });
    const runsPerCall = sent.filter((c) => /^eval(sha)?$/i.test(c[0])).map((c) => Number(c[3 + Number(c[2]) + 1]));
    // In flight 0, 2, 4, 6: calls of 2; then 8 -> 3, 11 -> 4; the turn's last 4 when it ends. The
    // next turn starts with 19 in flight: 7, then 26 -> 8 (at most MAX_RUNS_PER_COMMIT), 34 -> 8, and 1.
    expect(runsPerCall).toEqual([2, 2, 2, 2, 3, 4, 4, 7, MAX_RUNS_PER_COMMIT, MAX_RUNS_PER_COMMIT, 1]);
    expect(Math.min(...runsPerCall.slice(0, -1))).toBe(MIN_RUNS_PER_COMMIT);
    for (const s of states) await expect(storage.load(s.runId)).resolves.toEqual(s);
  });

  it('a trace entry refers to a stored result instead of copying it, and reads back whole', async () => {
    const { client, storage, locks } = fresh();
    const state = makeRunState({ results: {}, completed: [], undoStack: [], attempts: {}, trace: [] });
    const lease = (await locks.acquire(`run:${state.runId}`, 30_000))!;
    await storage.save(state, { lease, leaseTtlMs: 30_000, createOnly: true });
    const reserved = { orderId: 'o-1', note: 'n'.repeat(300) };
    state.results.reserve = reserved;
    state.completed.push('reserve');
    await storage.save(state, { lease, leaseTtlMs: 30_000 });
    state.trace.push({
      type: 'run',
      step: 'charge',
      at: T0,
      attempt: 1,
      arguments: { reservation: reserved, cents: 5 },
    });
    const [command] = await commandsOf(client, () => storage.save(state, { lease, leaseTtlMs: 30_000 }));

    // One run's block is one argument, its parts joined by NUL.
    const block = command[command.length - 1].split('\0');
    const entry = block[block.indexOf('t:0') + 1];
    expect(JSON.parse(entry)).toEqual([
      'run',
      'charge',
      T0,
      { attempt: 1, arguments: { cents: 5 }, refs: { reservation: 'r:reserve' } },
    ]);
    expect(entry).not.toContain('nnnn');
    const loaded = (await storage.load(state.runId))!;
    expect(loaded.trace[0].arguments).toEqual({ reservation: reserved, cents: 5 });
    expect(loaded).toEqual(state);

    // The final save: its head carries the value and the time, as an earlier version reads them.
    state.status = 'completed';
    state.value = reserved;
    await storage.save(state, { lease, leaseTtlMs: 30_000, releaseLease: true });
    const head = JSON.parse((await redis.hget(keys.runKey(state.runId), 'head'))!);
    expect(head).toMatchObject({ status: 'completed', value: reserved, updatedAt: state.updatedAt });
    await expect(storage.load(state.runId)).resolves.toEqual(state);
  });

  it('a run whose names hold a NUL is sent unpacked, and stored the same', async () => {
    const { client, storage, locks } = fresh();
    const state = makeRunState({ results: {}, completed: [], undoStack: [], attempts: {}, trace: [] });
    const lease = (await locks.acquire(`run:${state.runId}`, 30_000))!;
    await storage.save(state, { lease, leaseTtlMs: 30_000, createOnly: true });
    state.results['odd\0name'] = { ok: true };
    state.completed.push('odd\0name');
    const [packed] = await commandsOf(client, () =>
      storage.save({ ...state, completed: [] }, { lease, leaseTtlMs: 30_000 }),
    );
    const [unpacked] = await commandsOf(client, () => storage.save(state, { lease, leaseTtlMs: 30_000 }));

    expect(packed.length).toBe(scriptKeys(packed).length + 6); // evalsha, sha, numkeys, the keys, TTL, count, one block
    expect(unpacked).toContain('r:odd\0name');
    await expect(storage.load(state.runId)).resolves.toEqual(state);
  });

  it('a checkpoint sends only what the step changed: its size grows neither with the run nor with earlier results', async () => {
    const { client, storage, locks } = fresh();
    const state = makeRunState({ results: {}, completed: [], undoStack: [], attempts: {}, trace: [] });
    const lease = (await locks.acquire(`run:${state.runId}`, 30_000))!;
    await storage.save(state, { lease, leaseTtlMs: 30_000, createOnly: true });
    const payload = { orderId: 'o-1', lines: Array.from({ length: 8 }, (_, i) => ({ sku: `SKU-${i}`, qty: i })) };
    const step = async (name: string, value: unknown): Promise<number> => {
      state.attempts[name] = 1;
      state.trace.push({ type: 'run', step: name, at: state.updatedAt, attempt: 1 });
      state.results[name] = value;
      state.completed.push(name);
      state.undoStack.push({ step: name, args: { orderId: 'o-1' }, result: value });
      state.trace.push({ type: 'complete', step: name, at: state.updatedAt });
      state.updatedAt += 1;
      const [command] = await commandsOf(client, () => storage.save(state, { lease, leaseTtlMs: 30_000 }));
      expect(command[0].toLowerCase()).toBe('evalsha');
      return command.reduce((sum, arg) => sum + Buffer.byteLength(arg), 0);
    };

    // Step numbers of the same width, so the bytes of the step names are alike.
    const early = await step('s100', payload);
    // A large result in the middle of the run is written once.
    await step('s101', { blob: 'x'.repeat(100_000) });
    for (let i = 102; i < 300; i++) await step(`s${i}`, payload);
    const late = await step('s300', payload);

    expect(late).toBeLessThan(early * 1.1);
    expect(late).toBeLessThan(2_000);
    await expect(storage.load(state.runId)).resolves.toEqual(state);
  });

  it('a checkpoint re-sent after its reply was lost answers as the first time and changes nothing', async () => {
    const { client, storage, locks } = fresh();
    const state = makeRunState({ results: {}, completed: [], undoStack: [], attempts: {}, trace: [] });
    const lease = { key: `run:${state.runId}`, token: randomUUID() };
    const runKey = keys.runKey(state.runId);
    // What ioredis does when a reply is lost and it reconnects: send the very same command again.
    const resend = async (command: string[]) => client.call(command[0], ...command.slice(1));

    // The create, taking the lease in the same write: re-sent, it is not "already exists".
    const [create] = await commandsOf(client, () =>
      storage.save(state, { lease, leaseTtlMs: 30_000, createOnly: true, acquireLease: true }),
    );
    const created = await redis.hgetall(runKey);
    await expect(resend(create)).resolves.toEqual([1]);
    expect(await redis.hgetall(runKey)).toEqual(created);

    // A mid-run checkpoint, re-sent after the next one landed: it answers 1 and writes nothing.
    state.results.a = 'A';
    state.completed.push('a');
    state.updatedAt += 1;
    const [checkpoint] = await commandsOf(client, () => storage.save(state, { lease, leaseTtlMs: 30_000 }));
    state.results.b = 'B';
    state.completed.push('b');
    state.status = 'completed';
    state.updatedAt += 1;
    // The final save releases the lease: re-sent, it is not "lease lost".
    const [final] = await commandsOf(client, () =>
      storage.save(state, { lease, leaseTtlMs: 30_000, releaseLease: true }),
    );
    const finished = await redis.hgetall(runKey);
    expect(await locks.isHeld(lease.key)).toBe(false);
    await expect(resend(final)).resolves.toEqual([1]);
    await expect(resend(checkpoint)).resolves.toEqual([-1]);
    expect(await redis.hgetall(runKey)).toEqual(finished);
    await expect(storage.load(state.runId)).resolves.toEqual(state);
  });

  it('the other operations: one command each, except a missing load and markBroken', async () => {
    const { client, storage, locks } = fresh();
    const state = makeRunState();
    await storage.save(state); // warm the script cache of this connection

    const lease = await commandsOf(client, () => locks.acquire(`run:${state.runId}`, 30_000));
    expect(names(lease)).toEqual(['set']);
    const held = (await locks.acquire(`orders:${state.runId}`, 30_000))!;
    await locks.extend(held, 30_000); // first extend on this connection is an EVAL
    await locks.release((await locks.acquire(`tmp:${state.runId}`, 30_000))!);
    expect(names(await commandsOf(client, () => locks.extend(held, 30_000)))).toEqual(['evalsha']);
    expect(names(await commandsOf(client, () => locks.isHeld(held.key)))).toEqual(['exists']);
    expect(names(await commandsOf(client, () => locks.release(held)))).toEqual(['evalsha']);

    expect(names(await commandsOf(client, () => storage.load(state.runId)))).toEqual(['hgetall']);
    const missing = await commandsOf(client, () => storage.load(newRunId()));
    expect(names(missing)).toEqual(['hgetall', 'eval']);
    expect(new Set(scriptKeys(missing[1]).map(keySlot)).size).toBe(1);

    expect(names(await commandsOf(client, () => storage.listActive(10)))).toEqual(Array(16).fill('zrange'));

    const broken = await commandsOf(client, () =>
      storage.markBroken(state.runId, 'checkout', { code: 'X', message: 'y' }),
    );
    expect(names(broken)).toEqual(['hgetall', 'eval']);
    expect(new Set(scriptKeys(broken[1]).map(keySlot)).size).toBe(1);
    expect(keySlot(scriptKeys(broken[1])[0])).toBe(keySlot(keys.runKey(state.runId)));
  });
});

describe('scripts', () => {
  it('are found under lib/scripts when running from source', () => {
    expect(resolveScriptsDir()).toBe(join(__dirname, '../../lib/scripts'));
  });

  it.each(Object.values(SCRIPT_FILES))(
    '%s has a header and uses exactly the KEYS its name declares (n: counted per call)',
    (file) => {
      const lua = readFileSync(join(resolveScriptsDir(), file), 'utf8');
      const declared = /-(\d+|n)\.lua$/.exec(file)![1];
      expect(lua).toMatch(/^--\[\[/);
      for (const section of ['Input:', 'Output:']) expect(lua).toContain(section);
      const used = [...new Set([...lua.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
      if (declared === 'n') {
        // A variable key count: fixed keys 1..k by number, the rest counted from #KEYS.
        expect(used).toEqual(Array.from({ length: used.length }, (_, i) => i + 1));
        expect(lua).toContain('#KEYS');
      } else {
        expect(used).toEqual(Array.from({ length: Number(declared) }, (_, i) => i + 1));
      }
    },
  );

  it('negative codes map to errors through one factory', () => {
    expect(storageError(StorageErrorCode.LeaseLost, { runId: 'r', operation: 'save' })).toBeInstanceOf(LeaseLostError);
    expect(storageError(StorageErrorCode.InvalidArgument, { runId: 'r', operation: 'save' })).toMatchObject({
      code: 'INTERNAL',
    });
    const unknown = storageError(-99, { runId: 'r', operation: 'save' });
    expect(unknown).toBeInstanceOf(ReactorError);
    expect(unknown.message).toContain('-99');
  });
});
