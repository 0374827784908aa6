import { Inject, Injectable, Scope, type ModuleMetadata } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { ReactorBuilder } from '../../lib/core/definition/builder';
import type { ReactorBlueprint } from '../../lib/core/definition/reactor-blueprint';
import { success } from '../../lib/core/results/step-outcome';
import { ReactorEngine } from '../../lib/core';
import { ReactorClient } from '../../lib/nest/reactor.client';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { ReactorModule } from '../../lib/nest/reactor.module';
import { Step } from '../../lib/nest/step.decorator';
import { CapturingLogger } from './fixtures';

@Step('noop')
class NoopStep {
  run() {
    return success('ok');
  }
}

/** Compile and init an app with the ReactorModule and `providers`; always close it. */
async function initApp(providers: ModuleMetadata['providers']): Promise<void> {
  const app = await Test.createTestingModule({ imports: [ReactorModule.forRoot()], providers })
    .setLogger(new CapturingLogger())
    .compile();
  try {
    await app.init();
  } finally {
    await app.close();
  }
}

describe('ReactorExplorer', () => {
  describe('refuses scoped steps and reactors at boot', () => {
    it('a request-scoped step, naming it', async () => {
      @Step('per-request')
      @Injectable({ scope: Scope.REQUEST })
      class PerRequestStep {
        run() {
          return success(1);
        }
      }

      await expect(initApp([PerRequestStep])).rejects.toThrow(
        /Step class PerRequestStep is request-scoped\. Reactors and steps must be singletons.*Remove the scope/,
      );
    });

    it('a step made request-scoped by a provider declaration', async () => {
      await expect(initApp([{ provide: NoopStep, useClass: NoopStep, scope: Scope.REQUEST }])).rejects.toThrow(
        'Step class NoopStep is request-scoped.',
      );
    });

    it('a step that depends on a request-scoped provider', async () => {
      @Step('reads-request')
      class ReadsRequestStep {
        constructor(@Inject(REQUEST) readonly request: unknown) {}
        run() {
          return success(1);
        }
      }

      await expect(initApp([ReadsRequestStep])).rejects.toThrow(
        'Step class ReadsRequestStep is request-scoped (it depends on a request-scoped provider).',
      );
    });

    it('a transient reactor', async () => {
      @Reactor('transient')
      @Injectable({ scope: Scope.TRANSIENT })
      class TransientReactor implements ReactorBlueprint {
        build(r: ReactorBuilder<Record<string, unknown>>) {
          return r.step('noop', NoopStep, {});
        }
      }

      await expect(initApp([NoopStep, TransientReactor])).rejects.toThrow(
        'Reactor class TransientReactor is transient.',
      );
    });
  });

  describe('fails the boot on a bad definition, naming reactor and step', () => {
    it('a cycle through waitFor names', async () => {
      @Reactor('cyclic')
      class CyclicReactor implements ReactorBlueprint {
        build(r: ReactorBuilder<Record<string, unknown>>) {
          r.step('a', NoopStep, {}, { waitFor: ['b'] });
          r.step('b', NoopStep, {}, { waitFor: ['a'] });
        }
      }

      await expect(initApp([NoopStep, CyclicReactor])).rejects.toThrow(
        "Reactor 'cyclic': dependency cycle: a -> b -> a. Remove one of these dependencies.",
      );
    });

    it('a step class that is not a provider in any module', async () => {
      @Reactor('needs-noop')
      class NeedsNoopReactor implements ReactorBlueprint {
        build(r: ReactorBuilder<Record<string, unknown>>) {
          return r.step('work', NoopStep, {});
        }
      }

      await expect(initApp([NeedsNoopReactor])).rejects.toThrow(
        "Reactor 'needs-noop' step 'work' uses class NoopStep, which is not a provider in any module; " +
          "add NoopStep to a module's providers (and decorate it with @Step).",
      );
    });

    it('a step class that is a provider but has no @Step', async () => {
      @Injectable()
      class PlainService {
        run() {
          return success(1);
        }
      }
      @Reactor('needs-plain')
      class NeedsPlainReactor implements ReactorBlueprint {
        build(r: ReactorBuilder<Record<string, unknown>>) {
          return r.step('work', PlainService, {});
        }
      }

      await expect(initApp([PlainService, NeedsPlainReactor])).rejects.toThrow(
        "Reactor 'needs-plain' step 'work' uses class PlainService, which is a provider but is not decorated with @Step",
      );
    });

    it('a step wired to an unknown step', async () => {
      @Reactor('dangling')
      class DanglingReactor implements ReactorBlueprint {
        build(r: ReactorBuilder<Record<string, unknown>>) {
          return r.step('work', NoopStep, {}, { waitFor: ['ghost'] });
        }
      }

      await expect(initApp([NoopStep, DanglingReactor])).rejects.toThrow(
        "Reactor 'dangling': step 'work' depends on unknown step 'ghost'",
      );
    });

    it('a compose step naming a reactor that is not registered', async () => {
      @Reactor('parent')
      class ParentReactor implements ReactorBlueprint {
        build(r: ReactorBuilder<Record<string, unknown>>) {
          return r.compose('child', 'missing-child', {});
        }
      }

      await expect(initApp([ParentReactor])).rejects.toThrow(
        "Reactor 'parent': compose step 'child' names reactor 'missing-child', which is not registered.",
      );
    });

    it('a build() that throws, naming the reactor and its class', async () => {
      @Reactor('explodes')
      class ExplodingReactor implements ReactorBlueprint {
        build(): void {
          throw new TypeError('boom');
        }
      }

      await expect(initApp([ExplodingReactor])).rejects.toThrow(
        "Reactor 'explodes' (class ExplodingReactor): build() threw: boom",
      );
    });
  });

  it('refuses two step classes with the same @Step name', async () => {
    @Step('noop')
    class OtherNoopStep {
      run() {
        return success('other');
      }
    }

    await expect(initApp([NoopStep, OtherNoopStep])).rejects.toThrow(
      "Two step classes are named 'noop': NoopStep and OtherNoopStep.",
    );
  });

  it('refuses two reactor classes with the same @Reactor name', async () => {
    @Reactor('twin')
    class TwinA implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('a', NoopStep, {});
      }
    }
    @Reactor('twin')
    class TwinB implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('b', NoopStep, {});
      }
    }

    await expect(initApp([NoopStep, TwinA, TwinB])).rejects.toThrow(
      "Two reactor classes are named 'twin': TwinA and TwinB.",
    );
  });

  it('keeps two versions of one reactor side by side: new runs take the highest', async () => {
    @Reactor('twin-versions', { version: 1 })
    class TwinV1 implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('a', NoopStep, {});
      }
    }
    @Reactor('twin-versions', { version: 2 })
    class TwinV2 implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('b', NoopStep, {});
      }
    }

    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot()],
      providers: [NoopStep, TwinV1, TwinV2],
    })
      .setLogger(new CapturingLogger())
      .compile();
    await app.init();
    try {
      const engine = app.get(ReactorEngine);
      expect(engine.definition('twin-versions').version).toBe('2');
      const outcome = await app.get(ReactorClient).run(TwinV1 as never, {} as never);
      expect(outcome.status === 'completed' && outcome.results).toEqual({ b: 'ok' });
    } finally {
      await app.close();
    }
  });

  it('finds steps and reactors provided through useFactory, and ignores aliases', async () => {
    @Injectable()
    class Greeter {
      greet(name: string): string {
        return `hello ${name}`;
      }
    }
    @Step('greet')
    class GreetStep {
      constructor(private readonly greeter: Greeter) {}
      run({ name }: { name: string }) {
        return success(this.greeter.greet(name));
      }
    }
    @Reactor('greeting')
    class GreetingReactor implements ReactorBlueprint<{ name: string }> {
      build(r: ReactorBuilder<{ name: string }>) {
        return r.step('greet', GreetStep, { name: r.input('name', { type: 'string' }) });
      }
    }

    const app = await Test.createTestingModule({
      imports: [ReactorModule.forRoot()],
      providers: [
        Greeter,
        { provide: 'GREET_STEP', useFactory: (greeter: Greeter) => new GreetStep(greeter), inject: [Greeter] },
        { provide: 'GREET_STEP_ALIAS', useExisting: 'GREET_STEP' },
        { provide: 'GREETING_REACTOR', useFactory: () => new GreetingReactor() },
      ],
    })
      .setLogger(new CapturingLogger())
      .compile();
    try {
      await app.init();
      const outcome = await app.get(ReactorClient).run(GreetingReactor, { name: 'nest' });
      expect(outcome.status).toBe('completed');
      if (outcome.status === 'completed') expect(outcome.value).toBe('hello nest');
    } finally {
      await app.close();
    }
  });

  it('accepts the same step class provided twice', async () => {
    @Reactor('uses-noop')
    class UsesNoopReactor implements ReactorBlueprint {
      build(r: ReactorBuilder<Record<string, unknown>>) {
        return r.step('work', NoopStep, {});
      }
    }

    await expect(
      initApp([NoopStep, { provide: 'ANOTHER_NOOP', useClass: NoopStep }, UsesNoopReactor]),
    ).resolves.toBeUndefined();
  });
});
