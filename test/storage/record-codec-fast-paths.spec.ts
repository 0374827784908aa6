/**
 * The record codec's shortcuts on a step's checkpoint write what the general path wrote: the
 * progress (`head`) is rewritten whenever any field of it other than the status is set (each read
 * by name), names are quoted from a cache exactly as `JSON.stringify` quotes them, and an undo entry
 * without arguments is written as `JSON.stringify([step, {}])` would write it.
 */
import { decodeRecord, encodeDelta, OTHER_PROGRESS, UNDO, type Written } from '../../lib/storage/run-record.codec';
import type { RunState } from '../../lib/core/model/run-state';
import { makeRunState, T0 } from '../conformance/run-state.factory';

const MAX = 10_000_000;

/** Fields a delta sets, by name. */
function setFields(set: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i < set.length; i += 2) fields[set[i]] = set[i + 1];
  return fields;
}

/** Write `state` whole and return what is written of it. */
function writeWhole(state: RunState, stored: Record<string, string> = {}): Written {
  const delta = encodeDelta(state, undefined, MAX);
  Object.assign(stored, setFields(delta.set));
  return delta.commit();
}

describe('run record codec: a checkpoint shortcut writes what the general path wrote', () => {
  it.each(Object.keys(OTHER_PROGRESS))('rewrites the progress when only %s is set beside the status', (field) => {
    const state = makeRunState();
    const stored: Record<string, string> = {};
    const written = writeWhole(state, stored);
    expect(JSON.parse(stored.head)).toEqual({ status: 'running', updatedAt: T0 });
    // A JSON value of the field's own name, enough for the codec (it never reads inside it).
    (state as unknown as Record<string, unknown>)[field] = { marker: field };
    const delta = encodeDelta(state, written, MAX);
    const head = setFields(delta.set).head;
    expect(head).toBeDefined();
    expect(JSON.parse(head)).toMatchObject({ status: 'running', [field]: { marker: field } });
  });

  it('quotes step, argument and reference names with characters JSON escapes as JSON.stringify does', () => {
    const odd = 'ship "now"\\ \u00e9\u2028\n';
    const arg = 'line\t"1"';
    const prior = { id: 'r-1' };
    const state = makeRunState({
      results: { [odd]: prior },
      completed: [odd],
      undoStack: [{ step: odd, args: {}, result: prior }],
      attempts: { [odd]: 1, next: 2 },
      trace: [
        { type: 'run', step: odd, at: T0, attempt: 1, arguments: { [arg]: 7 } },
        { type: 'complete', step: odd, at: T0 + 1 },
        // A retry's entry is written in a field of its own, its argument a reference to the result.
        { type: 'run', step: 'next', at: T0 + 2, attempt: 2, arguments: { [arg]: prior } },
      ],
    });
    const stored: Record<string, string> = {};
    writeWhole(state, stored);
    for (const value of Object.values(stored)) expect(() => JSON.parse(value) as unknown).not.toThrow();
    expect(stored[`${UNDO}0`]).toBe(JSON.stringify([odd, {}]));
    const { state: read } = decodeRecord(state.runId, stored);
    expect(read.trace).toEqual(state.trace);
    expect(read.undoStack).toEqual(state.undoStack);
    expect(read.results).toEqual(state.results);
  });

  it('writes an undo entry with arguments, or with an empty object that is not plain, through JSON as before', () => {
    class Empty {}
    const state = makeRunState({
      undoStack: [
        { step: 'reserve', args: { order: { id: 'o-1' } }, result: { reservationId: 'r-1' } },
        { step: 'charge', args: new Empty() as Record<string, unknown>, result: null },
      ],
    });
    const stored: Record<string, string> = {};
    writeWhole(state, stored);
    expect(stored[`${UNDO}0`]).toBe(JSON.stringify(['reserve', { order: { id: 'o-1' } }]));
    expect(stored[`${UNDO}1`]).toBe(JSON.stringify(['charge', {}]));
  });
});
