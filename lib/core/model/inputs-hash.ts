import { createHash } from 'node:crypto';

/**
 * The hash an idempotency key's run keeps of its validated inputs, so that a later call with the
 * key and other inputs is refused (`IDEMPOTENCY_CONFLICT`) instead of replaying a run it did not
 * ask for. SHA-256 of the run id (a salt: equal inputs of two runs hash apart) and the inputs'
 * canonical JSON (object keys sorted, `undefined` properties left out, as JSON leaves them). Never
 * the inputs themselves: a run with `encryptInputs` or redacted inputs stores no plaintext for it.
 * Undefined when the inputs have no JSON form (such a run fails on its inputs anyway).
 */
export function inputsHash(runId: string, inputs: Record<string, unknown>): string | undefined {
  let json: string | undefined;
  try {
    json = canonicalJson(inputs, 0);
  } catch {
    return undefined;
  }
  if (json === undefined) return undefined;
  return createHash('sha256').update(runId).update('\u0000').update(json).digest('hex');
}

const MAX_DEPTH = 256;

function canonicalJson(value: unknown, depth: number): string | undefined {
  if (depth > MAX_DEPTH) throw new RangeError('nested too deep');
  if (value === null || typeof value !== 'object') {
    return JSON.stringify(value) as string | undefined;
  }
  const withToJson = value as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return canonicalJson(withToJson.toJSON(), depth + 1);
  if (Array.isArray(value)) {
    return `[${value.map((item) => canonicalJson(item, depth + 1) ?? 'null').join(',')}]`;
  }
  const parts: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const item = canonicalJson((value as Record<string, unknown>)[key], depth + 1);
    if (item !== undefined) parts.push(`${JSON.stringify(key)}:${item}`);
  }
  return `{${parts.join(',')}}`;
}
