import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { RedisFlowStore, RedisKeys, SCRIPT_FILES, type ScriptName } from '../../lib/storage/redis';
import { resolveScriptsDir } from '../../lib/storage/redis/redis-scripts';
import { describeFlowStoreConformance } from '../conformance/flow-store.conformance';
import { cleanupPrefix, redisUrl } from '../setup/redis';
import { redisSpecFile, redisTimeMs, scriptKeys, storedKeys as storedKeysUnder } from '../support/redis-spec-file';
import { crc16, keySlot } from './key-slot';
import { RedisMonitor } from './redis-monitor';

const { redis, nextPrefix, client: newClient, itLeavesNoKeysBehind } = redisSpecFile('redis-flow-conformance');

/** A Redis flow store under a fresh prefix per test; time is Redis's own (real short periods). */
describeFlowStoreConformance('redis', () => {
  const prefix = nextPrefix();
  return {
    store: new RedisFlowStore(redis, { keys: new RedisKeys({ prefix }) }),
    shortMs: 200,
    cleanup: async () => {
      await cleanupPrefix(redis, `${prefix}:`);
    },
  };
});

const FLOW_SCRIPTS = Object.keys(SCRIPT_FILES).filter((n) => n.startsWith('flow')) as ScriptName[];

describe('RedisFlowStore: keys, slots, bounds, TTLs, time and round trips', () => {
  let monitor: RedisMonitor;
  let prefix: string;
  let keys: RedisKeys;
  let store: RedisFlowStore;

  beforeAll(async () => {
    monitor = await RedisMonitor.start(redisUrl());
  });
  afterAll(() => monitor.close());
  beforeEach(() => {
    prefix = nextPrefix('own');
    keys = new RedisKeys({ prefix });
    store = new RedisFlowStore(redis, { keys });
  });
  afterEach(async () => {
    await cleanupPrefix(redis, `${prefix}:`);
  });

  /** The hash tag of a (reactor, key)'s structures, and of a reactor's key index. */
  const keyTag = (reactor: string, key: string) => `flow:${encodeURIComponent(reactor)}:${encodeURIComponent(key)}`;
  const indexTag = (reactor: string) => `flow:${encodeURIComponent(reactor)}`;
  const slotOfTag = (tag: string) => crc16(Buffer.from(tag)) % 16384;

  const storedKeys = () => storedKeysUnder(redis, prefix);

  /** Use every operation once on (reactor, key), leaving each of its structures in place. */
  async function useAll(reactor: string, key: string): Promise<void> {
    await store.enter(reactor, key, 'a', 1, 10);
    await store.enter(reactor, key, 'b', 1, 10);
    await store.enter(reactor, key, 'c', 1, 10);
    await store.leave(reactor, key, 'c', 1);
    await store.inspect(reactor, key, 5);
    await store.reserveStart(reactor, key, 2, 60_000);
    const spec = { mode: 'all', maxWaitMs: 60_000, maxSize: 2, ttlMs: 60_000 } as const;
    await store.gather(reactor, key, 'g1', 'x', spec);
    await store.gather(reactor, key, 'g2', 'y', spec); // fills g1's gather: it closes
    await store.gather(reactor, key, 'g3', 'z', spec); // opens another
    await store.take(reactor, key, 'g1');
    await store.keys(reactor, 10);
    await store.prune(reactor, key, 0);
  }

  it.each([
    ['plain names', 'invoices', 'tenant-7'],
    ['braces in the names', '{invoices}', '{t}'],
    ['braces and colons', 'a}:{b:c', 'x}:live'],
    ['a key that looks like a reactor', 'r:k', 'k'],
  ])('(a) keeps every structure of a (reactor, key) in the slot of its tag (%s)', async (_, reactor, key) => {
    await useAll(reactor, key);
    const found = await storedKeys();
    const base = `${prefix}:{${keyTag(reactor, key)}}`;
    expect(found).toEqual(
      [
        `${base}:live`,
        `${base}:queue`,
        `${base}:seq`,
        `${base}:window`,
        `${base}:open`,
        `${base}:open:items`,
        `${base}:closed`,
        `${base}:closed:expiry`,
        `${prefix}:{${indexTag(reactor)}}:keys`,
        `${prefix}:{flow:}:reactors`,
      ].sort(),
    );
    const slot = slotOfTag(keyTag(reactor, key));
    for (const k of found.filter((f) => !f.endsWith('}:keys') && !f.endsWith('}:reactors')))
      expect({ k, slot: keySlot(k) }).toEqual({ k, slot });
    const index = found.find((f) => f.endsWith('}:keys'))!;
    expect(keySlot(index)).toBe(slotOfTag(indexTag(reactor)));
    expect(keys.flowKey(reactor, key, 'live')).toBe(`${base}:live`);
    expect(keys.flowIndexKey(reactor)).toBe(index);
  });

  it('(a) never lets two (reactor, key) pairs meet, whatever colons the names hold', () => {
    expect(keys.flowKey('a:b', 'c', 'live')).not.toBe(keys.flowKey('a', 'b:c', 'live'));
    expect(keys.flowKey('a', 'b', 'live')).not.toBe(keys.flowIndexKey('a:b'));
    expect(keys.flowIndexKey('a:b')).toBe(`${prefix}:{flow:a%3Ab}:keys`);
  });

  /** Every command `client` sent, and every command its scripts ran, while `action` ran. */
  const withScriptCommands = (client: Redis, action: () => Promise<unknown>) =>
    monitor.withScriptCommands(client, prefix, action);

  it('(a) runs each operation as one script on keys of one slot (the index and reactor set apart), touching only declared keys', async () => {
    const client = newClient();
    const own = new RedisFlowStore(client, { keys });
    const [reactor, key] = ['r{1}', 'k:{2}'];
    const slot = slotOfTag(keyTag(reactor, key));
    const indexSlot = slotOfTag(indexTag(reactor));
    const reactorsKey = `${prefix}:{flow:}:reactors`;
    const gatherAll = { mode: 'all', maxWaitMs: 60_000, maxSize: 2, ttlMs: 60_000 } as const;
    const gatherLast = { mode: 'last', periodMs: 60_000, maxWaitMs: 60_000, ttlMs: 60_000 } as const;
    // `flowTouch` (the index's script) goes first, then the key's script: one round trip (below).
    const steps: Array<[string, string[], () => Promise<unknown>]> = [
      ['now', ['time'], () => own.now()],
      [
        'enter (admitted, first of the reactor)',
        ['sadd', 'flowTouch', 'flowEnter'],
        () => own.enter(reactor, key, 'a', 1, 2),
      ],
      ['enter (queued)', ['flowTouch', 'flowEnter'], () => own.enter(reactor, key, 'b', 1, 2)],
      ['enter (queued again)', ['flowTouch', 'flowEnter'], () => own.enter(reactor, key, 'b', 1, 2)],
      ['enter (queued)', ['flowTouch', 'flowEnter'], () => own.enter(reactor, key, 'c', 1, 2)],
      ['enter (full)', ['flowTouch', 'flowEnter'], () => own.enter(reactor, key, 'd', 1, 2)],
      ['inspect', ['flowInspect'], () => own.inspect(reactor, key, 10)],
      ['leave', ['flowTouch', 'flowLeave'], () => own.leave(reactor, key, 'a', 1)],
      ['leave (queued)', ['flowTouch', 'flowLeave'], () => own.leave(reactor, key, 'c', 1)],
      ['leave (last)', ['flowTouch', 'flowLeave'], () => own.leave(reactor, key, 'b', 1)],
      ['leave (unknown)', ['flowTouch', 'flowLeave'], () => own.leave(reactor, key, 'b', 1)],
      ['keys', ['zrange'], () => own.keys(reactor, 10)],
      ['reactors', ['smembers'], () => own.reactors()],
      ['prune', ['exists', 'flowPrune'], () => own.prune(reactor, key, 0)],
      ['enter (admitted again)', ['flowTouch', 'flowEnter'], () => own.enter(reactor, key, 'busy', 1, 2)],
      ['prune (busy)', ['exists'], () => own.prune(reactor, key, 0)],
      ['reserveStart', ['flowReserve'], () => own.reserveStart(reactor, key, 1, 60_000)],
      ['reserveStart (next window)', ['flowReserve'], () => own.reserveStart(reactor, key, 1, 60_000)],
      ['gather (opens)', ['flowGather'], () => own.gather(reactor, key, 'g1', 'x', gatherAll)],
      ['take (not due)', ['flowTake'], () => own.take(reactor, key, 'g1')],
      ['gather (joins, fills)', ['flowGather'], () => own.gather(reactor, key, 'g2', 'y', gatherAll)],
      ['take (due)', ['flowTake'], () => own.take(reactor, key, 'g1')],
      ['take (none)', ['flowTake'], () => own.take(reactor, key, 'nobody')],
      ['gather last (opens)', ['flowGather'], () => own.gather(reactor, key, 'd1', 'x', gatherLast)],
      ['gather last (joins)', ['flowGather'], () => own.gather(reactor, key, 'd2', 'y', gatherLast)],
    ];
    const isScript = (name: string) => name in SCRIPT_FILES;
    const keyCount = (name: string) => Number(/-(\d+)\.lua$/.exec(SCRIPT_FILES[name as ScriptName])![1]);
    const seen = new Set<string>();
    for (const [what, expected, action] of steps) {
      const { sent, inside } = await withScriptCommands(client, action);
      const names = sent.map((c) => (['eval', 'evalsha'].includes(c[0].toLowerCase()) ? 'script' : c[0].toLowerCase()));
      expect({ what, names }).toEqual({ what, names: expected.map((e) => (isScript(e) ? 'script' : e)) });
      const declaredBy = new Map<string, string[]>();
      for (const [i, command] of sent.entries()) {
        const name = expected[i];
        if (!isScript(name)) continue;
        seen.add(name);
        const declared = scriptKeys(command);
        declaredBy.set(name, declared);
        expect({ what, name, count: declared.length }).toEqual({ what, name, count: keyCount(name) });
        const declaredSlots = [...new Set(declared.map(keySlot))];
        expect({ what, name, declaredSlots }).toEqual({
          what,
          name,
          declaredSlots: [name === 'flowPrune' || name === 'flowTouch' ? indexSlot : slot],
        });
        if (name === 'flowTouch') expect(declared).toEqual([keys.flowIndexKey(reactor)]);
      }
      // Each command a script ran names keys declared by one script of this step.
      expect(inside.length).toBeGreaterThanOrEqual(declaredBy.size);
      for (const command of inside) {
        const named = command.slice(1).filter((a) => a.startsWith(`${prefix}:`));
        const owner = [...declaredBy.values()].some((declared) => named.every((k) => declared.includes(k)));
        expect({ what, command, declared: owner }).toEqual({ what, command, declared: true });
      }
      for (const command of sent.filter((c) => !['eval', 'evalsha', 'time'].includes(c[0].toLowerCase()))) {
        const name = command[0].toLowerCase();
        expect({ what, slot: keySlot(command[1]) }).toEqual({
          what,
          slot: name === 'exists' ? slot : name === 'zrange' ? indexSlot : keySlot(reactorsKey),
        });
        if (name === 'sadd' || name === 'smembers') expect(command[1]).toBe(reactorsKey);
      }
    }
    expect(FLOW_SCRIPTS.filter((n) => !seen.has(n))).toEqual([]);
    // The reactor set is on a slot of its own (no reactor's index, no key).
    expect(keySlot(reactorsKey)).not.toBe(indexSlot);
  });

  it('(a) enter and leave send everything in one round trip: the index first, no command after an answer', async () => {
    const client = newClient();
    const own = new RedisFlowStore(client, { keys });
    await own.now(); // connected, and TIME answered outside the calls counted
    /** Each command the client sends while `action` runs, with how many answers it had then. */
    async function sends(action: () => Promise<unknown>): Promise<Array<{ keys: string[]; answered: number }>> {
      const log: Array<{ keys: string[]; answered: number }> = [];
      let answered = 0;
      const original = client.sendCommand.bind(client);
      const spy = jest.spyOn(client, 'sendCommand').mockImplementation((command, stream) => {
        log.push({ keys: command.getKeys().map(String), answered });
        void command.promise.then(
          () => answered++,
          () => answered++,
        );
        return original(command, stream);
      });
      try {
        await action();
      } finally {
        spy.mockRestore();
      }
      return log;
    }
    const index = keys.flowIndexKey('r');
    const [live, queue, seq] = ['live', 'queue', 'seq'].map((p) => keys.flowKey('r', 'k', p));
    const reactorsKey = `${prefix}:{flow:}:reactors`;
    expect(await sends(() => own.enter('r', 'k', 'a', 1, 5))).toEqual([
      { keys: [reactorsKey], answered: 0 },
      { keys: [index], answered: 0 },
      { keys: [live, queue, seq], answered: 0 },
    ]);
    expect(await sends(() => own.enter('r', 'k', 'b', 1, 5))).toEqual([
      { keys: [index], answered: 0 },
      { keys: [live, queue, seq], answered: 0 },
    ]);
    expect(await sends(() => own.leave('r', 'k', 'a', 1))).toEqual([
      { keys: [index], answered: 0 },
      { keys: [live, queue, seq], answered: 0 },
    ]);
  });

  it('(a) a process that dies after any of its writes never leaves a run in a key the index or the reactor set misses', async () => {
    // Die after n writes: the commands after them are never sent (their calls fail).
    for (let n = 0; n <= 3; n++) {
      const client = newClient();
      const own = new RedisFlowStore(client, { keys });
      const reactor = `dies-after-${n}`;
      await own.now();
      let written = 0;
      const original = client.sendCommand.bind(client);
      jest.spyOn(client, 'sendCommand').mockImplementation((command, stream) => {
        if (written++ < n) return original(command, stream);
        command.reject(new Error('the process died'));
        return command.promise;
      });
      const entered = await own.enter(reactor, 'k', 'run', 1, 5).then(
        () => true,
        () => false,
      );
      expect({ n, entered }).toEqual({ n, entered: n === 3 });
      const holds = (await store.inspect(reactor, 'k', 1)).live.length > 0;
      expect({ n, holds }).toEqual({ n, holds: n === 3 });
      if (holds) {
        expect(await store.keys(reactor, 10)).toEqual(['k']);
        expect(await store.reactors()).toContain(reactor);
      }
      // What the dead process wrote is consistent for the next one: it lists the reactor once more.
      client.disconnect();
    }
    expect(await store.reactors()).toEqual(['dies-after-1', 'dies-after-2', 'dies-after-3']);
    expect(await store.keys('dies-after-2', 10)).toEqual(['k']);
  });

  it('(a) no flow script builds a key: every redis.call names a KEYS entry (or is TIME)', () => {
    expect(FLOW_SCRIPTS).toHaveLength(8);
    const files = FLOW_SCRIPTS.map((script) => SCRIPT_FILES[script]);
    for (const script of files) {
      const lua = readFileSync(join(resolveScriptsDir(), script), 'utf8');
      for (const call of lua.match(/redis\.call\([^)]*\)/g) ?? []) {
        expect({ script, call, keyFromKeys: /^redis\.call\("(TIME|[A-Z]+", KEYS\[\d\])/.test(call) }).toEqual({
          script,
          call,
          keyFromKeys: true,
        });
      }
    }
    // enter and leave never scan the queue (no LPOS, LREM, LRANGE or full ZRANGE).
    for (const script of ['flowEnter', 'flowLeave'] as const) {
      const lua = readFileSync(join(resolveScriptsDir(), SCRIPT_FILES[script]), 'utf8');
      expect({ script, scans: /"(LPOS|LREM|LRANGE|LINDEX|ZRANGE|ZSCAN|ZRANGEBYSCORE)"/.test(lua) }).toEqual({
        script,
        scans: false,
      });
    }
  });

  it('(b) 50 parallel enters with limit 3 from 5 connections admit exactly 3 and queue 47 at distinct FIFO positions', async () => {
    const connections = Array.from({ length: 5 }, () => newClient());
    const stores = connections.map((c) => new RedisFlowStore(c, { keys }));
    const ids = Array.from({ length: 50 }, (_, i) => `run-${i}`);
    const entries = await Promise.all(ids.map((id, i) => stores[i % stores.length].enter('r', 'k', id, 3, 1000)));
    const admitted = ids.filter((_, i) => entries[i].state === 'admitted');
    const queued = ids
      .map((id, i) => ({ id, entry: entries[i] }))
      .filter(({ entry }) => entry.state === 'queued')
      .map(({ id, entry }) => ({ id, position: (entry as { position: number }).position }));
    expect(admitted).toHaveLength(3);
    expect(queued).toHaveLength(47);
    expect(queued.map((q) => q.position).sort((a, b) => a - b)).toEqual(Array.from({ length: 47 }, (_, i) => i + 1));
    const byPosition = [...queued].sort((a, b) => a.position - b.position).map((q) => q.id);

    // The queue's order is the order of the positions answered, and enter again answers the same.
    const view = await store.inspect('r', 'k', 100);
    expect(view.live.map((l) => l.runId).sort()).toEqual([...admitted].sort());
    expect(view).toMatchObject({ queued: 47, next: byPosition });
    const again = await Promise.all(ids.map((id, i) => stores[i % stores.length].enter('r', 'k', id, 3, 1000)));
    expect(again).toEqual(entries);

    // Leaving admits in that order, one per slot freed, and each exactly once (parallel leaves too).
    const freed = await Promise.all(admitted.map((id, i) => stores[i].leave('r', 'k', id, 3)));
    expect(freed.flat().sort()).toEqual(byPosition.slice(0, 3).sort());
    expect((await store.inspect('r', 'k', 100)).next).toEqual(byPosition.slice(3));
    let live = freed.flat();
    const order: string[] = [...live];
    while (live.length > 0) {
      const [first, ...rest] = live;
      const next = await store.leave('r', 'k', first, 3);
      order.push(...next);
      live = [...rest, ...next];
    }
    expect(order.slice(3)).toEqual(byPosition.slice(3));
    expect(await store.inspect('r', 'k', 10)).toEqual({ key: 'k', live: [], queued: 0, next: [] });
  });

  it('(b) enter and leave stay cheap on a long queue: 10,000 queued, positions and idempotence by rank', async () => {
    const n = 10_000;
    await store.enter('r', 'long', 'head', 1, n + 1);
    const batch = 1_000;
    for (let from = 0; from < n; from += batch) {
      await Promise.all(Array.from({ length: batch }, (_, i) => store.enter('r', 'long', `q-${from + i}`, 1, n + 1)));
    }
    expect(await store.enter('r', 'long', `q-${n - 1}`, 1, n + 1)).toEqual({ state: 'queued', position: n });
    expect(await store.enter('r', 'long', 'q-4999', 1, n + 1)).toEqual({ state: 'queued', position: 5_000 });
    expect(await store.enter('r', 'long', 'last', 1, n + 1)).toEqual({ state: 'queued', position: n + 1 });
    expect(await store.enter('r', 'long', 'refused', 1, n + 1)).toEqual({ state: 'full', queued: n + 1 });
    expect(await store.leave('r', 'long', 'q-4999', 1)).toEqual([]);
    expect(await store.enter('r', 'long', `q-${n - 1}`, 1, n + 1)).toEqual({ state: 'queued', position: n - 1 });
    expect(await store.leave('r', 'long', 'head', 1)).toEqual(['q-0']);
    expect(await store.inspect('r', 'long', 2)).toMatchObject({ queued: n - 1, next: ['q-1', 'q-2'] });
  });

  it('(c) bounds a key: the queue at maxQueued, the live set at limit, and an idle key leaves only its index entry', async () => {
    const base = `${prefix}:{${keyTag('r', 'k')}}`;
    for (let i = 0; i < 20; i++) await store.enter('r', 'k', `run-${i}`, 2, 5);
    expect(await redis.zcard(`${base}:live`)).toBe(2);
    expect(await redis.zcard(`${base}:queue`)).toBe(5);
    // No TTL on the concurrency structures (a live run holds its slot for as long as it lives).
    for (const part of ['live', 'queue', 'seq']) expect(await redis.pttl(`${base}:${part}`)).toBe(-1);
    let live = (await store.inspect('r', 'k', 0)).live.map((l) => l.runId);
    while (live.length > 0) {
      const [first, ...rest] = live;
      live = [...rest, ...(await store.leave('r', 'k', first, 2))];
    }
    expect(await storedKeys()).toEqual([`${prefix}:{${indexTag('r')}}:keys`, `${prefix}:{flow:}:reactors`]);
    expect(await store.keys('r', 10)).toEqual(['k']);
    const lastLeave = await store.now();
    while ((await store.now()) <= lastLeave) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(await store.prune('r', 'k', 0)).toBe(true);
    // The reactor set keeps the reactor (one member per reactor, never removed).
    expect(await storedKeys()).toEqual([`${prefix}:{flow:}:reactors`]);
    expect(await redis.smembers(`${prefix}:{flow:}:reactors`)).toEqual(['r']);
  });

  it('(c) keeps one throttle window per key whatever the backlog, expiring one period after that window', async () => {
    const periodMs = 60_000;
    const base = `${prefix}:{${keyTag('r', 'k')}}`;
    let last = { startAt: 0, now: 0 };
    for (let i = 0; i < 300; i++) last = await store.reserveStart('r', 'k', 3, periodMs);
    expect(await storedKeys()).toEqual([`${base}:window`]);
    const stored = await redis.hgetall(`${base}:window`);
    expect(Object.keys(stored).sort()).toEqual(['count', 'window']);
    expect(Number(stored.window) * periodMs).toBe(last.startAt);
    expect(Number(stored.count)).toBe(3);
    const ttl = await redis.pttl(`${base}:window`);
    const windowEnd = last.startAt + periodMs;
    expect(ttl).toBeGreaterThan(windowEnd + periodMs - last.now - 5_000);
    expect(ttl).toBeLessThanOrEqual(windowEnd + periodMs - last.now);
  });

  it('(c) keeps one open gather of at most maxSize items, and closed ones until ttlMs after they opened', async () => {
    const base = `${prefix}:{${keyTag('r', 'k')}}`;
    const spec = { mode: 'all', maxWaitMs: 60_000, maxSize: 3, ttlMs: 90_000 } as const;
    const replies = [];
    for (let i = 0; i < 7; i++) replies.push(await store.gather('r', 'k', `g${i}`, `item-${i}`, spec));
    expect(replies.map((r) => r.runId)).toEqual(['g0', 'g0', 'g0', 'g3', 'g3', 'g3', 'g6']);
    expect(replies.map((r) => r.full)).toEqual([false, false, true, false, false, true, false]);
    expect(await storedKeys()).toEqual(
      [`${base}:open`, `${base}:open:items`, `${base}:closed`, `${base}:closed:expiry`].sort(),
    );
    expect(await redis.hget(`${base}:open`, 'runId')).toBe('g6');
    expect(await redis.lrange(`${base}:open:items`, 0, -1)).toEqual(['item-6']);
    expect((await redis.hkeys(`${base}:closed`)).sort()).toEqual(['g0', 'g3']);
    const expiry = await redis.zrange(`${base}:closed:expiry`, 0, -1, 'WITHSCORES');
    expect(expiry).toEqual(['g0', String(replies[0].now + 90_000), 'g3', String(replies[3].now + 90_000)]);
    for (const part of ['open', 'open:items', 'closed', 'closed:expiry']) {
      const ttl = await redis.pttl(`${base}:${part}`);
      expect({ part, ok: ttl > 80_000 && ttl <= 90_000 }).toEqual({ part, ok: true });
    }
    // Starts never extend an open gather's keys; a debounce keeps one item.
    const debounce = { mode: 'last', periodMs: 60_000, maxWaitMs: 120_000, ttlMs: 5_000 } as const;
    await store.gather('r', 'd', 'd0', 'a', debounce);
    await store.gather('r', 'd', 'd1', 'b', debounce);
    const dBase = `${prefix}:{${keyTag('r', 'd')}}`;
    expect(await redis.lrange(`${dBase}:open:items`, 0, -1)).toEqual(['b']);
    expect(await redis.pttl(`${dBase}:open:items`)).toBeLessThanOrEqual(5_000);
    expect(await redis.pttl(`${dBase}:open`)).toBeLessThanOrEqual(5_000);
  });

  it('(c) sweeps closed gathers past their ttl when another closes, and keeps items byte for byte', async () => {
    const base = `${prefix}:{${keyTag('r', 'k')}}`;
    const short = { mode: 'all', maxWaitMs: 60_000, maxSize: 1, ttlMs: 100 } as const;
    for (let i = 0; i < 5; i++) await store.gather('r', 'k', `old-${i}`, `o${i}`, short);
    expect(await redis.zcard(`${base}:closed:expiry`)).toBe(5);
    const until = (await store.now()) + 150;
    while ((await store.now()) <= until) await new Promise((resolve) => setTimeout(resolve, 20));
    const item = JSON.stringify({ text: 'ключ {é} \u0000 \n', n: [1, 2] }) + '\u0000\u00ff';
    await store.gather('r', 'k', 'new', item, { ...short, ttlMs: 60_000 });
    expect(await redis.hkeys(`${base}:closed`)).toEqual(['new']);
    expect(await redis.zrange(`${base}:closed:expiry`, 0, -1)).toEqual(['new']);
    expect(await store.take('r', 'k', 'new')).toEqual({ due: true, items: [item] });
    expect(await store.take('r', 'k', 'old-0')).toBeUndefined();
  });

  it('reads the time from Redis: now() is TIME, and throttle windows and due times are Redis time', async () => {
    const time = () => redisTimeMs(redis);
    const before = await time();
    const now = await store.now();
    const reserved = await store.reserveStart('r', 'k', 1, 1000);
    const gathered = await store.gather('r', 'k', 'g', 'x', { mode: 'all', maxWaitMs: 500, maxSize: 5, ttlMs: 5000 });
    const after = await time();
    for (const t of [now, reserved.now, reserved.startAt, gathered.now]) {
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(after);
    }
    expect(gathered.dueAt).toBe(gathered.now + 500);
  });

  it('refuses invalid arguments before sending anything (RangeError), as the coordination store does', async () => {
    const client = newClient();
    const own = new RedisFlowStore(client, { keys });
    const spec = { mode: 'all', maxWaitMs: 1000, maxSize: 2, ttlMs: 1000 } as const;
    const sent = await monitor.commandsOf(client, async () => {
      await expect(own.enter('r', 'k', 'a', 0, 10)).rejects.toThrow(RangeError);
      await expect(own.enter('r', 'k', 'a', 1.5, 10)).rejects.toThrow(RangeError);
      await expect(own.enter('r', 'k', 'a', 1, 0)).rejects.toThrow(RangeError);
      await expect(own.enter('r', 'k', '', 1, 10)).rejects.toThrow(RangeError);
      await expect(own.leave('r', 'k', 'a', -1)).rejects.toThrow(RangeError);
      await expect(own.inspect('r', 'k', -1)).rejects.toThrow(RangeError);
      await expect(own.keys('r', 0)).rejects.toThrow(RangeError);
      await expect(own.prune('r', 'k', -5)).rejects.toThrow(RangeError);
      await expect(own.reserveStart('r', 'k', 0, 1000)).rejects.toThrow(RangeError);
      await expect(own.reserveStart('r', 'k', 1, 0)).rejects.toThrow(RangeError);
      await expect(own.gather('r', 'k', 'g', 'x', { ...spec, maxSize: 0 })).rejects.toThrow(RangeError);
      await expect(own.gather('r', 'k', 'g', 'x', { ...spec, maxWaitMs: 0 })).rejects.toThrow(RangeError);
      await expect(own.gather('r', 'k', 'g', 'x', { ...spec, ttlMs: -1 })).rejects.toThrow(RangeError);
      await expect(
        own.gather('r', 'k', 'g', 'x', { mode: 'last', maxWaitMs: 1000, ttlMs: 1000 }), // no periodMs
      ).rejects.toThrow(RangeError);
      await expect(own.gather('r', 'k', 'g', 'x', { ...spec, mode: 'first' as unknown as 'all' })).rejects.toThrow(
        RangeError,
      );
    });
    expect(sent).toEqual([]);
    // A script refusing its arguments (-2) is an internal error naming the script and the key.
    await expect(
      (own as unknown as { script(...a: unknown[]): Promise<unknown> }).script(
        'flowEnter',
        [keys.flowKey('r', 'k', 'live'), keys.flowKey('r', 'k', 'queue'), keys.flowKey('r', 'k', 'seq')],
        ['a', 0, 1],
        'r',
        'k',
      ),
    ).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringContaining("'flowEnter' (flowEnter-3.lua)") });
  });
});

// Runs after the suites above (declaration order): every test cleaned up after itself.
itLeavesNoKeysBehind();
