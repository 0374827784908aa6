import type { Redis } from 'ioredis';
import type { ResumeClaim } from '../../lib/core/ports';
import {
  RedisInterruptStore,
  RedisKeys,
  RedisReactorStorage,
  SCRIPT_FILES,
  type ScriptName,
} from '../../lib/storage/redis';
import { describeInterruptStoreConformance } from '../conformance/interrupt-store.conformance';
import { makeRunState, newRunId, T0 } from '../conformance/run-state.factory';
import { cleanupPrefix, redisUrl } from '../setup/redis';
import { redisSpecFile, scriptKeys } from '../support/redis-spec-file';
import { crc16, keySlot } from './key-slot';
import { RedisMonitor } from './redis-monitor';

const {
  redis,
  filePrefix,
  nextPrefix,
  client: newClient,
  itLeavesNoKeysBehind,
} = redisSpecFile('redis-interrupt-conformance');

/** A Redis interrupt store and storage under a fresh prefix per test. */
describeInterruptStoreConformance('redis', () => {
  const prefix = nextPrefix();
  const keys = new RedisKeys({ prefix });
  return {
    interrupts: new RedisInterruptStore(redis, { keys }),
    storage: new RedisReactorStorage(redis, { keys }),
    cleanup: async () => {
      await cleanupPrefix(redis, `${prefix}:`);
    },
  };
});

describe('RedisInterruptStore: keys, slots, TTLs and round trips', () => {
  const prefix = `${filePrefix}:own`;
  const keys = new RedisKeys({ prefix });
  const payload = (value: unknown): ResumeClaim => ({ kind: 'payload', payload: value, at: T0 });
  let monitor: RedisMonitor;

  beforeAll(async () => {
    monitor = await RedisMonitor.start(redisUrl());
  });
  afterAll(async () => {
    monitor.close();
    await cleanupPrefix(redis, `${prefix}:`);
  });

  const names = (commands: string[][]) => commands.map((c) => c[0].toLowerCase());

  function fresh(): { client: Redis; interrupts: RedisInterruptStore; storage: RedisReactorStorage } {
    const client = newClient();
    return {
      client,
      interrupts: new RedisInterruptStore(client, { keys }),
      storage: new RedisReactorStorage(client, { keys }),
    };
  }

  it('builds the resume hash in the run slot and the correlation keys under their own tag', () => {
    const base = keys.shardBase(keys.shardOf('r-1'));
    expect(keys.resumeKey('r-1')).toBe(`${base}:run:r-1:resume`);
    expect(keys.resumeKey('r-1/pay')).toBe(keys.resumeKey('r-1'));
    expect(keySlot(keys.resumeKey('r-1'))).toBe(keySlot(keys.runKey('r-1')));
    expect(keySlot(keys.resumeKey('r-1'))).toBe(keySlot(keys.activeIndexKeyOf('r-1')));
    expect(keys.correlationKey('approvals', 'order-1')).toBe(`${prefix}:{corr:approvals:order-1}`);
    expect(keys.correlationMailboxKey('approvals', 'order-1')).toBe(`${prefix}:{corr:approvals:order-1}:mailbox`);
    expect(keys.correlationKey('a:b', 'c')).not.toBe(keys.correlationKey('a', 'b:c'));
  });

  it.each([
    ['plain names', 'approvals', 'order-1'],
    ['braces in the reactor name', '{approvals}', 'order-1'],
    ['braces in the correlation id', 'approvals', '}{order-1}'],
    ['braces and colons in both', 'a}:{b', '{x}:{y}'],
  ])('keeps a binding and its mailbox in one slot, the one of their whole name (%s)', (_, reactor, id) => {
    const binding = keys.correlationKey(reactor, id);
    const mailbox = keys.correlationMailboxKey(reactor, id);
    const tag = `corr:${encodeURIComponent(reactor)}:${encodeURIComponent(id)}`;
    expect(binding).toBe(`${prefix}:{${tag}}`);
    expect(mailbox).toBe(`${prefix}:{${tag}}:mailbox`);
    expect(keySlot(binding)).toBe(crc16(Buffer.from(tag)) % 16384);
    expect(keySlot(mailbox)).toBe(keySlot(binding));
  });

  it('runs every operation as one command, each script on keys of one slot', async () => {
    const { client, interrupts, storage } = fresh();
    const state = makeRunState({ status: 'paused' });
    await storage.save(state);
    const root = state.runId;
    const runSlot = keySlot(keys.runKey(root));
    const reactor = '{approvals}';
    const corrSlot = keySlot(keys.correlationKey(reactor, 'order-1'));
    const retention = { retentionMs: 60_000 };
    const fieldErrors = { amount: ['must be positive'] };

    const steps: Array<[ScriptName | 'get', number, () => Promise<unknown>]> = [
      ['interruptClaim', runSlot, () => interrupts.claim(root, 'approve', payload(1), { now: T0, ...retention })],
      ['interruptClaim', runSlot, () => interrupts.claim(root, 'approve', payload(2), { now: T0, ...retention })],
      [
        'interruptReject',
        runSlot,
        () => interrupts.reject(root, 'ship', { fieldErrors, now: T0, maxAttempts: 1, ...retention }),
      ],
      ['interruptClaims', runSlot, () => interrupts.claims(root, ['approve', 'ship'], 'peek', T0)],
      ['interruptClaims', runSlot, () => interrupts.claims(root, ['approve', 'ship'], 'take', T0)],
      [
        'mailResume',
        corrSlot,
        () => interrupts.mailResume(reactor, 'order-1', 'approve', payload(3), { now: T0, ttlMs: 60_000 }),
      ],
      [
        'bindCorrelationId',
        corrSlot,
        () => interrupts.bindCorrelationId(reactor, 'order-1', root, 'approve', retention),
      ],
      ['get', corrSlot, () => interrupts.findCorrelationId(reactor, 'order-1')],
    ];
    const seen = new Set<string>();
    for (const [name, slot, action] of steps) {
      const commands = await monitor.commandsOf(client, action);
      expect({ name, count: commands.length }).toEqual({ name, count: 1 });
      if (name === 'get') {
        expect(names(commands)).toEqual(['get']);
        expect(keySlot(commands[0][1])).toBe(slot);
        continue;
      }
      expect(['eval', 'evalsha']).toContain(names(commands)[0]);
      const declared = Number(/-(\d+)\.lua$/.exec(SCRIPT_FILES[name])![1]);
      expect(scriptKeys(commands[0])).toHaveLength(declared);
      expect({ name, slots: [...new Set(scriptKeys(commands[0]).map(keySlot))] }).toEqual({ name, slots: [slot] });
      seen.add(name);
    }
    // Every interrupt script was exercised.
    const interruptScripts = [
      'interruptClaim',
      'interruptReject',
      'interruptClaims',
      'bindCorrelationId',
      'mailResume',
    ];
    expect(interruptScripts.filter((n) => !(n in SCRIPT_FILES))).toEqual([]);
    expect(interruptScripts.filter((n) => !seen.has(n))).toEqual([]);
    // Nothing to ask: no command at all.
    expect(await monitor.commandsOf(client, () => interrupts.claims(root, [], 'take', T0))).toEqual([]);
  });

  it('keeps the resume hash and the binding for their retention, and a mailbox for its longest entry', async () => {
    const storage = new RedisReactorStorage(redis, { keys });
    const interrupts = new RedisInterruptStore(redis, { keys });
    const state = makeRunState({ status: 'paused' });
    await storage.save(state);
    await interrupts.claim(state.runId, 'approve', payload(1), { now: T0, expiresAt: T0 + 10, retentionMs: 30_000 });
    const resumeTtl = await redis.pttl(keys.resumeKey(state.runId));
    expect(resumeTtl).toBeGreaterThan(25_000);
    expect(resumeTtl).toBeLessThanOrEqual(30_000);
    expect(await redis.hgetall(keys.resumeKey(state.runId))).toEqual({
      'c:approve': JSON.stringify(payload(1)),
      'exp:approve': String(T0 + 10),
    });

    const reactor = `approvals-${newRunId()}`;
    await interrupts.mailResume(reactor, 'order-1', 'approve', payload(1), { now: T0, ttlMs: 50_000 });
    await interrupts.mailResume(reactor, 'order-1', 'ship', payload(2), { now: T0, ttlMs: 1000 });
    expect(await redis.pttl(keys.correlationMailboxKey(reactor, 'order-1'))).toBeGreaterThan(45_000);
    await interrupts.bindCorrelationId(reactor, 'order-1', state.runId, 'approve', { retentionMs: 20_000 });
    const bindingTtl = await redis.pttl(keys.correlationKey(reactor, 'order-1'));
    expect(bindingTtl).toBeGreaterThan(15_000);
    expect(bindingTtl).toBeLessThanOrEqual(20_000);
    expect(await redis.hgetall(keys.correlationMailboxKey(reactor, 'order-1'))).toEqual({
      ship: JSON.stringify(payload(2)),
    });
  });

  it('stores the rejected claim byte for byte as JSON.stringify would', async () => {
    const storage = new RedisReactorStorage(redis, { keys });
    const interrupts = new RedisInterruptStore(redis, { keys });
    const state = makeRunState({ status: 'paused' });
    await storage.save(state);
    const fieldErrors = { amount: ['must be positive', 'must be "a number"'], note: [] };
    await interrupts.reject(state.runId, 'approve', { fieldErrors, now: T0 + 7, maxAttempts: 1, retentionMs: 1000 });
    expect(await redis.hget(keys.resumeKey(state.runId), 'c:approve')).toBe(
      JSON.stringify({ kind: 'rejected', fieldErrors, attempts: 1, at: T0 + 7 }),
    );
  });
});

// Runs after the suites above (declaration order): every test cleaned up after itself.
itLeavesNoKeysBehind();
