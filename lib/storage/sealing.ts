/**
 * Sealing: the fields of a stored run that hold inputs in clear, encrypted with the application's
 * {@link InputCipher} when the run is marked `encryptInputs`. A sealed value is `~` and the
 * ciphertext; JSON never starts with `~`, so a reader tells sealed from clear without the run's
 * flag, and a record written before encryption was turned on still reads.
 */
import { ConfigurationError, sentences, type CipherContext, type InputCipher } from '../core';

const SEALED = '~';

/** Seals and opens stored values with an optional {@link InputCipher}. */
export class Sealer {
  constructor(private readonly cipher?: InputCipher) {}

  /** Whether values can be sealed (a cipher was given). */
  get available(): boolean {
    return this.cipher !== undefined;
  }

  /**
   * `json` encrypted for `context`.
   * @throws ConfigurationError without a cipher, or when the cipher throws or returns a non-string.
   */
  seal(json: string, context: CipherContext): string {
    const cipher = this.need(context, 'write');
    let sealed: unknown;
    try {
      sealed = cipher.encrypt(json, context);
    } catch (error) {
      throw cipherFailed('encrypt', context, error);
    }
    if (typeof sealed !== 'string') throw cipherFailed('encrypt', context, new Error('encrypt returned no string'));
    return SEALED + sealed;
  }

  /**
   * The JSON of a stored value: `stored` itself when it is not sealed.
   * @throws ConfigurationError for a sealed value without a cipher, or one the cipher cannot decrypt.
   */
  open(stored: string, context: CipherContext): string {
    if (!stored.startsWith(SEALED)) return stored;
    const cipher = this.need(context, 'read');
    let json: unknown;
    try {
      json = cipher.decrypt(stored.slice(SEALED.length), context);
    } catch (error) {
      throw cipherFailed('decrypt', context, error);
    }
    if (typeof json !== 'string') throw cipherFailed('decrypt', context, new Error('decrypt returned no string'));
    return json;
  }

  private need(context: CipherContext, what: 'read' | 'write'): InputCipher {
    if (this.cipher) return this.cipher;
    const field = `Field '${context.field}' of run '${context.runId}'`;
    throw new ConfigurationError(
      (what === 'read'
        ? `${field} is stored encrypted, but this storage has no input cipher to read it.`
        : `${field} is to be stored encrypted (its reactor declares encryptInputs), but this storage has no input cipher.`) +
        ' Give every process the same inputCipher option (ReactorModule.forRoot({ inputCipher })).',
      'inputCipher',
    );
  }
}

/** A sealer without a cipher: opens clear values, refuses sealed ones. */
export const NO_SEALER = new Sealer();

function cipherFailed(what: 'encrypt' | 'decrypt', context: CipherContext, error: unknown): ConfigurationError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ConfigurationError(
    sentences(
      `The input cipher could not ${what} field '${context.field}' of run '${context.runId}': ${reason}`,
      what === 'decrypt' && 'Configure the cipher with the key the value was encrypted with.',
    ),
    'inputCipher',
  );
}
