import { jsonProblem } from '../model/json-values';
import { toInputDefinition, type DtoClass, type InputDefinition, type InputOptions } from './input-spec';

/** One violation a contract's `validate` rule reports: its `field` (absent: the whole value) and message. */
export interface ContractViolation {
  readonly field?: string;
  readonly message: string;
}

/**
 * What a `validate` rule returns: nothing (`undefined`, `null`, `true`) when the value is valid;
 * otherwise a message (about the whole value), a {@link ContractViolation}, or several.
 */
export type ContractRuleResult =
  void | undefined | null | boolean | string | ContractViolation | readonly (string | ContractViolation)[];

/**
 * A cross-field rule of a short-form contract: called with the value (a step's arguments, defaults
 * applied) once every field passed its own checks; may be async. Declared as a method so that a
 * rule typed for the step's own arguments (`(args: { min: number; max: number }) => ...`) fits.
 */
export type ContractRule = {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- `(a) => a.min <= a.max` without annotations
  validate(value: Record<string, any>): ContractRuleResult | Promise<ContractRuleResult>;
}['validate'];

/**
 * A record of short forms, one per field: `{ amount: { type: 'number', min: 1 }, note: { type:
 * 'string', optional: true, default: 'n/a' } }`. A field may also be a DTO class. The key
 * `validate` holding a function is the contract's cross-field rule ({@link ContractRule}), not a
 * field: `{ min: {...}, max: {...}, validate: (a) => a.min <= a.max || { field: 'max', message:
 * 'must be >= min' } }` (a field named `validate` of a DTO type is written `{ dto: TheDto }`).
 */
export type ContractFields = Readonly<Record<string, InputOptions | DtoClass | ContractRule>>;

/**
 * A step's input contract: a class-validator DTO class, or a record of short forms
 * ({@link ContractFields}). Required fields must be wired (or auto-wired from a same-named reactor
 * input); a field's `default` (it must be `optional: true`) fills a missing or `null` argument.
 */
export type InputContract = DtoClass | ContractFields;

/**
 * A step's output contract: a DTO class, a record of short forms (fields of an object value), or
 * one short form for the value itself (`{ type: 'number', min: 0 }`). An object whose `type` is a
 * string is one short form; any other object is a record of fields. No `default` or `redact`.
 */
export type OutputContract = DtoClass | InputOptions | ContractFields;

/** A normalized step contract. `name` names it in messages (the DTO's name, or `short form`). */
export type StepContract =
  | {
      readonly kind: 'dto';
      readonly name: string;
      readonly dto: DtoClass;
      /** An input contract's defaults: the DTO's property initialisers (`note = 'n/a'`). */
      readonly defaults?: Readonly<Record<string, unknown>>;
    }
  | {
      readonly kind: 'fields';
      readonly name: string;
      readonly fields: readonly InputDefinition[];
      /** The cross-field rule (`validate`), checked once every field passed. */
      readonly rule?: ContractRule;
    }
  | { readonly kind: 'value'; readonly name: string; readonly field: InputDefinition };

const SHORT_FORM = 'short form';

/**
 * Normalize a step's input or output contract; returns an error message for a bad one (the caller
 * prefixes the reactor and step).
 */
export function toStepContract(spec: InputContract | OutputContract, role: 'input' | 'output'): StepContract | string {
  if (typeof spec === 'function') {
    if (role === 'output') return { kind: 'dto', name: spec.name, dto: spec };
    const defaults = dtoDefaults(spec);
    if (typeof defaults === 'string') return defaults;
    return { kind: 'dto', name: spec.name, dto: spec, ...(defaults ? { defaults } : {}) };
  }
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
    return `${role} contract must be a DTO class or a record of short forms${role === 'output' ? ' or one short form' : ''}`;
  if (typeof (spec as InputOptions).type === 'string') {
    if (role === 'input')
      return "input contract must be a DTO class or a record of fields (a single short form with a 'type' is for an output)";
    const field = toOutputField('(value)', spec as InputOptions, 'output contract');
    return typeof field === 'string' ? field : { kind: 'value', name: SHORT_FORM, field };
  }
  const fields: InputDefinition[] = [];
  let rule: ContractRule | undefined;
  for (const [name, entry] of Object.entries(spec as ContractFields)) {
    if (name === 'validate' && typeof entry === 'function') {
      if (isClass(entry)) {
        return `${role} contract: 'validate' holds a class; a function there is the contract's cross-field rule ((value) => message | { field, message } | undefined). A field named 'validate' of a DTO type is written validate: { dto: ${entry.name || 'TheDto'} }`;
      }
      rule = entry as ContractRule;
      continue;
    }
    const label = `${role} contract field '${name}'`;
    if (typeof entry === 'function' && !('prototype' in entry)) {
      return `${label} is an arrow function: a field takes a short form or a DTO class; only the key 'validate' takes a function (the contract's cross-field rule)`;
    }
    const fieldSpec = entry as InputOptions | DtoClass;
    if (typeof fieldSpec !== 'function' && (typeof fieldSpec !== 'object' || fieldSpec === null))
      return `${label} must be a short form object or a DTO class (a single short form for the whole value needs a 'type')`;
    if (role === 'output') {
      const field = toOutputField(name, fieldSpec, label);
      if (typeof field === 'string') return field;
      fields.push(field);
      continue;
    }
    if (typeof fieldSpec === 'object' && fieldSpec.default !== undefined && fieldSpec.optional !== true)
      return `${label} has a default but is required; mark it optional: true (a default fills an optional input)`;
    const field = toInputDefinition(name, fieldSpec, label);
    if (typeof field === 'string') return field;
    fields.push(field);
  }
  return { kind: 'fields', name: SHORT_FORM, fields: Object.freeze(fields), ...(rule ? { rule } : {}) };
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/**
 * The defaults of a DTO input contract: the values its property initialisers give a new instance
 * (`note = 'n/a'`), which fill a missing or `null` argument. None when the class cannot be built
 * without arguments. An initial value JSON cannot keep is refused (an argument is stored as JSON).
 */
function dtoDefaults(dto: DtoClass): Readonly<Record<string, unknown>> | undefined | string {
  let instance: object;
  try {
    instance = new (dto as unknown as new () => object)();
  } catch {
    return undefined;
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(instance)) {
    if (value === undefined) continue;
    const problem = jsonProblem(value);
    if (problem) {
      return `input contract ${dto.name}: the initial value of '${key}' cannot be a default: ${problem.replace(/^the value: /, '')} (a default must be JSON)`;
    }
    out[key] = value;
  }
  return Object.keys(out).length > 0 ? Object.freeze(out) : undefined;
}

function toOutputField(name: string, spec: InputOptions | DtoClass, label: string): InputDefinition | string {
  if (typeof spec === 'object') {
    for (const key of ['default', 'redact'] as const) {
      if (spec[key] !== undefined)
        return `${label}: option '${key}' is for inputs; an output contract does not take it`;
    }
  }
  return toInputDefinition(name, spec, label);
}
