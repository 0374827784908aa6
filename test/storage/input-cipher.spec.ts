import { randomBytes } from 'node:crypto';
import { ConfigurationError } from '../../lib/core/errors';
import { createAesGcmInputCipher } from '../../lib/storage/aes-gcm-input.cipher';
import { decodeRecord, encodeDelta } from '../../lib/storage/run-record.codec';
import { Sealer } from '../../lib/storage/sealing';
import { makeRunState } from '../conformance/run-state.factory';
import { fieldsHolding, SECRET } from '../conformance/test-cipher';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const at = { runId: 'run-1', field: 'inputs' };

describe('createAesGcmInputCipher', () => {
  const cipher = createAesGcmInputCipher({ keys: { k1 }, current: 'k1' });

  it('round-trips a value, with a fresh IV each time (the same plaintext never encrypts the same)', () => {
    const a = cipher.encrypt(`{"card":"${SECRET}"}`, at);
    const b = cipher.encrypt(`{"card":"${SECRET}"}`, at);
    expect(a).not.toContain(SECRET);
    expect(a).not.toEqual(b);
    expect(cipher.decrypt(a, at)).toBe(`{"card":"${SECRET}"}`);
    expect(a.startsWith('k1.')).toBe(true);
  });

  it('binds a value to its run and field: moved elsewhere it does not decrypt', () => {
    const sealed = cipher.encrypt('{"a":1}', at);
    expect(() => cipher.decrypt(sealed, { runId: 'run-2', field: 'inputs' })).toThrow();
    expect(() => cipher.decrypt(sealed, { runId: 'run-1', field: 'u:0' })).toThrow();
  });

  it('refuses a tampered value', () => {
    const [id, iv, tag, body] = cipher.encrypt('{"amount":100}', at).split('.');
    const flipped = Buffer.from(body, 'base64');
    flipped[0] ^= 1;
    expect(() => cipher.decrypt([id, iv, tag, flipped.toString('base64')].join('.'), at)).toThrow();
  });

  it('rotates: the new current key encrypts, the old one still decrypts what it encrypted', () => {
    const old = cipher.encrypt('{"v":"old"}', at);
    const rotated = createAesGcmInputCipher({ keys: { k2, k1: k1.toString('base64') }, current: 'k2' });
    expect(rotated.decrypt(old, at)).toBe('{"v":"old"}');
    expect(rotated.encrypt('{"v":"new"}', at).startsWith('k2.')).toBe(true);
    const retired = createAesGcmInputCipher({ keys: { k2 }, current: 'k2' });
    expect(() => retired.decrypt(old, at)).toThrow("key 'k1' is not configured");
  });

  it.each([
    [{ keys: { k1: randomBytes(16) }, current: 'k1' }, 'inputCipher.keys', /must be 32 bytes/],
    [{ keys: { 'bad id': k1 }, current: 'bad id' }, 'inputCipher.keys', /letters, digits/],
    [{ keys: { k1 }, current: 'k9' }, 'inputCipher.current', /'k9' is not one of the keys \(k1\)/],
  ])('refuses bad options with a ConfigurationError naming the option (%#)', (options, option, message) => {
    expect(() => createAesGcmInputCipher(options)).toThrow(message);
    expect(() => createAesGcmInputCipher(options)).toThrow(expect.objectContaining({ option }));
  });
});

describe('sealed run records', () => {
  const sealer = new Sealer(createAesGcmInputCipher({ keys: { k1 }, current: 'k1' }));
  const fieldsOf = (set: string[]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i < set.length; i += 2) fields[set[i]] = set[i + 1];
    return fields;
  };
  const sealedRun = () =>
    makeRunState({
      encryptInputs: true,
      inputs: { card: SECRET },
      undoStack: [{ step: 'reserve', args: { card: SECRET }, result: { reservationId: 'r-1' } }],
    });

  it('cannot be read without the cipher: a ConfigurationError that says so (not a corrupt record)', () => {
    const state = sealedRun();
    const fields = fieldsOf(encodeDelta(state, undefined, Infinity, sealer).set);
    expect(fieldsHolding(fields)).toEqual([]);
    const read = () => decodeRecord(state.runId, fields);
    expect(read).toThrow(ConfigurationError);
    expect(read).toThrow(/is stored encrypted, but this storage has no input cipher to read it/);
  });

  it('cannot be read with another key: the error names the field and run and says which key to configure', () => {
    const state = sealedRun();
    const fields = fieldsOf(encodeDelta(state, undefined, Infinity, sealer).set);
    const other = new Sealer(createAesGcmInputCipher({ keys: { k1: k2 }, current: 'k1' }));
    expect(() => decodeRecord(state.runId, fields, other)).toThrow(
      new RegExp(
        `could not decrypt field '(head|inputs|u:0)' of run '${state.runId}'.*with the key the value was encrypted with`,
      ),
    );
  });

  it('reads records in clear with a cipher configured (runs started before their reactor declared encryptInputs)', () => {
    const state = makeRunState({ inputs: { card: SECRET } });
    const clear = fieldsOf(encodeDelta(state, undefined, Infinity).set);
    expect(decodeRecord(state.runId, clear, sealer).state).toEqual(state);
  });
});
