/**
 * Declaring events (issue 23): a reactor's `on` and an interrupt's `event` / `match` are checked
 * when the definition is built, naming the reactor and what is wrong; a valid `on` is kept on the
 * definition (outside its hash), and an engine whose interrupt store keeps no index of waiting runs
 * refuses an interrupt answered by events without a correlation id.
 */
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { ReactorEngine } from '../../lib/core/engine/reactor-engine';
import { createMemoryAdapters } from '../../lib/storage/memory/create-memory-adapters';
import { success } from '../../lib/core/results/step-outcome';
import type { ReactorOptions } from '../../lib/core/definition/definition';
import type { InterruptOptions } from '../../lib/core/definition/interrupt-spec';

const step = (r: ReactorBuilder<object>) => r.step('a', () => success(1), {});
const withOn = (on: unknown) => () => defineReactor('evt-def', step, { on } as ReactorOptions);
const withInterrupt = (options: InterruptOptions<unknown, unknown>) => () =>
  defineReactor('evt-int', (r: ReactorBuilder<object>) => r.interrupt('wait', options as InterruptOptions));

describe('declaring events', () => {
  it('keeps a valid `on` on the definition, outside its hash', () => {
    const input = (p: unknown) => ({ p });
    const def = defineReactor('evt-def', step, { on: { event: 'order.paid', input } });
    expect(def.trigger).toEqual({ event: 'order.paid', input });
    expect(def.hash).toBe(defineReactor('evt-def', step).hash);
  });

  it.each([
    ['not an object', 'order.paid', /on must be an object/],
    ['an empty event name', { event: ' ' }, /on\.event must be a non-empty string/],
    ['a name too long', { event: 'e'.repeat(201) }, /on\.event must be at most 200 characters/],
    ['an unknown option', { event: 'x', filter: () => true }, /on: unknown option 'filter'/],
    ['input not a function', { event: 'x', input: 1 }, /on\.input must be a function/],
    ['match not a function', { event: 'x', match: true }, /on\.match must be a function/],
  ])('refuses an `on` that is %s', (_what, on, message) => {
    expect(withOn(on)).toThrow(message);
    expect(withOn(on)).toThrow(/Reactor 'evt-def'/);
  });

  it.each([
    ['match without event', { match: () => true }, /interrupt 'wait': match needs event/],
    ['a bad event name', { event: '' }, /interrupt 'wait': event must be a non-empty string/],
    ['match not a function', { event: 'x', match: 'id' }, /match must be a function/],
    [
      'an event with correlationId but no match',
      { event: 'x', correlationId: () => 'id' },
      /an event with correlationId needs match/,
    ],
  ])('refuses an interrupt with %s', (_what, options, message) => {
    expect(withInterrupt(options as InterruptOptions<unknown, unknown>)).toThrow(message);
  });

  it('an engine whose interrupt store keeps no index of waiting runs refuses an interrupt answered by events without a correlation id', () => {
    const adapters = createMemoryAdapters();
    const interrupts = Object.create(adapters.interrupts) as typeof adapters.interrupts;
    Object.assign(interrupts, { watchEvent: undefined, unwatchEvent: undefined, eventWatchers: undefined });
    const engine = new ReactorEngine({ ...adapters, interrupts });
    expect(() => engine.register(withInterrupt({ event: 'x' })())).toThrow(/keeps no index of waiting runs/);
    // With a correlation id the mailbox is enough.
    expect(() =>
      engine.register(
        defineReactor('evt-corr', (r: ReactorBuilder<object>) =>
          r.interrupt('wait', { event: 'x', correlationId: () => 'id', match: () => 'id' }),
        ),
      ),
    ).not.toThrow();
  });
});
