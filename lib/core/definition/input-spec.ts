import { checkConstraints, checkType, type ValueConstraints } from '../validation/check-value';

/** Class-validator DTO class. */
export type DtoClass<T = unknown> = new (...args: never[]) => T;

/** Scalar types of the short input form. */
export type InputType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'date' | 'any';

/**
 * The short form of a reactor input, of a field of a step contract, or of a step's scalar output:
 * a type, constraints, and optional, default and redact. For structured values pass a
 * class-validator DTO class instead (or `{ dto, redact }`).
 *
 * Constraints are checked after the type, and each needs a type it applies to: `minLength` and
 * `maxLength` for `'string'` and `'array'` (characters or items), `min` and `max` for `'number'` and
 * `'integer'`, `pattern` for `'string'`; `enum` for any type. Bad options, and a `default` that breaks
 * them, are refused when the reactor is defined.
 *
 * @example
 * r.input('amount', { type: 'integer', min: 1, max: 10_000 });
 * r.input('currency', { type: 'string', enum: ['EUR', 'USD'] as const, default: 'EUR' });
 * r.input('sku', { type: 'string', pattern: /^[A-Z]{3}-\d+$/, maxLength: 32 });
 */
export interface InputOptions<T = unknown> {
  /** Checked type of the value. @default 'any' */
  type?: InputType;
  /** A class-validator DTO the value must satisfy. */
  dto?: DtoClass;
  /**
   * An absent input is allowed (and not validated). A reactor input's `default` implies it; a step
   * contract input with a `default` must say `optional: true`. @default false
   */
  optional?: boolean;
  /**
   * Value used when the input is absent or `null`. Checked against the type and constraints when
   * the reactor is defined. Not allowed on an output contract.
   */
  default?: T;
  /** Replace the value with `[REDACTED]` in failures, traces and stored state shown to people. */
  redact?: boolean;
  description?: string;
  /** Least length: characters of a string, items of an array (an integer >= 0). */
  minLength?: number;
  /** Greatest length: characters of a string, items of an array (an integer >= 0). */
  maxLength?: number;
  /** Least value of a number or integer (inclusive). */
  min?: number;
  /** Greatest value of a number or integer (inclusive). */
  max?: number;
  /** A string must match it (a string is compiled with `new RegExp`). */
  pattern?: RegExp | string;
  /** The allowed values (compared with `===`); each must be of the input's type. */
  enum?: readonly T[];
}

/** A reactor input declaration: a DTO class or the short form. */
export type InputSpec<T = unknown> = DtoClass<T> | InputOptions<T>;

/** A normalized input declaration. */
export interface InputDefinition {
  name: string;
  type: InputType;
  dto?: DtoClass;
  optional: boolean;
  hasDefault: boolean;
  default?: unknown;
  redact: boolean;
  description?: string;
  /** Constraints of the short form, when it has any. */
  constraints?: ValueConstraints;
}

const INPUT_TYPES: readonly InputType[] = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'date', 'any'];
const OPTION_KEYS = [
  'type',
  'dto',
  'optional',
  'default',
  'redact',
  'description',
  'minLength',
  'maxLength',
  'min',
  'max',
  'pattern',
  'enum',
] as const;

/** Which types each constraint applies to (`enum` applies to every type). */
const CONSTRAINT_TYPES: Readonly<Record<'minLength' | 'maxLength' | 'min' | 'max' | 'pattern', readonly InputType[]>> =
  {
    minLength: ['string', 'array'],
    maxLength: ['string', 'array'],
    min: ['number', 'integer'],
    max: ['number', 'integer'],
    pattern: ['string'],
  };

/**
 * Normalize an input spec; returns an error message for a bad one. `label` starts the message
 * (`input 'amount'` for a reactor input; step contracts pass their own).
 */
export function toInputDefinition(
  name: string,
  spec: InputSpec | undefined,
  label = `input '${name}'`,
): InputDefinition | string {
  if (spec === undefined) return { name, type: 'any', optional: false, hasDefault: false, redact: false };
  if (typeof spec === 'function')
    return { name, type: 'object', dto: spec, optional: false, hasDefault: false, redact: false };
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
    return `${label}: expected a DTO class or options object`;
  const unknown = Object.keys(spec).find((k) => !(OPTION_KEYS as readonly string[]).includes(k));
  if (unknown !== undefined) return `${label}: unknown option '${unknown}' (options: ${OPTION_KEYS.join(', ')})`;
  const type = spec.type ?? (spec.dto ? 'object' : 'any');
  if (!INPUT_TYPES.includes(type))
    return `${label}: unknown type '${String(type)}' (use one of ${INPUT_TYPES.join(', ')})`;
  const constraints = toConstraints(spec, type, label);
  if (typeof constraints === 'string') return constraints;
  const hasDefault = 'default' in spec && spec.default !== undefined;
  if (hasDefault && spec.default !== null && !spec.dto) {
    const problems = [checkType(type, spec.default) ?? checkConstraints(constraints, spec.default)].flat();
    if (problems.length > 0)
      return `${label}: option 'default' breaks the input's own rules: it ${problems.join(', ')}`;
  }
  return {
    name,
    type,
    dto: spec.dto,
    optional: Boolean(spec.optional) || hasDefault,
    hasDefault,
    default: spec.default,
    redact: Boolean(spec.redact),
    description: spec.description,
    ...(constraints ? { constraints } : {}),
  };
}

function toConstraints(spec: InputOptions, type: InputType, label: string): ValueConstraints | undefined | string {
  const out: { -readonly [K in keyof ValueConstraints]: ValueConstraints[K] } = {};
  for (const key of Object.keys(CONSTRAINT_TYPES) as Array<keyof typeof CONSTRAINT_TYPES>) {
    if (spec[key] === undefined) continue;
    const types = CONSTRAINT_TYPES[key];
    if (!types.includes(type) || spec.dto)
      return `${label}: option '${key}' applies to type ${types.map((t) => `'${t}'`).join(' or ')}, not '${spec.dto ? 'dto' : type}'`;
  }
  for (const key of ['minLength', 'maxLength'] as const) {
    const n = spec[key];
    if (n === undefined) continue;
    if (!Number.isInteger(n) || n < 0) return `${label}: option '${key}' must be an integer >= 0 (got ${show(n)})`;
    out[key] = n;
  }
  for (const key of ['min', 'max'] as const) {
    const n = spec[key];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isFinite(n))
      return `${label}: option '${key}' must be a finite number (got ${show(n)})`;
    out[key] = n;
  }
  if (out.minLength !== undefined && out.maxLength !== undefined && out.minLength > out.maxLength)
    return `${label}: option 'minLength' (${out.minLength}) is greater than 'maxLength' (${out.maxLength})`;
  if (out.min !== undefined && out.max !== undefined && out.min > out.max)
    return `${label}: option 'min' (${out.min}) is greater than 'max' (${out.max})`;
  if (spec.pattern !== undefined) {
    if (spec.pattern instanceof RegExp) out.pattern = spec.pattern;
    else if (typeof spec.pattern !== 'string')
      return `${label}: option 'pattern' must be a RegExp or a string (got ${show(spec.pattern)})`;
    else {
      try {
        out.pattern = new RegExp(spec.pattern);
      } catch (error) {
        return `${label}: option 'pattern' is not a valid regular expression: ${(error as Error).message}`;
      }
    }
  }
  if (spec.enum !== undefined) {
    if (!Array.isArray(spec.enum) || spec.enum.length === 0)
      return `${label}: option 'enum' must be a non-empty array of the allowed values`;
    for (const value of spec.enum) {
      const problem = spec.dto ? 'must not be used with a dto' : checkType(type, value);
      if (problem) return `${label}: option 'enum' holds ${show(value)}, which ${problem}`;
    }
    out.enum = Object.freeze([...spec.enum]);
  }
  return Object.keys(out).length > 0 ? Object.freeze(out) : undefined;
}

function show(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return Array.isArray(value) ? 'an array' : typeof value;
}
