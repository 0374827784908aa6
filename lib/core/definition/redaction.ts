import type { ReactorDefinition, StepDefinition } from './definition';

/** What replaces a redacted value. */
export const REDACTED = '[REDACTED]';

/** Reactor inputs with every `redact: true` input replaced by {@link REDACTED}. */
export function redactInputs(def: ReactorDefinition, inputs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...inputs };
  for (const input of def.inputs) if (input.redact && input.name in out) out[input.name] = REDACTED;
  return out;
}

/** Step arguments with the step's redacted arguments replaced by {@link REDACTED}. */
export function redactArgs(step: StepDefinition, args: Record<string, unknown>): Record<string, unknown> {
  if (step.redact.length === 0) return args;
  const out: Record<string, unknown> = { ...args };
  for (const name of step.redact) if (name in out) out[name] = REDACTED;
  return out;
}
