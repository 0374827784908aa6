import { RedisReactorStorage } from '../../lib/storage/redis/redis-reactor.storage';
import { RedisKeys } from '../../lib/storage/redis/redis.keys';
import { RedisRunEventBus } from '../../lib/storage/redis/redis-run-events';
import { describeRunEventBusConformance } from '../conformance/run-events.conformance';
import { makeRunState, newRunId, T0 } from '../conformance/run-state.factory';
import { cleanupPrefix, redisUrl } from '../setup/redis';
import { redisSpecFile } from '../support/redis-spec-file';
import { keySlot } from './key-slot';
import { RedisMonitor } from './redis-monitor';

const { redis, filePrefix, nextPrefix, client: newClient, itLeavesNoKeysBehind } = redisSpecFile('redis-run-events');

/** Two buses (two processes: a connection each) under a fresh prefix per test. */
describeRunEventBusConformance('redis', async ({ retentionMs, maxLen }) => {
  const prefix = nextPrefix();
  const keys = new RedisKeys({ prefix });
  const own = newClient();
  const otherConnection = newClient();
  const bus = new RedisRunEventBus(own, { keys, retentionMs, maxLen });
  const other = new RedisRunEventBus(otherConnection, { keys, retentionMs, maxLen });
  return {
    bus,
    other,
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    cleanup: async () => {
      await bus.close();
      await other.close();
      await cleanupPrefix(redis, `${prefix}:`);
    },
  };
});

describe('RedisRunEventBus: keys, round trips, TTL and the subscriber connection (and the storage’s announced wake-up)', () => {
  const prefix = `${filePrefix}:own`;
  const keys = new RedisKeys({ prefix });
  let monitor: RedisMonitor;

  beforeAll(async () => {
    monitor = await RedisMonitor.start(redisUrl());
  });
  afterAll(async () => {
    monitor.close();
    await cleanupPrefix(redis, `${prefix}:`);
  });

  it('keeps a run’s log in the run’s slot, named after the run record', () => {
    const runId = 'r-1';
    expect(keys.runEventsKey(runId)).toBe(`${keys.runKey(runId)}:events`);
    expect(keySlot(keys.runEventsKey(runId))).toBe(keySlot(keys.runKey(runId)));
    expect(keySlot(keys.runEventsKey(`${runId}/child`))).toBe(keySlot(keys.runKey(runId)));
    expect(keys.runEventsChannel(runId)).toBe(keys.runEventsKey(runId));
  });

  it('appends with one script (XADD MAXLEN ~, PEXPIRE, PUBLISH) on one key, signals with one PUBLISH, reads with one XRANGE', async () => {
    const client = newClient();
    const bus = new RedisRunEventBus(client, { keys, retentionMs: 30_000, maxLen: 500 });
    const runId = newRunId();
    const event = { type: 'run.started' as const, runId, reactorName: 'r', at: T0 };
    await bus.append(event); // defines the script
    const append = await monitor.commandsOf(client, () => bus.append(event));
    expect(append.map((c) => c[0].toLowerCase())).toEqual(['evalsha']);
    expect(append[0].slice(2, 4)).toEqual(['1', keys.runEventsKey(runId)]);
    const signal = await monitor.commandsOf(client, () => bus.signal(runId));
    expect(signal).toEqual([['publish', keys.runEventsChannel(runId), 'settled']]);
    const read = await monitor.commandsOf(client, () => bus.read(runId, { limit: 5 }));
    expect(read).toEqual([['xrange', keys.runEventsKey(runId), '-', '+', 'COUNT', '5']]);
    const ttl = await redis.pttl(keys.runEventsKey(runId));
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
    expect(await redis.xlen(keys.runEventsKey(runId))).toBe(2);
    await bus.close();
  });

  it('subscribes a run’s channel once for all its listeners in this process, and unsubscribes with the last', async () => {
    const client = newClient();
    const bus = new RedisRunEventBus(client, { keys });
    const runId = newRunId();
    const off1 = await bus.subscribe(runId, () => undefined);
    const off2 = await bus.subscribe(runId, () => undefined);
    expect(bus.subscribedChannels).toBe(1);
    const numsub = async () => (await redis.pubsub('NUMSUB', keys.runEventsChannel(runId)))[1];
    expect(await numsub()).toBe(1);
    off1();
    expect(bus.subscribedChannels).toBe(1);
    off2();
    expect(bus.subscribedChannels).toBe(0);
    for (let i = 0; i < 50 && (await numsub()) !== 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await numsub()).toBe(0);
    await bus.close();
    await bus.close();
    await expect(bus.subscribe(runId, () => undefined)).rejects.toThrow(/closed/);
  });

  it('skips an entry that is not one of its own', async () => {
    const bus = new RedisRunEventBus(redis, { keys });
    const runId = newRunId();
    await redis.xadd(keys.runEventsKey(runId), '*', 'x', '1');
    await redis.xadd(keys.runEventsKey(runId), '*', 'e', '{not json');
    await bus.append({ type: 'run.started', runId, reactorName: 'r', at: T0 });
    expect((await bus.read(runId)).map((e) => e.event.type)).toEqual(['run.started']);
  });

  it('a terminal or paused save publishes `settled` on the run’s channel from its script; a running one, or a keyPrefix connection, does not', async () => {
    const client = newClient();
    const storage = new RedisReactorStorage(client, { keys });
    expect(storage.announcesSettled).toBe(true);
    const bus = new RedisRunEventBus(newClient(), { keys });
    const state = makeRunState();
    const heard: string[] = [];
    const off = await bus.subscribe(state.runId, (wakeUp) => heard.push(wakeUp));
    const publishes = (commands: string[][]) => commands.filter((c) => c[0].toLowerCase() === 'publish');

    const running = await monitor.withScriptCommands(client, prefix, () => storage.save(state));
    expect(running.sent.map((c) => c[0].toLowerCase())).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    expect(publishes(running.inside)).toEqual([]);

    state.status = 'paused';
    const paused = await monitor.withScriptCommands(client, prefix, () => storage.save(state));
    expect(paused.sent.map((c) => c[0].toLowerCase())).toEqual(['evalsha']); // no PUBLISH of its own
    expect(publishes(paused.inside)).toEqual([['PUBLISH', keys.runEventsChannel(state.runId), 'settled']]);

    state.status = 'completed';
    const completed = await monitor.withScriptCommands(client, prefix, () => storage.save(state));
    expect(publishes(completed.inside)).toEqual([['PUBLISH', keys.runEventsChannel(state.runId), 'settled']]);
    for (let i = 0; i < 100 && heard.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual(['settled', 'settled']);
    off();
    await bus.close();

    // With an ioredis keyPrefix the script's keys carry it and the bus's channels do not: the engine signals.
    const prefixed = newClient();
    (prefixed.options as { keyPrefix?: string }).keyPrefix = 'app:';
    expect(new RedisReactorStorage(prefixed, { keys }).announcesSettled).toBe(false);
  });
});

// Runs after the suites above (declaration order): every test cleaned up after itself.
itLeavesNoKeysBehind(() => cleanupPrefix(redis, `${filePrefix}:own:`));
