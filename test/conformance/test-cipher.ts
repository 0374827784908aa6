import { randomBytes } from 'node:crypto';
import { createAesGcmInputCipher } from '../../lib/storage/aes-gcm-input.cipher';

/** An AES-GCM input cipher with a fresh random key (one per test file). */
export const testCipher = createAesGcmInputCipher({ keys: { t1: randomBytes(32) }, current: 't1' });

/** A value no stored field of an encrypted run may hold in clear. */
export const SECRET = 'card-4111-1111-1111-1111';

/** Fields of `fields` whose stored value holds `secret` in clear. */
export function fieldsHolding(fields: Record<string, string>, secret = SECRET): string[] {
  return Object.entries(fields)
    .filter(([, value]) => value.includes(secret))
    .map(([field]) => field);
}
