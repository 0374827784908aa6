import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigurationError, type CipherContext, type InputCipher } from '../core';

/** Options of {@link createAesGcmInputCipher}. */
export interface AesGcmInputCipherOptions {
  /**
   * Keys by id: 32 random bytes each, as a Buffer or base64. Ids are letters, digits, `_` and `-`.
   * Keep a key here while any stored run may still hold values it encrypted (`contextTtlMs`).
   */
  keys: Readonly<Record<string, Buffer | string>>;
  /** The id of the key new values are encrypted with; the others only decrypt (rotation). */
  current: string;
}

const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * An {@link InputCipher} with AES-256-GCM from `node:crypto`: a random 96-bit IV per value, the
 * value's run id and field as additional data (a ciphertext moved to another run or field does not
 * decrypt), and the key id stored with each value, so keys rotate by adding a new `current` key
 * and keeping the old ones until the runs they encrypted have expired.
 *
 * @example
 * ReactorModule.forRootAsync({
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({
 *     redis: { url: config.getOrThrow('REDIS_URL') },
 *     inputCipher: createAesGcmInputCipher({
 *       keys: { k2: config.getOrThrow('REACTOR_KEY_K2'), k1: config.getOrThrow('REACTOR_KEY_K1') },
 *       current: 'k2',
 *     }),
 *   }),
 * });
 * @throws ConfigurationError for a key that is not 32 bytes, a bad key id, or an unknown `current`.
 */
export function createAesGcmInputCipher(options: AesGcmInputCipherOptions): InputCipher {
  const keys = new Map<string, Buffer>();
  for (const [id, raw] of Object.entries(options?.keys ?? {})) {
    if (!KEY_ID.test(id)) {
      throw new ConfigurationError(
        `inputCipher key id '${id}' must be 1 to 64 letters, digits, '_' or '-'.`,
        'inputCipher.keys',
      );
    }
    const key = typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw;
    if (!Buffer.isBuffer(key) || key.length !== 32) {
      throw new ConfigurationError(
        `inputCipher key '${id}' must be 32 bytes (a Buffer, or 44 characters of base64: ` +
          "crypto.randomBytes(32).toString('base64')).",
        'inputCipher.keys',
      );
    }
    keys.set(id, key);
  }
  const current = options?.current;
  const currentKey = keys.get(current);
  if (!currentKey) {
    throw new ConfigurationError(
      `inputCipher current key '${String(current)}' is not one of the keys (${[...keys.keys()].join(', ') || 'none'}).`,
      'inputCipher.current',
    );
  }
  const aad = (context: CipherContext) => Buffer.from(`${context.runId}\n${context.field}`);
  return {
    encrypt(plaintext: string, context: CipherContext): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', currentKey, iv);
      cipher.setAAD(aad(context));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [current, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(
        '.',
      );
    },
    decrypt(ciphertext: string, context: CipherContext): string {
      const [id, iv, tag, body, extra] = ciphertext.split('.');
      if (body === undefined || extra !== undefined) throw new Error('not a value of this cipher');
      const key = keys.get(id);
      if (!key) throw new Error(`key '${id}' is not configured`);
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAAD(aad(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}
