/**
 * The values a run stores (inputs, step results and arguments, payloads, its value) are JSON, and a
 * step must see the same value on every attempt, in the caller and after a worker resumes the run.
 * JSON would turn some values into others without a word, so those are refused ({@link jsonProblem}),
 * naming where they are: a Date (a string), a Map, Set, RegExp, Error, Promise, ArrayBuffer or
 * WeakMap (`{}`), a typed array or Buffer (an object of indexes), a boxed primitive (the primitive),
 * NaN and Infinity (null), a BigInt (throws), functions and symbols (left out), an `undefined` or
 * missing array element (null), an array's named properties (left out), nesting deeper than
 * {@link MAX_VALUE_DEPTH} and cycles. What JSON changes and the store accepts, `undefined` object
 * properties (left out) and `-0` (0), is applied on every path by
 * {@link withoutUndefinedProperties}. Class instances are stored as their own fields (plain objects
 * after a resume); one with a `toJSON` as what that returns.
 *
 * {@link jsonProblem} is one walk, on the hot path of every step result: for objects and primitives
 * it allocates nothing unless it finds a problem (the path is built as the walk unwinds); a plain
 * object costs a `for…in` and an array one `Object.keys` (its one allocation, which also bounds a
 * sparse array's cost by its real size, not its length).
 */

/** How deep a stored value may nest; deeper values (and cycles) are refused. */
export const MAX_VALUE_DEPTH = 256;

/** The object found at {@link MAX_VALUE_DEPTH}, to tell a cycle from a deep value as the walk unwinds. */
let deepest: object | undefined;

/**
 * Where the first value JSON would not give back as it is sits in `value`, and what it is
 * (`order.createdAt: a Date (store it as an ISO string)`), or undefined when there is none. `path`
 * names `value` itself (`inputs.order`); without one the problem's path starts at `.` or `[`, and a
 * problem with `value` itself is `the value: …`. Getters and proxies that throw are a problem too
 * (`…: reading it threw: <message>`), never a throw.
 */
export function jsonProblem(value: unknown, path = ''): string | undefined {
  deepest = undefined;
  const problem = problemAt(value, 0);
  deepest = undefined;
  if (problem === undefined) return undefined;
  const out = problem.startsWith(':') ? `${path || 'the value'}${problem}` : `${path}${problem}`;
  // A path hundreds of levels deep is cut in its middle; its start and the problem are kept.
  return out.length > MAX_PROBLEM_CHARS ? `${out.slice(0, 100)}…${out.slice(-(MAX_PROBLEM_CHARS - 100))}` : out;
}

/** How long a problem's text may be (a deep path is cut). */
const MAX_PROBLEM_CHARS = 300;

/** The problem of `value` at `depth` as `<path below>: <what>`, or undefined. */
function problemAt(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return undefined;
    case 'number':
      // Finite numbers only (`-0` is kept: it is made 0 with the undefined properties).
      return value - value === 0 ? undefined : `: ${String(value)} (JSON keeps no NaN or Infinity)`;
    case 'bigint':
      return ': a BigInt (store it as a string)';
    case 'function':
    case 'symbol':
      return `: a ${typeof value} (JSON leaves it out)`;
  }
  if (value === null) return undefined;
  if (depth >= MAX_VALUE_DEPTH) {
    deepest = value as object;
    return `: nested deeper than ${MAX_VALUE_DEPTH} levels (store a flatter value)`;
  }
  let isArray: boolean;
  try {
    isArray = Array.isArray(value); // throws for a revoked proxy
  } catch (error) {
    return threw(error);
  }
  const problem = isArray ? arrayProblem(value as readonly unknown[], depth) : objectProblem(value as object, depth);
  // Unwinding from the depth limit: an ancestor that is the object found there is a cycle.
  return deepest !== undefined && problem !== undefined && value === deepest
    ? ': a cycle (it holds itself; store ids instead of references)'
    : problem;
}

function arrayProblem(array: readonly unknown[], depth: number): string | undefined {
  let keys: string[];
  let length: number;
  try {
    length = array.length;
    keys = Object.keys(array);
  } catch (error) {
    return threw(error);
  }
  // Indexes come first in `Object.keys`: fewer keys than elements is a hole, more a named property.
  if (keys.length !== length) return arrayShapeProblem(keys, length);
  let i = 0;
  try {
    for (; i < length; i++) {
      const item: unknown = array[i];
      if (item === undefined) return `[${i}]: undefined (JSON makes it null)`;
      if (typeof item === 'string' || typeof item === 'boolean' || item === null) continue;
      if (typeof item === 'number' && item - item === 0) continue;
      const problem = problemAt(item, depth + 1);
      if (problem !== undefined) return `[${i}]${problem}`;
    }
  } catch (error) {
    return `[${i}]${threw(error)}`;
  }
  return undefined;
}

/**
 * The first hole or named property of an array whose key count is not its length: the first key
 * that is not the next index is a hole there while indexes remain, else the first named property.
 */
function arrayShapeProblem(keys: readonly string[], length: number): string {
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] === String(i)) continue;
    if (i < length) return `[${i}]: a hole (a sparse array; JSON makes it null)`;
    return `${segment(keys[i])}: a named property of an array (JSON keeps only its elements; store an object)`;
  }
  return `[${keys.length}]: a hole (a sparse array; JSON makes it null)`;
}

function objectProblem(value: object, depth: number): string | undefined {
  let key: string | undefined;
  try {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const kind = builtinKind(value);
      if (kind !== undefined) return kind;
      // A class instance with a toJSON says how it is stored.
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
    }
    for (key in value) {
      const item: unknown = (value as Record<string, unknown>)[key];
      if (typeof item === 'string' || typeof item === 'boolean' || item === null || item === undefined) continue;
      if (typeof item === 'number' && item - item === 0) continue;
      const problem = problemAt(item, depth + 1);
      if (problem !== undefined) return `${segment(key)}${problem}`;
    }
  } catch (error) {
    return `${key === undefined ? '' : segment(key)}${threw(error)}`;
  }
  return undefined;
}

/** What JSON makes of a built-in object that is not plain data, or undefined for other objects. */
function builtinKind(value: object): string | undefined {
  const tag = Object.prototype.toString.call(value);
  switch (tag) {
    case '[object Object]':
      return undefined;
    case '[object Date]':
      return ': a Date (store it as an ISO string)';
    case '[object Map]':
      return ': a Map (store it as an object or an array of pairs)';
    case '[object Set]':
      return ': a Set (store it as an array)';
    case '[object RegExp]':
      return ': a RegExp (JSON makes it {}; store its source as a string)';
    case '[object Error]':
      return ': an Error (JSON makes it {}; store its message)';
    case '[object Promise]':
      return ': a Promise (JSON makes it {}; await it first)';
    case '[object Number]':
    case '[object String]':
    case '[object Boolean]':
    case '[object BigInt]':
    case '[object Symbol]':
      return `: a boxed ${tag.slice(8, -1)} (JSON unboxes it; store the primitive)`;
    case '[object ArrayBuffer]':
    case '[object SharedArrayBuffer]':
      return `: an ${tag.slice(8, -1)} (JSON makes it {}; store it as a base64 string)`;
  }
  if (ArrayBuffer.isView(value)) {
    return `: a ${tag.slice(8, -1)} (JSON makes it an object of indexes; store it as a base64 string or an array)`;
  }
  if (value instanceof Error) return ': an Error (JSON makes it {}; store its message)';
  // WeakMap, WeakSet, WeakRef, iterators, generators...: no data JSON can reach.
  if (/^\[object (Weak|.*Iterator|Generator|Async)/.test(tag))
    return `: a ${tag.slice(8, -1)} (JSON makes it {}; store plain data)`;
  return undefined;
}

function threw(error: unknown): string {
  const message = (error as Error | undefined)?.message;
  return `: reading it threw: ${typeof message === 'string' ? message : String(error)}`;
}

/** `.key`, or `["key"]` when the key is not an identifier. */
function segment(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * `value` as JSON gives it back, for what JSON changes and the store does not refuse: without the
 * `undefined` properties of its plain objects and with `-0` as `0`, at any depth. A step then gets
 * the same value in the caller and in a worker that read it back. One pass that copies only what
 * holds one (the common case is a scan, not a copy: `value` itself comes back); class instances and
 * `undefined` array elements are left as they are (the latter are refused on store), and an array
 * is walked up to its first hole only (it is refused on store), so a sparse array costs its real
 * size, not its length. A value whose getter or proxy throws is left as it is (the store refuses
 * it, naming where).
 */
export function withoutUndefinedProperties<T>(value: T, depth = 0): T {
  if (typeof value === 'number') return (value === 0 ? 0 : value) as T;
  if (value === null || typeof value !== 'object' || depth > MAX_VALUE_DEPTH) return value;
  try {
    return Array.isArray(value) ? (arrayAsStored(value, depth) as T) : objectAsStored(value, depth);
  } catch {
    // A getter or proxy that throws: left as it is, for the store to refuse naming where it threw.
    return value;
  }
}

function arrayAsStored(value: unknown[], depth: number): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (item === undefined) {
      if (i in value) continue;
      return value;
    }
    if (typeof item === 'number') {
      if (isNegativeZero(item)) (copy ??= value.slice())[i] = 0;
      continue;
    }
    const kept = withoutUndefinedProperties(item, depth + 1);
    if (kept !== item) (copy ??= value.slice())[i] = kept;
  }
  return copy ?? value;
}

function objectAsStored<T extends object>(value: T, depth: number): T {
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const item = (value as Record<string, unknown>)[keys[i]];
    let kept: unknown;
    if (typeof item === 'number') {
      if (!isNegativeZero(item)) continue;
      kept = 0;
    } else if (item !== undefined) {
      kept = withoutUndefinedProperties(item, depth + 1);
      if (kept === item) continue;
    }
    // The first property to change: copy the ones before it as they are, the rest as they come.
    // An own `__proto__` key (JSON.parse makes one) is dropped, as everywhere a value is stored:
    // assigned to a plain object it would set the copy's prototype instead.
    const out: Record<string, unknown> = {};
    for (let j = 0; j < i; j++) {
      if (keys[j] !== '__proto__') out[keys[j]] = (value as Record<string, unknown>)[keys[j]];
    }
    if (kept !== undefined && keys[i] !== '__proto__') out[keys[i]] = kept;
    for (let j = i + 1; j < keys.length; j++) {
      const rest = (value as Record<string, unknown>)[keys[j]];
      if (rest !== undefined && keys[j] !== '__proto__') out[keys[j]] = withoutUndefinedProperties(rest, depth + 1);
    }
    return out as T;
  }
  return value;
}

function isNegativeZero(n: number): boolean {
  return n === 0 && 1 / n < 0;
}

/**
 * Copy the own enumerable string-keyed properties of `source` (none when it is undefined) onto
 * `target` and return `target`: `{ ...source }` when `target` is `{}`, as fast as building it by
 * hand. A property later added to an object made by a spread takes V8's slow path on Node 20 (a few
 * µs each on the run's hot path, DD-speed22-11); one added to this copy does not. A `__proto__` key
 * (JSON.parse makes it an own property) is copied as an own property too, as a spread copies it,
 * never set as the prototype.
 */
export function copyOwn<T extends Record<string, unknown>>(target: T, source: object | undefined): T {
  if (source === undefined) return target;
  for (const key of Object.keys(source)) {
    const value = (source as Record<string, unknown>)[key];
    if (key === '__proto__') {
      Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
    } else {
      (target as Record<string, unknown>)[key] = value;
    }
  }
  return target;
}
