import { toInputDefinition, type DtoClass, type InputDefinition, type InputOptions } from './input-spec';

/**
 * A record of short forms, one per field: `{ amount: { type: 'number', min: 1 }, note: { type:
 * 'string', optional: true, default: 'n/a' } }`. A field may also be a DTO class.
 */
export type ContractFields = Readonly<Record<string, InputOptions | DtoClass>>;

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
  | { readonly kind: 'dto'; readonly name: string; readonly dto: DtoClass }
  | { readonly kind: 'fields'; readonly name: string; readonly fields: readonly InputDefinition[] }
  | { readonly kind: 'value'; readonly name: string; readonly field: InputDefinition };

const SHORT_FORM = 'short form';

/**
 * Normalize a step's input or output contract; returns an error message for a bad one (the caller
 * prefixes the reactor and step).
 */
export function toStepContract(spec: InputContract | OutputContract, role: 'input' | 'output'): StepContract | string {
  if (typeof spec === 'function') return { kind: 'dto', name: spec.name, dto: spec };
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
    return `${role} contract must be a DTO class or a record of short forms${role === 'output' ? ' or one short form' : ''}`;
  if (typeof (spec as InputOptions).type === 'string') {
    if (role === 'input')
      return "input contract must be a DTO class or a record of fields (a single short form with a 'type' is for an output)";
    const field = toOutputField('(value)', spec as InputOptions, 'output contract');
    return typeof field === 'string' ? field : { kind: 'value', name: SHORT_FORM, field };
  }
  const fields: InputDefinition[] = [];
  for (const [name, fieldSpec] of Object.entries(spec as ContractFields)) {
    const label = `${role} contract field '${name}'`;
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
  return { kind: 'fields', name: SHORT_FORM, fields: Object.freeze(fields) };
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
