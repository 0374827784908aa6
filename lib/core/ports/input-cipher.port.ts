/** Where an encrypted value is stored: what a cipher may bind its ciphertext to. */
export interface CipherContext {
  /** The run (or fan-out map) whose record holds the value. */
  readonly runId: string;
  /** Its field (`inputs`, `u:3`, `c:payment`; a map's `inputs:7`, `states:7`). */
  readonly field: string;
}

/**
 * Encrypts the stored inputs of reactors declared with `encryptInputs: true` (see
 * `ReactorModuleOptions.inputCipher`). Storage calls it for each field that holds inputs in clear:
 * the run's inputs, the arguments kept for undo, composed children's and inline map elements'
 * states, and a fan-out map's element inputs and states.
 *
 * Both methods are synchronous and on the hot path (once per field written or read): fetch keys in
 * the module's async factory, not per call. `decrypt` must return exactly what `encrypt` was given
 * for the same context, and throw when it cannot (a wrong key, a tampered value). See
 * `createAesGcmInputCipher` for one that rotates keys.
 */
export interface InputCipher {
  /** The ciphertext of `plaintext` (JSON) as a string. */
  encrypt(plaintext: string, context: CipherContext): string;
  /** The plaintext `encrypt` was given for `ciphertext` in the same context. */
  decrypt(ciphertext: string, context: CipherContext): string;
}
