import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { ReactorError } from '../../lib/core/errors';
import { elementLeaseKey, mapIdOf } from '../../lib/core/model/keys';
import type { MapMeta } from '../../lib/core/model/map';
import {
  RedisKeys,
  RedisLockManager,
  RedisMapStore,
  resolveScriptsDir,
  SCRIPT_FILES,
  type ScriptName,
} from '../../lib/storage/redis';
import { StorageErrorCode, storageError } from '../../lib/storage/storage-error-codes';
import { makeRunState, newRunId, T0 } from '../conformance/run-state.factory';
import { cleanupPrefix, createTestRedis, redisUrl, uniquePrefix } from '../setup/redis';
import { keySlot } from './key-slot';
import { RedisMonitor } from './redis-monitor';

const DAY = 24 * 3600 * 1000;
const filePrefix = uniquePrefix('redis-map-store').replace(/:$/, '');
let redis: Redis;
let keys: RedisKeys;
let maps: RedisMapStore;
const clients: Redis[] = [];

beforeAll(() => {
  redis = createTestRedis();
  keys = new RedisKeys({ prefix: filePrefix, shards: 16 });
  maps = new RedisMapStore(redis, { keys });
});
afterAll(async () => {
  await cleanupPrefix(redis, filePrefix);
  for (const client of clients) client.disconnect();
  await redis.quit();
});

function metaOf(mapId: string, overrides: Partial<MapMeta> = {}): MapMeta {
  const parentRunId = keys.mapRunIdOf(mapId);
  return {
    mapId,
    ownerRunId: keys.rootRunId(parentRunId),
    ownerReactor: 'import',
    parentRunId,
    step: mapId.slice(parentRunId.length + 1),
    elementReactor: 'reserve-item',
    total: 4,
    batchSize: 2,
    atomic: false,
    createdAt: T0,
    ...overrides,
  };
}

describe('RedisKeys: maps and composed runs', () => {
  it('shards a run by its root, and a map by the run holding it', () => {
    expect(keys.rootRunId('r-1')).toBe('r-1');
    expect(keys.rootRunId('r-1/pay/card')).toBe('r-1');
    expect(keys.mapRunIdOf('r-1:charges')).toBe('r-1');
    expect(keys.mapRunIdOf('order:42:charges')).toBe('order:42');
    expect(keys.mapRunIdOf('r-1/pay:charges')).toBe('r-1/pay');
    expect(keys.shardOf('r-1/pay')).toBe(keys.shardOf('r-1'));
    expect(keys.mapShardOf('r-1/pay:charges')).toBe(keys.shardOf('r-1'));
  });

  it('builds the map keys, the element lease and the open index under the shard tag', () => {
    const base = keys.shardBase(keys.shardOf('r-1'));
    expect(keys.mapKey('r-1:charges', 'records')).toBe(`${base}:map:r-1:charges:records`);
    expect(keys.mapElementLeaseKey('r-1:charges', 7)).toBe(`${base}:mapel:r-1:charges:7`);
    expect(keys.physicalLeaseKey(elementLeaseKey('r-1:charges', 7))).toBe(`${base}:mapel:r-1:charges:7`);
    expect(keys.openMapsIndexKeyOf('r-1/x:charges')).toBe(`${base}:maps:open`);
    expect(new RedisKeys().openMapsIndexKey(3)).toBe('reactor:{reactor:s3}:maps:open');
    expect(() => keys.openMapsIndexKey(16)).toThrow(RangeError);
    expect(keys.allOpenMapsIndexKeys()).toHaveLength(16);
    // Other names keep their own tag; the run lease keeps its mapping.
    expect(keys.physicalLeaseKey('mapel:no-index')).toBe(`${filePrefix}:{lock:mapel:no-index}`);
    expect(keys.physicalLeaseKey('run:r-1/pay')).toBe(keys.leaseKey('r-1/pay'));
  });

  it('puts a map, its element leases, its open index and its owner run in one slot, for many ids', () => {
    const odd = ['{', '}', '{x}', 'a}b{c', ':', 'ünïcödé', ''];
    const roots = [...Array.from({ length: 500 }, () => randomUUID()), ...odd.map((o) => `${o}${randomUUID()}${o}`)];
    for (const layout of [keys, new RedisKeys(), new RedisKeys({ prefix: 'p', shards: 5 })]) {
      for (const root of roots) {
        const slot = keySlot(layout.runKey(root));
        for (const runId of [root, `${root}/pay`, `${root}/pay/card:x`]) {
          expect(keySlot(layout.runKey(runId))).toBe(slot);
          expect(keySlot(layout.leaseKey(runId))).toBe(slot);
          for (const mapId of [mapIdOf(runId, 'charges'), mapIdOf(runId, 'a:b')]) {
            const mapKeys = [
              ...(
                [
                  'meta',
                  'counters',
                  'inputs',
                  'records',
                  'statuses',
                  'states',
                  'rollback',
                  'rollback-order',
                  'rollback-outcomes',
                ] as const
              ).map((part) => layout.mapKey(mapId, part)),
              layout.mapElementLeaseKey(mapId, 12),
              layout.physicalLeaseKey(elementLeaseKey(mapId, 12)),
              layout.openMapsIndexKeyOf(mapId),
            ];
            // A step name holding ':' cannot be told from a run id holding one: such a map still
            // keeps all its keys in one slot, but not necessarily its owner's.
            const expected = mapId.endsWith(':a:b') && !runId.includes('/') ? keySlot(mapKeys[0]) : slot;
            expect(new Set(mapKeys.map(keySlot))).toEqual(new Set([expected]));
          }
        }
      }
    }
  });
});

describe('RedisMapStore: keys and TTLs', () => {
  it('stamps every key with the retention TTL and re-stamps them on writes', async () => {
    const mapId = mapIdOf(newRunId(), 'charges');
    await maps.putInputs(mapId, 0, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await redis.pttl(keys.mapKey(mapId, 'inputs'))).toBeGreaterThan(DAY - 10_000);
    await redis.pexpire(keys.mapKey(mapId, 'inputs'), 5000);
    await maps.create(metaOf(mapId));
    for (const part of ['meta', 'counters', 'inputs'] as const) {
      expect(await redis.pttl(keys.mapKey(mapId, part))).toBeGreaterThan(DAY - 10_000);
    }
    await maps.reserve(mapId, 2);
    const lease = { key: elementLeaseKey(mapId, 0), token: randomUUID() };
    await maps.claimElement(mapId, 0, lease, 30_000);
    expect(await redis.pttl(keys.mapElementLeaseKey(mapId, 0))).toBeGreaterThan(25_000);
    await redis.pexpire(keys.mapKey(mapId, 'inputs'), 5000);
    await redis.pexpire(keys.mapKey(mapId, 'meta'), 5000);
    await maps.settleElement(mapId, 0, { status: 'completed', value: 1 }, makeRunState(), lease);
    for (const part of ['meta', 'counters', 'inputs', 'records', 'statuses', 'states'] as const) {
      expect(await redis.pttl(keys.mapKey(mapId, part))).toBeGreaterThan(DAY - 10_000);
    }
    await maps.startRollback(mapId, 2);
    await maps.settleRollback(mapId, 0, [], undefined);
    for (const part of ['rollback', 'rollback-order', 'rollback-outcomes'] as const) {
      expect(await redis.pttl(keys.mapKey(mapId, part))).toBeGreaterThan(DAY - 10_000);
    }
    expect(await redis.pttl(keys.openMapsIndexKeyOf(mapId))).toBe(-1); // shared index: no TTL
  });

  it('honours contextTtlMs and rejects a bad one', async () => {
    const short = new RedisMapStore(redis, { keys, contextTtlMs: 60_000 });
    const mapId = mapIdOf(newRunId(), 'charges');
    await short.create(metaOf(mapId));
    expect(await redis.pttl(keys.mapKey(mapId, 'meta'))).toBeLessThanOrEqual(60_000);
    expect(() => new RedisMapStore(redis, { keys, contextTtlMs: 0 })).toThrow(RangeError);
  });

  it('meta drops an expired map from the open index', async () => {
    const mapId = mapIdOf(newRunId(), 'charges');
    await maps.create(metaOf(mapId, { createdAt: 1 }));
    expect(await redis.zscore(keys.openMapsIndexKeyOf(mapId), mapId)).toBe('1');
    await redis.del(keys.mapKey(mapId, 'meta'));
    await expect(maps.meta(mapId)).resolves.toBeUndefined();
    expect(await redis.zscore(keys.openMapsIndexKeyOf(mapId), mapId)).toBeNull();
  });

  it('missing maps fail through the storage error factory', () => {
    const error = storageError(StorageErrorCode.MapMissing, { runId: 'm', mapId: 'r:m', operation: 'reserve' });
    expect(error).toBeInstanceOf(ReactorError);
    expect(error).toMatchObject({ code: 'INTERNAL' });
    expect(error.message).toContain("Map 'r:m' is not stored");
  });
});

describe('RedisMapStore: scripts, slots and round trips (counted with MONITOR)', () => {
  let monitor: RedisMonitor;

  beforeAll(async () => {
    monitor = await RedisMonitor.start(redisUrl());
  });
  afterAll(() => monitor.close());

  const commandsOf = (client: Redis, action: () => Promise<unknown>) => monitor.commandsOf(client, action);

  const names = (commands: string[][]) => commands.map((c) => c[0].toLowerCase());
  /** Keys of an EVAL/EVALSHA: [name, script|sha, numkeys, ...keys, ...args]. */
  const scriptKeys = (command: string[]) => command.slice(3, 3 + Number(command[2]));
  const isScript = (command: string[]) => ['eval', 'evalsha'].includes(command[0].toLowerCase());

  function fresh(): { client: Redis; maps: RedisMapStore; locks: RedisLockManager } {
    const client = createTestRedis();
    clients.push(client);
    return { client, maps: new RedisMapStore(client, { keys }), locks: new RedisLockManager(client, { keys }) };
  }

  it.each([
    ['a top-level run', (root: string) => root],
    ['a composed child', (root: string) => `${root}/pay`],
    ['a run id with colons', (root: string) => `order:${root}:x/pay:y`],
  ])('every map script touches only the owner run slot (map of %s)', async (_, holder) => {
    const root = newRunId();
    const mapId = mapIdOf(holder(root), 'charges');
    const ownerSlot = keySlot(keys.runKey(keys.rootRunId(holder(root))));
    if (!holder(root).startsWith('order:')) expect(ownerSlot).toBe(keySlot(keys.runKey(root)));
    const { client, maps, locks } = fresh();
    const lease = (i: number) => ({ key: elementLeaseKey(mapId, i), token: randomUUID() });
    const l0 = lease(0);
    const l1 = lease(1);
    const chunkToken = randomUUID();
    const l1x = (i: number) => ({ key: elementLeaseKey(mapId, i), token: chunkToken });

    const steps: Array<[ScriptName, () => Promise<unknown>]> = [
      ['mapPutInputs', () => maps.putInputs(mapId, 0, [{ n: 0 }, { n: 1 }, { n: 2 }])],
      ['mapCreate', () => maps.create(metaOf(mapId, { total: 3 }))],
      ['mapReserve', () => maps.reserve(mapId, 2)],
      ['mapClaimElements', () => maps.claimElement(mapId, 0, l0, 30_000)],
      ['mapPutElementState', () => maps.putElementState(mapId, 0, makeRunState(), l0)],
      ['mapSettleElements', () => maps.settleElement(mapId, 0, { status: 'completed', value: 0 }, makeRunState(), l0)],
      // A chunk of elements: a lease key per element, all in the map's slot.
      [
        'mapClaimElements',
        () =>
          maps.claimElements(
            mapId,
            [1, 2].map((i) => ({ index: i, lease: l1x(i) })),
            30_000,
          ),
      ],
      [
        'mapSettleElements',
        () =>
          maps.settleElements(
            mapId,
            [1, 2].map((i) => ({ index: i, record: { status: 'completed', value: i }, lease: l1x(i) })),
          ),
      ],
      ['mapRecords', () => maps.records(mapId, 0, 3)],
      ['mapProgress', () => maps.progress(mapId)],
      ['mapStalled', () => maps.stalled(mapId, 5)],
      ['mapClaimSignal', () => maps.claimSignal(mapId)],
      ['mapStartRollback', () => maps.startRollback(mapId, 2)],
      ['mapStalledRollback', () => maps.stalledRollback(mapId, 5)],
      ['mapSettleRollback', () => maps.settleRollback(mapId, 0, [], l1)],
      ['mapRollbackProgress', () => maps.rollbackProgress(mapId)],
      ['forgetIfMissing', () => maps.meta(mapIdOf(holder(root), 'never-created'))],
    ];
    const seen = new Set<string>();
    for (const [name, action] of steps) {
      const scripts = (await commandsOf(client, action)).filter(isScript);
      expect({ name, count: scripts.length }).toEqual({ name, count: 1 });
      // A fixed key count is in the file name; `-n` scripts take theirs per call (checked by slot below).
      const declared = /-(\d+|n)\.lua$/.exec(SCRIPT_FILES[name])![1];
      if (declared !== 'n') expect(scriptKeys(scripts[0])).toHaveLength(Number(declared));
      expect({ name, slots: [...new Set(scriptKeys(scripts[0]).map(keySlot))] }).toEqual({
        name,
        slots: [ownerSlot],
      });
      seen.add(name);
    }
    // Every map script was exercised.
    expect(
      Object.keys(SCRIPT_FILES)
        .filter((n) => n.startsWith('map'))
        .filter((n) => !seen.has(n)),
    ).toEqual([]);
    // The lock manager's element lease is the key the scripts fence on.
    const held = (await locks.acquire(elementLeaseKey(mapId, 2), 30_000))!;
    expect(keySlot(keys.physicalLeaseKey(held.key))).toBe(ownerSlot);
  });

  it('putInputs, reserve, claimElement and settleElement are exactly one command each', async () => {
    const { client, maps } = fresh();
    const mapId = mapIdOf(newRunId(), 'charges');
    const inputs = Array.from({ length: 1000 }, (_, n) => ({ n, sku: `sku-${n}` }));
    // The first use of each script on a connection sends EVAL with its body.
    expect(names(await commandsOf(client, () => maps.putInputs(mapId, 0, inputs)))).toEqual(['eval']);
    expect(names(await commandsOf(client, () => maps.putInputs(mapId, 1000, inputs)))).toEqual(['evalsha']);
    await maps.create(metaOf(mapId, { total: 2000, batchSize: 10 }));

    expect(names(await commandsOf(client, () => maps.reserve(mapId, 1)))).toEqual(['eval']);
    expect(names(await commandsOf(client, () => maps.reserve(mapId, 9)))).toEqual(['evalsha']);

    for (let i = 0; i < 3; i++) {
      const lease = { key: elementLeaseKey(mapId, i), token: randomUUID() };
      const claim = await commandsOf(client, () => maps.claimElement(mapId, i, lease, 30_000));
      expect(names(claim)).toEqual([i === 0 ? 'eval' : 'evalsha']);
      const settle = await commandsOf(client, () =>
        maps.settleElement(mapId, i, { status: 'completed', value: i }, undefined, lease),
      );
      expect(names(settle)).toEqual([i === 0 ? 'eval' : 'evalsha']);
    }
    // A lost lease costs the same single command.
    const lost = await commandsOf(client, () =>
      maps
        .settleElement(mapId, 5, { status: 'completed', value: 5 }, undefined, {
          key: elementLeaseKey(mapId, 5),
          token: 'x',
        })
        .catch(() => undefined),
    );
    expect(names(lost)).toEqual(['evalsha']);

    // The rest, for the record.
    expect(names(await commandsOf(client, () => maps.progress(mapId)))).toEqual(['eval']);
    expect(names(await commandsOf(client, () => maps.records(mapId, 0, 500)))).toEqual(['eval']);
    expect(names(await commandsOf(client, () => maps.meta(mapId)))).toEqual(['get']);
    expect(names(await commandsOf(client, () => maps.elementState(mapId, 0)))).toEqual(['hget']);
    expect(names(await commandsOf(client, () => maps.close(mapId)))).toEqual(['zrem']);
    expect(names(await commandsOf(client, () => maps.listOpen(10)))).toEqual(Array(16).fill('zrange'));
    // stalled: one script, then one pipeline of EXISTS for its candidates (3..12 are dispatched).
    const stalled = await commandsOf(client, () => maps.stalled(mapId, 5));
    expect(names(stalled)).toEqual(['eval', ...Array(10).fill('exists')]);
  });
});

describe('scripts', () => {
  const dir = () => resolveScriptsDir();

  it.each(Object.values(SCRIPT_FILES).filter((f) => f.startsWith('map')))(
    '%s has a header, and its includes exist and name no KEYS',
    (file) => {
      const lua = readFileSync(join(dir(), file), 'utf8');
      expect(lua).toMatch(/^--\[\[/);
      for (const section of ['Input:', 'Output:', 'KEYS[1]']) expect(lua).toContain(section);
      for (const [, fragment] of lua.matchAll(/^--- @include "([\w.-]+)"/gm)) {
        const body = readFileSync(join(dir(), 'includes', `${fragment}.lua`), 'utf8');
        expect(body).toMatch(/^--\[\[/);
        expect(body).not.toMatch(/KEYS\[/);
      }
    },
  );
});
