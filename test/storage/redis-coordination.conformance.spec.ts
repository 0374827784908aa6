import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { RedisCoordinationStore, RedisKeys, SCRIPT_FILES, type ScriptName } from '../../lib/storage/redis';
import { resolveScriptsDir } from '../../lib/storage/redis/redis-scripts';
import { describeCoordinationStoreConformance } from '../conformance/coordination-store.conformance';
import { cleanupPrefix, redisUrl } from '../setup/redis';
import { redisSpecFile, redisTimeMs, scriptKeys, storedKeys as storedKeysUnder } from '../support/redis-spec-file';
import { crc16, keySlot } from './key-slot';
import { RedisMonitor } from './redis-monitor';

const { redis, nextPrefix, client: newClient, itLeavesNoKeysBehind } = redisSpecFile('redis-coordination-conformance');

/** A Redis coordination store under a fresh prefix per test; time is Redis's own (real short TTLs). */
describeCoordinationStoreConformance('redis', () => {
  const prefix = nextPrefix();
  return {
    store: new RedisCoordinationStore(redis, { keys: new RedisKeys({ prefix }) }),
    shortMs: 200,
    cleanup: async () => {
      await cleanupPrefix(redis, `${prefix}:`);
    },
  };
});

describe('RedisCoordinationStore: keys, slots, TTLs, time and round trips', () => {
  let monitor: RedisMonitor;
  let prefix: string;
  let keys: RedisKeys;
  let store: RedisCoordinationStore;

  beforeAll(async () => {
    monitor = await RedisMonitor.start(redisUrl());
  });
  afterAll(() => monitor.close());
  beforeEach(() => {
    prefix = nextPrefix('own');
    keys = new RedisKeys({ prefix });
    store = new RedisCoordinationStore(redis, { keys });
  });
  afterEach(async () => {
    await cleanupPrefix(redis, `${prefix}:`);
  });

  const names = (commands: string[][]) => commands.map((c) => c[0].toLowerCase());
  /** The hash tag of a primitive's keys: `<kind>:<URI-encoded name>`. */
  const tag = (kind: string, name: string) => `${kind}:${encodeURIComponent(name)}`;
  const slotOf = (kind: string, name: string) => crc16(Buffer.from(tag(kind, name))) % 16384;

  const storedKeys = () => storedKeysUnder(redis, prefix);

  /** Use every primitive once on `name`, leaving each of its keys in place. */
  async function useAll(name: string): Promise<void> {
    await store.acquireLock(name, 'owner', 60_000);
    await store.acquireSemaphore(name, 'holder', 2, 60_000);
    await store.consumeRate(name, [
      { windowMs: 60_000, limit: 5 },
      { windowMs: 3_600_000, limit: 50 },
    ]);
    await store.markPeriod(name, '2026-W20', 60_000);
    const { epoch } = await store.assignOrder(name, 60_000);
    await store.assignOrder(name, 60_000);
    await store.orderAdvance(name, 2, epoch, true, 60_000);
  }

  it.each([
    ['a plain name', 'invoices'],
    ['braces in the name', '{invoices}'],
    ['braces and colons', 'a}:{b:c}'],
    ['a name that looks like a key part', 'x}:held'],
  ])('keeps every key of a primitive under the tag of its URI-encoded name (%s)', async (_, name) => {
    await useAll(name);
    const found = await storedKeys();
    const base = (kind: string) => `${prefix}:{${tag(kind, name)}}`;
    const rate = found.filter((k) => k.startsWith(`${base('rate')}:`));
    expect(rate).toHaveLength(2);
    expect(found).toEqual(
      [
        `${base('lock')}:held`,
        `${base('lock')}:fence`,
        base('sem'),
        ...rate,
        `${base('period')}:2026-W20`,
        `${base('order')}:next`,
        `${base('order')}:last`,
        `${base('order')}:assigned`,
        `${base('order')}:failed`,
        `${base('order')}:epoch`,
      ].sort(),
    );
    for (const key of found) {
      const kind = /\{(\w+):/.exec(key)![1];
      expect({ key, slot: keySlot(key) }).toEqual({ key, slot: slotOf(kind, name) });
    }
  });

  it('runs every operation as one command, each script on keys of one slot', async () => {
    const client = newClient();
    const own = new RedisCoordinationStore(client, { keys });
    const name = 'jobs:{7}';
    const window = [{ windowMs: 60_000, limit: 10 }];
    const steps: Array<[ScriptName | 'time' | 'exists' | 'set', string | undefined, () => Promise<unknown>]> = [
      ['time', undefined, () => own.now()],
      ['lockAcquire', 'lock', () => own.acquireLock(name, 'a', 60_000)],
      ['lockAcquire', 'lock', () => own.acquireLock(name, 'b', 60_000)],
      ['lockExtend', 'lock', () => own.extendLock(name, 'a', 1, 60_000)],
      ['lockRelease', 'lock', () => own.releaseLock(name, 'a', 1)],
      ['semaphoreAcquire', 'sem', () => own.acquireSemaphore(name, 'a', 1, 60_000)],
      ['semaphoreAcquire', 'sem', () => own.acquireSemaphore(name, 'b', 1, 60_000)],
      ['semaphoreExtend', 'sem', () => own.extendSemaphore(name, 'a', 60_000)],
      ['semaphoreRelease', 'sem', () => own.releaseSemaphore(name, 'a')],
      ['rateConsume', 'rate', () => own.consumeRate(name, window)],
      ['exists', 'period', () => own.isPeriodMarked(name, 'b')],
      ['set', 'period', () => own.markPeriod(name, 'b', 60_000)],
      ['orderAssign', 'order', () => own.assignOrder(name, 60_000)],
      ['orderTurn', 'order', () => own.orderTurn(name, 1, 1, 60_000)],
      ['orderHeartbeat', 'order', () => own.orderHeartbeat(name, 1, 1)],
      ['orderAdvance', 'order', () => own.orderAdvance(name, 1, 1, false, 60_000)],
    ];
    const seen = new Set<string>();
    for (const [command, kind, action] of steps) {
      const commands = await monitor.commandsOf(client, action);
      expect({ command, count: commands.length }).toEqual({ command, count: 1 });
      if (!(command in SCRIPT_FILES)) {
        expect(names(commands)).toEqual([command]);
        if (kind) expect(keySlot(commands[0][1])).toBe(slotOf(kind, name));
        continue;
      }
      expect(['eval', 'evalsha']).toContain(names(commands)[0]);
      const declared = /-(\d+|n)\.lua$/.exec(SCRIPT_FILES[command as ScriptName])![1];
      if (declared === 'n') expect(scriptKeys(commands[0]).length).toBeGreaterThan(0);
      else expect(scriptKeys(commands[0])).toHaveLength(Number(declared));
      expect({ command, slots: [...new Set(scriptKeys(commands[0]).map(keySlot))] }).toEqual({
        command,
        slots: [slotOf(kind!, name)],
      });
      seen.add(command);
    }
    // Every coordination script was exercised.
    const coordination = Object.keys(SCRIPT_FILES).filter((n) => /^(lock|semaphore|rate|order)[A-Z]/.test(n));
    expect(coordination).toHaveLength(11);
    expect(coordination.filter((n) => !seen.has(n))).toEqual([]);
  });

  it('keeps each key for its TTL: locks, leases and marks for theirs, fence counters and epochs for 30 days', async () => {
    const day = 24 * 60 * 60 * 1000;
    const name = 'ttl';
    await useAll(name);
    const base = (kind: string) => `${prefix}:{${tag(kind, name)}}`;
    const ttl = async (key: string) => redis.pttl(key);
    const within = async (key: string, min: number, max: number) => {
      const left = await ttl(key);
      expect({ key, ok: left > min && left <= max }).toEqual({ key, ok: true });
    };
    await within(`${base('lock')}:held`, 55_000, 60_000);
    await within(`${base('lock')}:fence`, 29 * day, 30 * day);
    await within(base('sem'), 55_000, 60_000);
    await within(`${base('period')}:2026-W20`, 55_000, 60_000);
    for (const part of ['next', 'last', 'assigned', 'failed']) await within(`${base('order')}:${part}`, 55_000, 60_000);
    await within(`${base('order')}:epoch`, 29 * day, 30 * day);
    for (const key of (await storedKeys()).filter((k) => k.startsWith(`${base('rate')}:`))) {
      const windowMs = Number(key.split(':').at(-2));
      await within(key, 2 * windowMs - 5000, 2 * windowMs);
    }
    // A semaphore is kept as long as its longest lease.
    await store.acquireSemaphore(name, 'later', 2, 120_000);
    await within(base('sem'), 115_000, 120_000);
    // A lock's TTL is its latest take's.
    await store.acquireLock(name, 'owner', 5_000);
    await within(`${base('lock')}:held`, 1_000, 5_000);
  });

  it('reads the time from Redis: now() is TIME, and rate windows are indexed by it', async () => {
    const time = () => redisTimeMs(redis);
    const before = await time();
    const now = await store.now();
    const after = await time();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);

    const windowMs = 1000;
    const t0 = await time();
    await store.consumeRate('indexed', [{ windowMs, limit: 1 }]);
    const t1 = await time();
    const [key] = await storedKeys();
    expect(key).toMatch(new RegExp(`^${escape(`${prefix}:{rate:indexed}:${windowMs}:`)}\\d+$`));
    const index = Number(key.split(':').at(-1));
    expect(index).toBeGreaterThanOrEqual(Math.floor(t0 / windowMs));
    expect(index).toBeLessThanOrEqual(Math.floor(t1 / windowMs));
  });

  /** Every command `client` sent, and every command its scripts ran, while `action` ran. */
  const withScriptCommands = (client: Redis, action: () => Promise<unknown>) =>
    monitor.withScriptCommands(client, prefix, action);

  it('rateConsume declares every key it touches in KEYS (issue 26): the GET, INCR and PEXPIRE keys are all declared', async () => {
    const client = newClient();
    const own = new RedisCoordinationStore(client, { keys });
    const windows = [
      { windowMs: 60_000, limit: 2 },
      { windowMs: 1_000, limit: 5 },
    ];
    for (let i = 0; i < 3; i++) {
      const { sent, inside } = await withScriptCommands(client, () => own.consumeRate('declared', windows));
      expect(sent).toHaveLength(1);
      const declared = new Set(scriptKeys(sent[0]));
      const touched = inside.filter((c) => !['time'].includes(c[0].toLowerCase())).map((c) => c[1]);
      expect(touched.length).toBeGreaterThan(0);
      expect(touched.filter((k) => !declared.has(k))).toEqual([]);
      expect([...new Set([...declared].map(keySlot))]).toEqual([slotOf('rate', 'declared')]);
    }
    // The third use is refused by the minute's window, as before.
    expect(await own.consumeRate('declared', windows)).toMatchObject({ allowed: false, window: 0 });
    // No script of the coordination store builds a key: `..` never meets a redis.call's key.
    const lua = readFileSync(join(resolveScriptsDir(), SCRIPT_FILES.rateConsume), 'utf8');
    for (const call of lua.match(/redis\.call\([^)]*\)/g) ?? []) {
      expect({ call, keyFromKeys: /^redis\.call\("(TIME|[A-Z]+", KEYS\[[^\]]+\](\[\d\])?)/.test(call) }).toEqual({
        call,
        keyFromKeys: true,
      });
    }
  });

  it('rateConsume on a process whose clock is an hour off: a miss touches nothing, teaches the offset, and counts in the window of Redis time', async () => {
    const client = newClient();
    const own = new RedisCoordinationStore(client, { keys });
    const real = Date.now.bind(Date);
    const skew = jest.spyOn(Date, 'now').mockImplementation(() => real() + 3_600_000);
    try {
      const windows = [{ windowMs: 1_000, limit: 1 }];
      const first = await withScriptCommands(client, () => own.consumeRate('skewed', windows));
      expect(first.sent).toHaveLength(2); // the miss, then the call with the learned offset
      const t = await own.now();
      const [key] = await storedKeys();
      const index = Number(key.split(':').at(-1));
      expect(Math.abs(index - Math.floor(t / 1_000))).toBeLessThanOrEqual(1);
      // Learned: one round trip from now on.
      const second = await withScriptCommands(client, () =>
        own.consumeRate('skewed', [{ windowMs: 60_000, limit: 1 }]),
      );
      expect(second.sent).toHaveLength(1);
    } finally {
      skew.mockRestore();
    }
  });

  it('keeps only the epoch of an ordered lock once it drained', async () => {
    const { epoch } = await store.assignOrder('drain', 60_000);
    await store.assignOrder('drain', 60_000);
    await store.orderAdvance('drain', 1, epoch, true, 60_000);
    await store.orderAdvance('drain', 2, epoch, false, 60_000);
    expect(await storedKeys()).toEqual([`${prefix}:{order:drain}:epoch`]);
    expect(await redis.get(`${prefix}:{order:drain}:epoch`)).toBe(String(epoch));
  });

  it('deletes a lock released to zero but keeps its fence counter', async () => {
    const taken = await store.acquireLock('free', 'a', 60_000);
    if (!taken.acquired) throw new Error('refused');
    await store.releaseLock('free', 'a', taken.fence);
    expect(await storedKeys()).toEqual([`${prefix}:{lock:free}:fence`]);
    expect(await redis.get(`${prefix}:{lock:free}:fence`)).toBe(String(taken.fence));
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Runs after the suites above (declaration order): every test cleaned up after itself.
itLeavesNoKeysBehind();
