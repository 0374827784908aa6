/**
 * The values a run stores (inputs, step results and arguments, its value) are JSON, and a step must
 * see the same value on every attempt, in the caller and after a worker resumes the run. JSON
 * would turn some values into others without a word (a Date into a string, a Map or Set into `{}`,
 * NaN into null, an `undefined` array element into null) or drop them (functions, symbols), so
 * those are refused here, naming where they are. `undefined` object properties are left out, as
 * JSON does (documented). Class instances are stored as their JSON (their own fields): after a
 * resume they are plain objects.
 */

/** How deep the check looks into nested values. */
const MAX_DEPTH = 64;

/** Where the first value JSON cannot keep as it is sits in `value` (`.order.createdAt: a Date`), or undefined. */
export function jsonProblem(value: unknown, path = '', depth = 0): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return undefined;
    case 'number':
      return Number.isFinite(value)
        ? undefined
        : `${path || 'the value'}: ${String(value)} (JSON keeps no NaN or Infinity)`;
    case 'bigint':
      return `${path || 'the value'}: a BigInt (store it as a string)`;
    case 'function':
    case 'symbol':
      return `${path || 'the value'}: a ${typeof value}`;
  }
  // Past this depth (or in a cycle) the check stops; JSON.stringify has its own say there.
  if (value === null || depth > MAX_DEPTH) return undefined;
  if (value instanceof Date) return `${path || 'the value'}: a Date (store it as an ISO string)`;
  if (value instanceof Map) return `${path || 'the value'}: a Map (store it as an object or an array of pairs)`;
  if (value instanceof Set) return `${path || 'the value'}: a Set (store it as an array)`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item === undefined) return `${path}[${i}]: undefined (JSON makes it null)`;
      const problem = jsonProblem(item, `${path}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  // An object with its own toJSON says how it is stored.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
  for (const key in value as Record<string, unknown>) {
    const problem = jsonProblem((value as Record<string, unknown>)[key], `${path}.${key}`, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * `value` without the `undefined` properties of its plain objects, at any depth, as JSON stores it:
 * a step then gets the same value in the caller and in a worker that read it back (where JSON has
 * left such keys out). One pass that copies only what holds one (the common case is a scan, not a
 * copy: `value` itself comes back); class instances and `undefined` array elements are left as
 * they are (the latter are refused on store).
 */
export function withoutUndefinedProperties<T>(value: T, depth = 0): T {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const kept = withoutUndefinedProperties(item, depth + 1);
      if (kept !== item) (copy ??= value.slice())[i] = kept;
    }
    return (copy ?? value) as T;
  }
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const item = (value as Record<string, unknown>)[keys[i]];
    const kept = item === undefined ? undefined : withoutUndefinedProperties(item, depth + 1);
    if (item !== undefined && kept === item) continue;
    // The first property to change: copy the ones before it as they are, the rest as they come.
    const out: Record<string, unknown> = {};
    for (let j = 0; j < i; j++) out[keys[j]] = (value as Record<string, unknown>)[keys[j]];
    if (kept !== undefined) out[keys[i]] = kept;
    for (let j = i + 1; j < keys.length; j++) {
      const rest = (value as Record<string, unknown>)[keys[j]];
      if (rest !== undefined) out[keys[j]] = withoutUndefinedProperties(rest, depth + 1);
    }
    return out as T;
  }
  return value;
}
