/**
 * The reactor of the reset-and-redrive tests (issue 25), shared by test/core/retry-from-step.spec.ts
 * (the engine) and test/e2e/retry-many.e2e.spec.ts (`ReactorClient` on both runtimes):
 *
 *   a(order) -> c(a); b(note); d(c, b) = `C(A:<order>)+B:<note>`
 *
 * Each step reports `<step>` when it runs and `undo-<step>` when it is undone, so a test sees which
 * steps a retry reused and which it ran again.
 */
import type { ReactorBuilder, StepUseOptions } from '../../lib/core/definition/builder';
import type { StepContext } from '../../lib/core/definition/step';
import { failure, success } from '../../lib/core/results/step-outcome';

/** The reactor's input. */
export type ShippingInput = { order: string; note: string };

/** How a test hears about the steps and decides d's outcome. */
export interface ShippingProbe {
  /** Called with `<step>` as a step runs, `undo-<step>` as it is undone. */
  record(entry: string, ctx: StepContext): void;
  /** Whether d fails (`no courier`, not retryable) this time. */
  failD(): boolean;
}

/**
 * Build the steps on `r` and return d, the value. `beforeD` is called after c is declared and
 * before d, whose options it returns (e.g. to declare an interrupt and have d wait for it).
 */
export function buildShipping(
  r: ReactorBuilder<ShippingInput>,
  probe: ShippingProbe,
  beforeD: () => StepUseOptions = () => ({}),
) {
  const order = r.input('order', { type: 'string' });
  const note = r.input('note', { type: 'string' });
  const step = (name: string, value: (args: Record<string, unknown>) => unknown) => ({
    run: (args: Record<string, unknown>, ctx: StepContext) => (probe.record(name, ctx), success(value(args))),
    undo: (_result: unknown, _args: unknown, ctx: StepContext) => probe.record(`undo-${name}`, ctx),
  });
  const a = r.step(
    'a',
    step('a', (x) => `A:${String(x.order)}`),
    { order },
  );
  const b = r.step(
    'b',
    step('b', (x) => `B:${String(x.note)}`),
    { note },
  );
  const c = r.step(
    'c',
    step('c', (x) => `C(${String(x.a)})`),
    { a },
  );
  const dOptions = beforeD();
  return r.step(
    'd',
    {
      run: (x: Record<string, unknown>, ctx: StepContext) => {
        probe.record('d', ctx);
        return probe.failD() ? failure('no courier', { retryable: false }) : success(`${String(x.c)}+${String(x.b)}`);
      },
      undo: (_result: unknown, _args: unknown, ctx: StepContext) => probe.record('undo-d', ctx),
    },
    { c, b },
    dOptions,
  );
}
