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

/** Whether `value` holds an `undefined` property in a plain object or array, at any depth. */
function holdsUndefined(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return false;
  if (Array.isArray(value)) return value.some((v) => holdsUndefined(v, depth + 1));
  if (!isPlainObject(value)) return false;
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || holdsUndefined(item, depth + 1)) return true;
  }
  return false;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * `value` without the `undefined` properties of its plain objects, at any depth, as JSON stores it:
 * a step then gets the same value in the caller and in a worker that read it back (where JSON has
 * left such keys out). Copies only what holds one (the common case is a scan, not a copy); class
 * instances and `undefined` array elements are left as they are (the latter are refused on store).
 */
export function withoutUndefinedProperties<T>(value: T, depth = 0): T {
  if (!holdsUndefined(value, depth)) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => withoutUndefinedProperties(v, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value as object)) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) out[key] = withoutUndefinedProperties(item, depth + 1);
  }
  return out as T;
}
