import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorEvent, ReactorMiddleware } from '../../lib/core/middleware/events';
import { success } from '../../lib/core/results/step-outcome';
import { createHarness } from './harness';

describe('middleware per reactor', () => {
  it("runs after the global middleware, in the reference's order; a class is instantiated per execution", async () => {
    const seen: string[] = [];
    const global: ReactorMiddleware = { onEvent: (e) => void seen.push(`global:${e.type}`) };
    const shared: ReactorMiddleware = { onEvent: (e) => void seen.push(`shared:${e.type}`) };
    const instances: PerRun[] = [];
    class PerRun implements ReactorMiddleware {
      readonly events: ReactorEvent[] = [];
      constructor() {
        instances.push(this);
      }
      onEvent(e: ReactorEvent): void {
        this.events.push(e);
        seen.push(`per-run:${e.type}`);
      }
    }
    const { engine } = createHarness({ middleware: [global] });
    const def = defineReactor(
      'audited',
      (r: ReactorBuilder<{ card: string }>) =>
        r.step('one', () => success(1), { card: r.input('card', { type: 'string', redact: true }) } as never),
      { middleware: [shared, PerRun] },
    );
    const other = defineReactor('plain', (r: ReactorBuilder<object>) => r.step('x', () => success(1), {}));
    await engine.run(def, { card: 'secret' });
    await engine.run(def, { card: 'secret' });
    const beforeOther = seen.length;
    await engine.run(other, {});

    expect(seen.slice(0, 3)).toEqual(['global:reactor.start', 'shared:reactor.start', 'per-run:reactor.start']);
    expect(instances.length).toBe(2);
    expect(instances[0].events.map((e) => e.type)).toEqual([
      'reactor.start',
      'step.start',
      'step.complete',
      'reactor.complete',
    ]);
    const start = instances[0].events[0];
    expect(start.type === 'reactor.start' && start.inputs).toEqual({ card: '[REDACTED]' });
    // Another reactor's runs reach only the global middleware.
    expect(seen.slice(beforeOther).every((s) => s.startsWith('global:'))).toBe(true);
  });

  it('refuses middleware that is neither an onEvent object nor a class, at definition', () => {
    expect(() =>
      defineReactor('bad-mw', (r: ReactorBuilder<object>) => r.step('x', () => success(1), {}), {
        middleware: [{ onEvnt: () => undefined } as never],
      }),
    ).toThrow("Reactor 'bad-mw': middleware[0] must be an object with an onEvent method, or a class of one.");
  });
});
