/**
 * Checks of one value against a short form's type and constraints, shared by reactor inputs, step
 * contracts and a scalar output contract. Pure and synchronous, so definition time can check a
 * default with the same code that checks a value at run time.
 */
import { arrayMaxSize, arrayMinSize, isIn, isInt, matches, max, maxLength, min, minLength } from 'class-validator';

/** The normalized constraints of a short form (see `InputOptions`). */
export interface ValueConstraints {
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly min?: number;
  readonly max?: number;
  readonly pattern?: RegExp;
  readonly enum?: readonly unknown[];
}

/** Why `value` is not of `type` (a short form's type), or undefined when it is. */
export function checkType(type: string, value: unknown): string | undefined {
  switch (type) {
    case 'string':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a finite number';
    case 'integer':
      return isInt(value) ? undefined : 'must be an integer';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'array':
      return Array.isArray(value) ? undefined : 'must be an array';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value) ? undefined : 'must be an object';
    case 'date':
      return typeof value === 'string' && !Number.isNaN(Date.parse(value))
        ? undefined
        : 'must be an ISO-8601 date string';
    default:
      return undefined;
  }
}

/**
 * Every constraint `value` violates, as messages that say what is required (never the value, so
 * nothing redacted can leak). `value` is assumed to have passed {@link checkType}.
 */
export function checkConstraints(c: ValueConstraints | undefined, value: unknown): string[] {
  if (!c) return [];
  const out: string[] = [];
  const isArray = Array.isArray(value);
  const unit = (n: number) => (isArray ? `${n} item${n === 1 ? '' : 's'}` : `${n} character${n === 1 ? '' : 's'}`);
  if (c.minLength !== undefined && !(isArray ? arrayMinSize(value, c.minLength) : minLength(value, c.minLength)))
    out.push(`must have at least ${unit(c.minLength)}`);
  if (c.maxLength !== undefined && !(isArray ? arrayMaxSize(value, c.maxLength) : maxLength(value, c.maxLength)))
    out.push(`must have at most ${unit(c.maxLength)}`);
  if (c.min !== undefined && !min(value, c.min)) out.push(`must be >= ${c.min}`);
  if (c.max !== undefined && !max(value, c.max)) out.push(`must be <= ${c.max}`);
  if (c.pattern !== undefined && !matches(value as string, c.pattern)) out.push(`must match ${String(c.pattern)}`);
  if (c.enum !== undefined && !isIn(value, c.enum as unknown[]))
    out.push(`must be one of ${c.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  return out;
}
