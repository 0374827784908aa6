import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import type { ContractRule, ContractRuleResult, ContractViolation, StepContract } from '../definition/contract-spec';
import type { InputDefinition } from '../definition/input-spec';
import type { DtoClass } from '../definition/step';
import type { FieldErrors } from '../errors/input-validation.error';
import { errorText } from '../errors/sentence';
import { jsonProblem, MAX_VALUE_DEPTH, withoutUndefinedProperties } from '../model/json-values';
import { checkConstraints, checkType } from './check-value';

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
 * input it did not give); `-0` becomes 0 and `undefined` properties are left out, as JSON does.
 * With `fresh` (a new run's inputs, from a caller), a value JSON would not give back as it is (see
 * `jsonProblem`: a Date, a RegExp, a sparse array, nesting deeper than `MAX_VALUE_DEPTH`, a
 * cycle...) and one whose getter or proxy throws are field errors naming where they are, left out
 * of the inputs returned (the failed run is stored without them); values that come from a stored
 * run (a composed child's, an element's) are checked when they are stored. Returns the inputs to
 * store and every field error.
 */
export async function validateReactorInputs(
  defs: readonly InputDefinition[],
  raw: unknown,
  options: { fresh?: boolean } = {},
): Promise<{ inputs: Record<string, unknown>; errors: FieldErrors }> {
  return validateFields(defs, raw, options.fresh === true);
}

async function validateFields(
  defs: readonly InputDefinition[],
  raw: unknown,
  fresh: boolean,
): Promise<{ inputs: Record<string, unknown>; errors: FieldErrors }> {
  const inputs: Record<string, unknown> = {};
  if (raw !== undefined && (raw === null || typeof raw !== 'object' || isArray(raw))) {
    return { inputs, errors: { '(inputs)': ['must be an object of named inputs'] } };
  }
  const { given, errors } = readFields(raw ?? {}, fresh);
  for (const key of Object.keys(given)) {
    if (!defs.some((d) => d.name === key)) inputs[key] = given[key];
  }
  for (const def of defs) {
    if (errors[def.name]) continue;
    const own = Object.prototype.hasOwnProperty.call(given, def.name) ? given[def.name] : undefined;
    const present = own !== undefined && !(own === null && def.hasDefault);
    if (!present) {
      if (def.hasDefault) inputs[def.name] = structuredClone(def.default);
      else if (!def.optional) errors[def.name] = ['is missing'];
      continue;
    }
    inputs[def.name] = own;
    try {
      Object.assign(errors, await validateValue(def, own, def.name));
    } catch (error) {
      errors[def.name] = [`could not be validated: ${errorText(error)}`];
    }
  }
  return { inputs, errors };
}

/** `Array.isArray`, false for a revoked proxy (refused then as an object that cannot be read). */
function isArray(value: unknown): boolean {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

/**
 * The fields of `raw` as JSON stores them (no `__proto__` keys, no `undefined` properties, `-0` as
 * 0; `raw` itself when nothing changes), and a field error for each one that cannot be read (a
 * throwing getter or proxy) or, when `fresh`, that JSON would not give back as it is (naming
 * where: `inputs.order.tags[3]`). Only `fresh` fields are copied one by one.
 */
function readFields(raw: object, fresh: boolean): { given: Record<string, unknown>; errors: FieldErrors } {
  const errors: FieldErrors = {};
  let own = raw as Record<string, unknown>;
  try {
    if (fresh) {
      own = {};
      for (const key of Object.keys(raw)) {
        if (key === PROTO) continue;
        let value: unknown;
        try {
          value = (raw as Record<string, unknown>)[key];
        } catch (error) {
          errors[key] = [`could not be read: ${errorText(error)}`];
          continue;
        }
        const problem = jsonProblem(value, `inputs.${key}`);
        if (problem !== undefined) errors[key] = [`cannot be stored as it is: ${problem}`];
        else own[key] = value;
      }
    }
    return { given: withoutUndefinedProperties(withoutProtoKeys(own)) as Record<string, unknown>, errors };
  } catch (error) {
    // Keys that cannot be listed, or (read twice) a getter or proxy that throws the second time only.
    return { given: {}, errors: { ...errors, '(inputs)': [`could not be read: ${errorText(error)}`] } };
  }
}

/**
 * Field errors of one present value against a short form or DTO declaration, keyed by `path`:
 * `null` fails a required one; then the type, then every constraint, then the DTO.
 */
async function validateValue(def: InputDefinition, value: unknown, path: string): Promise<FieldErrors> {
  if (value === null) return def.optional ? {} : { [path]: ['must not be null'] };
  const typeError = checkType(def.type, value);
  if (typeError) return { [path]: [typeError] };
  const violations = checkConstraints(def.constraints, value);
  if (violations.length > 0) return { [path]: violations };
  return def.dto ? validateDto(def.dto, value, path) : {};
}

/**
 * A step's arguments with its input contract's defaults: each short-form field with a default, and
 * each property a DTO contract's initialisers give a value (`note = 'n/a'`), gets it when its
 * argument is missing, `undefined` or `null` (as a reactor input does).
 */
export function applyContractDefaults(contract: StepContract, args: Record<string, unknown>): Record<string, unknown> {
  if (contract.kind === 'dto') {
    if (!contract.defaults) return args;
    const out = { ...args };
    for (const [name, value] of Object.entries(contract.defaults)) {
      if (out[name] === undefined || out[name] === null) out[name] = structuredClone(value);
    }
    return out;
  }
  if (contract.kind !== 'fields' || !contract.fields.some((f) => f.hasDefault)) return args;
  const out = { ...args };
  for (const field of contract.fields) {
    if (field.hasDefault && (out[field.name] === undefined || out[field.name] === null))
      out[field.name] = structuredClone(field.default);
  }
  return out;
}

/**
 * Field errors of `value` against a step contract: a DTO class, a record of short forms (fields
 * of an object value, keyed by field name) or one short form (the value itself, keyed `(value)`).
 */
export async function validateContract(contract: StepContract, value: unknown): Promise<FieldErrors> {
  if (contract.kind === 'dto') return validateDto(contract.dto, value);
  if (contract.kind === 'value') {
    if (value === undefined) return contract.field.optional ? {} : { '(value)': ['is missing'] };
    return validateValue(contract.field, value, '(value)');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { '(value)': ['must be an object'] };
  const { errors } = await validateFields(contract.fields, value, false);
  if (Object.keys(errors).length > 0 || !contract.rule) return errors;
  return ruleErrors(contract.rule, value as Record<string, unknown>);
}

/**
 * Field errors of a contract's cross-field rule: each violation under its `field` (a message alone,
 * or a violation without a field, under `(value)`). A rule that throws is a violation saying so.
 */
async function ruleErrors(rule: ContractRule, value: Record<string, unknown>): Promise<FieldErrors> {
  let result: ContractRuleResult;
  try {
    result = await rule(value);
  } catch (error) {
    return { '(value)': [`validate threw: ${(error as Error)?.message ?? String(error)}`] };
  }
  if (result === undefined || result === null || result === true) return {};
  const out: FieldErrors = {};
  const add = (field: string, message: string) => (out[field] ??= []).push(message);
  const items = Array.isArray(result) ? (result as ReadonlyArray<string | ContractViolation>) : [result];
  for (const item of items) {
    if (typeof item === 'string') add('(value)', item);
    else if (item === false) add('(value)', 'is invalid (validate returned false)');
    else if (typeof item === 'object' && item !== null && typeof (item as ContractViolation).message === 'string') {
      const { field, message } = item as ContractViolation;
      add(typeof field === 'string' && field.length > 0 ? field : '(value)', message);
    } else add('(value)', `is invalid (validate returned ${typeof item}; return a message or { field, message })`);
  }
  return out;
}

const PROTO = '__proto__';

/**
 * Whether `value` holds an own `__proto__` key at any depth (what `JSON.parse` makes of one): every
 * depth a stored value may have (deeper ones are refused by `jsonProblem`, and the walk stops there).
 */
function hasProtoKey(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object' || depth > MAX_VALUE_DEPTH) return false;
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

/** Summarize field errors for a message, without values (so nothing redacted can leak). */
export function describeFieldErrors(errors: FieldErrors): string {
  return Object.entries(errors)
    .map(([field, msgs]) => `${field} ${msgs.join(', ')}`)
    .join('; ');
}
