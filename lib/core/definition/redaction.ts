import type { MapSpec, ReactorDefinition, StepDefinition } from './definition';
import type { ArgSource } from './ref';

/** What replaces a redacted value. */
export const REDACTED = '[REDACTED]';

/**
 * Reactor inputs with every redacted input replaced by {@link REDACTED}: those the definition
 * declares `redact: true`, and `also` (the inputs a run was given from a redacted value of its
 * parent, `RunState.redactedInputs`).
 */
export function redactInputs(
  def: ReactorDefinition,
  inputs: Record<string, unknown>,
  also: readonly string[] = [],
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...inputs };
  for (const input of def.inputs) if (input.redact && input.name in out) out[input.name] = REDACTED;
  for (const name of also) if (name in out) out[name] = REDACTED;
  return out;
}

/**
 * The names of `step`'s arguments that are redacted: declared, wired from a redacted input of the
 * definition, or wired from one of `alsoInputs` (inputs the run was given from a redacted value).
 */
export function redactedArgNames(step: StepDefinition, alsoInputs: readonly string[] = []): readonly string[] {
  if (alsoInputs.length === 0) return step.redact;
  const names = new Set(step.redact);
  for (const [arg, source] of Object.entries(step.args)) {
    if (source.kind === 'input' && alsoInputs.includes(source.name)) names.add(arg);
  }
  return [...names];
}

/** Step arguments with the step's redacted arguments (see {@link redactedArgNames}) replaced by {@link REDACTED}. */
export function redactArgs(
  step: StepDefinition,
  args: Record<string, unknown>,
  alsoInputs: readonly string[] = [],
): Record<string, unknown> {
  const names = redactedArgNames(step, alsoInputs);
  if (names.length === 0) return args;
  const out: Record<string, unknown> = { ...args };
  for (const name of names) if (name in out) out[name] = REDACTED;
  return out;
}

/**
 * The inputs of a map's element reactor that carry a redacted value of the run that maps: wired
 * from a redacted input, or the element itself when the collection comes from one. Redaction
 * follows a value into the elements, as it follows one into a composed child.
 */
export function redactedElementInputs(
  def: ReactorDefinition,
  spec: MapSpec,
  alsoInputs: readonly string[] = [],
): string[] {
  const redacted = (source: ArgSource | undefined): boolean =>
    source?.kind === 'input' &&
    (alsoInputs.includes(source.name) || def.inputs.some((i) => i.name === source.name && i.redact));
  const collection = typeof spec.source === 'function' ? undefined : spec.source;
  return Object.entries(spec.inputs)
    .filter(([, source]) => redacted(source) || (source.kind === 'element' && redacted(collection)))
    .map(([name]) => name);
}
