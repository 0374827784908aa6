import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import type { InputDefinition } from '../definition/input-spec';
import type { DtoClass } from '../definition/step';
import type { FieldErrors } from '../errors/input-validation.error';

/** Validate a value against a class-validator DTO; returns field errors keyed by dotted path. */
export async function validateDto(dto: DtoClass, value: unknown, prefix = ''): Promise<FieldErrors> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { [prefix || '(value)']: [`must be an object matching ${dto.name}`] };
  }
  const instance = plainToInstance(dto as new () => object, value);
  const errors = await validate(instance, { forbidUnknownValues: false });
  const out: FieldErrors = {};
  flatten(errors, prefix, out);
  return out;
}

function flatten(errors: ValidationError[], prefix: string, out: FieldErrors): void {
  for (const e of errors) {
    const path = prefix ? `${prefix}.${e.property}` : e.property;
    if (e.constraints) out[path] = Object.values(e.constraints);
    if (e.children?.length) flatten(e.children, path, out);
  }
}

/**
 * Validate reactor inputs against their declarations. Presence means the key exists: `false`,
 * `0` and `''` are values; `null` fails a required input. An input with a default gets it when the
 * key is absent or `null` (as the reference does), and the default is not validated. `__proto__`
 * keys are dropped, at any depth, so no input can change an object's prototype (and so read as an
 * input it did not give). Returns the inputs to store and every field error.
 */
export async function validateReactorInputs(
  defs: readonly InputDefinition[],
  raw: unknown,
): Promise<{ inputs: Record<string, unknown>; errors: FieldErrors }> {
  const errors: FieldErrors = {};
  const inputs: Record<string, unknown> = {};
  if (raw !== undefined && (raw === null || typeof raw !== 'object' || Array.isArray(raw))) {
    return { inputs, errors: { '(inputs)': ['must be an object of named inputs'] } };
  }
  const given = withoutProtoKeys(raw ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!defs.some((d) => d.name === key)) inputs[key] = given[key];
  }
  for (const def of defs) {
    const own = Object.prototype.hasOwnProperty.call(given, def.name) ? given[def.name] : undefined;
    const present = own !== undefined && !(own === null && def.hasDefault);
    if (!present) {
      if (def.hasDefault) inputs[def.name] = structuredClone(def.default);
      else if (!def.optional) errors[def.name] = ['is missing'];
      continue;
    }
    const value = given[def.name];
    inputs[def.name] = value;
    if (value === null) {
      if (!def.optional) errors[def.name] = ['must not be null'];
      continue;
    }
    const typeError = checkType(def, value);
    if (typeError) {
      errors[def.name] = [typeError];
      continue;
    }
    if (def.dto) Object.assign(errors, await validateDto(def.dto, value, def.name));
  }
  return { inputs, errors };
}

const PROTO = '__proto__';

/** Whether `value` holds an own `__proto__` key at any depth (what `JSON.parse` makes of one). */
function hasProtoKey(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object' || depth > 256) return false;
  if (Array.isArray(value)) return value.some((v) => hasProtoKey(v, depth + 1));
  if (Object.prototype.hasOwnProperty.call(value, PROTO)) return true;
  for (const key of Object.keys(value)) {
    if (hasProtoKey((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/**
 * `value` without own `__proto__` keys, at any depth. Copies only when there is one to drop (the
 * common case is a scan, not a copy); other values, class instances included, are kept as they are.
 */
export function withoutProtoKeys(value: unknown, depth = 0): unknown {
  if (!hasProtoKey(value, depth)) return value;
  if (Array.isArray(value)) return value.map((v) => withoutProtoKeys(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value as object)) {
    if (key !== PROTO) out[key] = withoutProtoKeys((value as Record<string, unknown>)[key], depth + 1);
  }
  return out;
}

function checkType(def: InputDefinition, value: unknown): string | undefined {
  switch (def.type) {
    case 'string':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a finite number';
    case 'integer':
      return Number.isInteger(value) ? undefined : 'must be an integer';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'array':
      return Array.isArray(value) ? undefined : 'must be an array';
    case 'object':
      return typeof value === 'object' && !Array.isArray(value) ? undefined : 'must be an object';
    case 'date':
      return typeof value === 'string' && !Number.isNaN(Date.parse(value))
        ? undefined
        : 'must be an ISO-8601 date string';
    default:
      return undefined;
  }
}

/** Summarize field errors for a message, without values (so nothing redacted can leak). */
export function describeFieldErrors(errors: FieldErrors): string {
  return Object.entries(errors)
    .map(([field, msgs]) => `${field} ${msgs.join(', ')}`)
    .join('; ');
}
