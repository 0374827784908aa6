import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';
import { failure, success, type StepHandler } from '../../lib';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { resolveReactorModuleOptions } from '../../lib/nest/reactor-module.options';
import { LetterStep, StepLog } from '../e2e/e2e.fixtures';
import { CapturingLogger } from '../nest/fixtures';
import { useInMemoryTracing } from './otel.harness';

@Step('otel-module-reserve')
class Reserve implements StepHandler<Record<string, never>, string> {
  async run() {
    return success('held');
  }
  async undo() {}
}

@Step('otel-module-refuse')
class Refuse implements StepHandler<Record<string, never>, string> {
  async run() {
    return failure('no', { retryable: false });
  }
}

@Reactor('otel-module-rollback')
class RollbackReactor implements ReactorBlueprint<Record<string, never>> {
  build(r: ReactorBuilder<Record<string, never>>) {
    const reserve = r.step('reserve', Reserve, {});
    return r.step('refuse', Refuse, {}, { waitFor: [reserve] });
  }
}

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

  it('refuses a tracing option that is not a boolean or { rollbackSpans }, naming it', () => {
    expect(() => resolveReactorModuleOptions({ tracing: 'yes' as never })).toThrow(
      "ReactorModule option 'tracing' must be true, false or { rollbackSpans?: boolean }",
    );
    expect(() => resolveReactorModuleOptions({ tracing: { rollbackSpan: true } as never })).toThrow(
      'tracing.rollbackSpan',
    );
    expect(() => resolveReactorModuleOptions({ tracing: { rollbackSpans: 'yes' } as never })).toThrow(
      'tracing.rollbackSpans',
    );
    expect(resolveReactorModuleOptions({ tracing: { rollbackSpans: true } }).tracing).toEqual({ rollbackSpans: true });
  });

  async function undoSpans(tracing: { rollbackSpans: boolean } | undefined): Promise<string[]> {
    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot(tracing === undefined ? {} : { tracing })],
      providers: [Reserve, Refuse, RollbackReactor],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await app.init();
    try {
      const outcome = await app.get(ReactorClient).run(RollbackReactor, {});
      expect(outcome.status).toBe('failed');
      return otel
        .spans()
        .map((s) => s.name)
        .filter((name) => name.startsWith('reactor.step.'));
    } finally {
      await app.close();
    }
  }

  it('tracing: { rollbackSpans: true } in the module adds a span per compensate and undo', async () => {
    expect(await undoSpans({ rollbackSpans: true })).toEqual([
      'reactor.step.compensate refuse',
      'reactor.step.undo reserve',
    ]);
  });

  it('without rollbackSpans the module makes no compensate or undo span', async () => {
    expect(await undoSpans(undefined)).toEqual([]);
  });
});
