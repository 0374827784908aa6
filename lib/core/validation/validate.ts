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
 * `0` and `''` are values; `null` fails a required input. Absent optional inputs get their default
 * and are not validated. Returns the inputs to store and every field error.
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
  const given = (raw ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!defs.some((d) => d.name === key)) inputs[key] = given[key];
  }
  for (const def of defs) {
    const present = Object.prototype.hasOwnProperty.call(given, def.name) && given[def.name] !== undefined;
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
