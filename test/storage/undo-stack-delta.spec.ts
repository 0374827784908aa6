/**
 * A checkpoint whose undo stack lost entries below its top and gained others (popped and pushed
 * between two writes) keeps exactly the new stack, on both storages: an entry rewritten in place
 * is not also deleted by the same write.
 */
import type { Redis } from 'ioredis';
import type { ReactorStorage } from '../../lib/core/ports/reactor-storage.port';
import { MemoryReactorStorage } from '../../lib/storage/memory';
import { RedisKeys, RedisReactorStorage } from '../../lib/storage/redis';
import { makeRunState } from '../conformance/run-state.factory';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../setup/redis';

let redis: Redis;
const prefix = uniquePrefix('undo-delta').replace(/:$/, '');

beforeAll(() => {
  redis = createTestRedis();
});
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  await redis.quit();
});

const storages: Array<[string, () => ReactorStorage]> = [
  ['memory', () => new MemoryReactorStorage()],
  ['redis', () => new RedisReactorStorage(redis, { keys: new RedisKeys({ prefix }) })],
];

describe.each(storages)('undo stack rewritten below its top (%s)', (_name, make) => {
  it('two entries popped and one pushed in one write: the stack is the new one', async () => {
    const storage = make();
    const entry = (step: string) => ({ step, args: { step }, result: `${step}-result` });
    const state = makeRunState({
      results: { a: 'a-result', b: 'b-result', c: 'c-result', x: 'x-result' },
      completed: ['a', 'b', 'c'],
      undoStack: [entry('a'), entry('b'), entry('c')],
    });
    expect(await storage.save(state)).toBe(true);
    state.undoStack = [entry('a'), entry('x')];
    state.completed = ['a', 'b', 'c', 'x']; // grew: a delta, not a whole write
    state.updatedAt += 1;
    expect(await storage.save(state)).toBe(true);
    const loaded = await storage.load(state.runId);
    expect(loaded?.undoStack.map((u) => u.step)).toEqual(['a', 'x']);
    expect(loaded?.undoStack[1]).toEqual(entry('x'));
  });
});
