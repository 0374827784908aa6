/**
 * Map steps: an element reactor mapped over a collection, inline or fanned out to element jobs
 * (see `../map/map-runner.ts`). Compensating or undoing the step rolls back its completed
 * elements, highest index first; a fan-out map does it through element rollback jobs.
 */
import type { HandlerSpecs } from '../definition/definition';
import type { MapStep } from '../map/map-host';
import { rollbackMap } from '../map/map-rollback';
import { runMap } from '../map/map-runner';
import type { RollbackReport, StepKind, StepScope } from './step-kind';

type MapHandlerSpec = HandlerSpecs['map'];

async function rollback(scope: StepScope, step: MapStep): Promise<RollbackReport> {
  const failures = await rollbackMap(scope, step);
  return { failures, error: `${failures.length} element rollback failure(s)` };
}

/** The kind of `map` steps. */
export const mapStep: StepKind<MapHandlerSpec> = {
  invoke: (scope, step, args) => runMap(scope, step, args),
  adopting: (scope, step) => scope.state.maps?.[step.name]?.mode === 'fanOut',
  compensate: (scope, step) => rollback(scope, step),
  undo: (scope, step) => rollback(scope, step),
  hasUndoWork: () => true,
  innerDefinitions: (step) => (step.handler.map.inlineElement ? [step.handler.map.inlineElement] : []),
  linkedReactors: (step) => [
    {
      reactorName: step.handler.map.elementReactor,
      describe: (name) => `map step '${name}' maps reactor '${step.handler.map.elementReactor}'`,
      nested: false,
    },
  ],
};
