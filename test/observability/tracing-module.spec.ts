import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import { LetterStep, StepLog } from '../e2e/e2e.fixtures';
import { CapturingLogger } from '../nest/fixtures';
import { useInMemoryTracing } from './otel.harness';

@Reactor('otel-module-letter')
class LetterReactor implements ReactorBlueprint<{ word: string }> {
  build(r: ReactorBuilder<{ word: string }>) {
    return r.step('first', LetterStep, { word: r.input('word', { type: 'string' }), at: r.value(0) });
  }
}

/** The module (embedded runtime) traces by default; `tracing: false` switches it off. */
describe('ReactorModule tracing option', () => {
  const otel = useInMemoryTracing();

  async function runOnce(tracing: boolean | undefined): Promise<string[]> {
    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot(tracing === undefined ? {} : { tracing })],
      providers: [StepLog, LetterStep, LetterReactor],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await app.init();
    try {
      const outcome = await app.get(ReactorClient).run(LetterReactor, { word: 'abc' });
      expect(outcome.status).toBe('completed');
      return otel.spans().map((s) => s.name);
    } finally {
      await app.close();
    }
  }

  it('on by default: a run span and its step span', async () => {
    expect(await runOnce(undefined)).toEqual(['reactor.step first', 'reactor.run otel-module-letter']);
  });

  it('tracing: false makes none', async () => {
    expect(await runOnce(false)).toEqual([]);
  });

  it('refuses a tracing option that is not a boolean, naming it', () => {
    expect(() => resolveReactorModuleOptions({ tracing: 'yes' as never })).toThrow(
      "ReactorModule option 'tracing' must be true or false",
    );
  });
});
