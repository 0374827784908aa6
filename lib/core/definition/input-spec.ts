import type { DtoClass } from './step';

/** Scalar types of the short input form. */
export type InputType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'date' | 'any';

/**
 * The short form of a reactor input: a type, plus optional, default and redact.
 * For structured inputs pass a class-validator DTO class instead (or `{ dto, redact }`).
 */
export interface InputOptions<T = unknown> {
  /** Checked type of the value. @default 'any' */
  type?: InputType;
  /** A class-validator DTO the value must satisfy. */
  dto?: DtoClass;
  /** An absent input is allowed (and not validated). @default false */
  optional?: boolean;
  /** Value used when the input is absent (implies optional). */
  default?: T;
  /** Replace the value with `[REDACTED]` in failures, traces and stored state shown to people. */
  redact?: boolean;
  description?: string;
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
}

const INPUT_TYPES: readonly InputType[] = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'date', 'any'];

/** Normalize an input spec; returns an error message for a bad one. */
export function toInputDefinition(name: string, spec: InputSpec | undefined): InputDefinition | string {
  if (spec === undefined) return { name, type: 'any', optional: false, hasDefault: false, redact: false };
  if (typeof spec === 'function')
    return { name, type: 'object', dto: spec, optional: false, hasDefault: false, redact: false };
  if (typeof spec !== 'object' || spec === null) return `input '${name}': expected a DTO class or options object`;
  const type = spec.type ?? (spec.dto ? 'object' : 'any');
  if (!INPUT_TYPES.includes(type))
    return `input '${name}': unknown type '${String(type)}' (use one of ${INPUT_TYPES.join(', ')})`;
  const hasDefault = 'default' in spec && spec.default !== undefined;
  return {
    name,
    type,
    dto: spec.dto,
    optional: Boolean(spec.optional) || hasDefault,
    hasDefault,
    default: spec.default,
    redact: Boolean(spec.redact),
    description: spec.description,
  };
}
