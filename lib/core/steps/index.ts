/**
 * The registry of step kinds: one line per kind. A kind of {@link HandlerSpecs} without a line here
 * does not compile (the mapped type below names every kind).
 */
import type { HandlerSpecs, StepDefinition } from '../definition/definition';
import { composeStep } from './compose.step';
import { handlerStep } from './handler.step';
import { asyncStep } from './async.step';
import { interruptStep } from './interrupt.step';
import { mapStep } from './map.step';
import { sleepStep } from './sleep.step';
import type { StepKind } from './step-kind';

const STEP_KINDS: { readonly [K in keyof HandlerSpecs]: StepKind<HandlerSpecs[K]> } = {
  class: handlerStep,
  inline: handlerStep,
  compose: composeStep,
  map: mapStep,
  interrupt: interruptStep,
  async: asyncStep,
  sleep: sleepStep,
};

/** The kind that runs `step`. */
export function stepKindOf(step: StepDefinition): StepKind {
  return STEP_KINDS[step.handler.kind] as StepKind;
}

export type {
  AsyncUnitHost,
  ChildSaving,
  InterruptHost,
  LinkedReactor,
  RollbackReport,
  StepKind,
  StepOf,
  StepScope,
} from './step-kind';
