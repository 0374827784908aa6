/**
 * The record codec builds a decoded run, and a trace entry's arguments, by assignment instead of
 * by spreading (DD-speed22-11): what it reads back is what a spread gave, including for a stored
 * `__proto__` key, which stays an own property and never becomes a prototype.
 */
import { copyOwn } from '../../lib/core/model/json-values';
import { decodeRecord, encodeDelta, HEADER_FIELD, TRACE } from '../../lib/storage/run-record.codec';
import { makeRunState } from '../conformance/run-state.factory';

/** The fields a full write of `state` stores, as `HGETALL` gives them. */
function storedFields(state: ReturnType<typeof makeRunState>): Record<string, string> {
  const { set } = encodeDelta(state, undefined, 10_000_000);
  const fields: Record<string, string> = {};
  for (let i = 0; i < set.length; i += 2) fields[set[i]] = set[i + 1];
  return fields;
}

describe('copyOwn', () => {
  it('copies own enumerable properties as a spread does, later ones added fast', () => {
    const source = { a: 1, b: { c: 2 } };
    const copy = copyOwn<Record<string, unknown>>({}, source);
    expect(copy).toEqual({ a: 1, b: { c: 2 } });
    expect(copy).not.toBe(source);
    expect(copy.b).toBe(source.b); // shallow, as a spread
    copy.d = 3;
    expect(source).toEqual({ a: 1, b: { c: 2 } });
    expect(copyOwn({ x: 1 }, undefined)).toEqual({ x: 1 });
  });

  it('copies an own __proto__ key (as JSON.parse makes one) as an own property, never as the prototype', () => {
    const parsed = JSON.parse('{"__proto__":{"isAdmin":true},"a":1}') as object;
    const copy = copyOwn<Record<string, unknown>>({}, parsed);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['__proto__', 'a']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ isAdmin: true });
  });
});

describe('decodeRecord builds the run as a spread of its header did', () => {
  it('reads back the state it wrote, its collections its own', () => {
    const state = makeRunState();
    const { state: read } = decodeRecord(state.runId, storedFields(state));
    expect(read).toEqual(state);
    const again = decodeRecord(state.runId, storedFields(state)).state;
    expect(again.results).not.toBe(read.results);
    expect(again.trace).not.toBe(read.trace);
  });

  it('a header with a __proto__ key keeps it as an own property; the run keeps Object.prototype', () => {
    const state = makeRunState();
    const fields = storedFields(state);
    const header = JSON.parse(fields[HEADER_FIELD]) as Record<string, unknown>;
    fields[HEADER_FIELD] = JSON.stringify(header).replace(/^\{/, '{"__proto__":{"polluted":true},');
    const { state: read } = decodeRecord(state.runId, fields);
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
    expect((read as unknown as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(read, '__proto__')).toBe(true);
    expect(read.inputs).toEqual(state.inputs);
  });

  it("a trace entry's referenced arguments are put back beside its own, a __proto__ argument kept as its own", () => {
    const state = makeRunState();
    const fields = storedFields(state);
    fields[`${TRACE}5`] = JSON.stringify([
      'run',
      'charge',
      state.updatedAt,
      { attempt: 2, arguments: { __proto__: 'x', cents: 5 }, refs: { reservation: 'r:reserve' } },
    ]).replace('"arguments":{"cents":5}', '"arguments":{"__proto__":"x","cents":5}');
    const { state: read } = decodeRecord(state.runId, fields);
    const entry = read.trace[read.trace.length - 1] as unknown as Record<string, unknown>;
    expect(entry).toMatchObject({ type: 'run', step: 'charge', attempt: 2 });
    expect(entry.refs).toBeUndefined();
    const args = entry.arguments as Record<string, unknown>;
    expect(args.reservation).toBe(read.results.reserve);
    expect(args.cents).toBe(5);
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(args, '__proto__')?.value).toBe('x');
  });
});
