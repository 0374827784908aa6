import { Injectable, Scope } from '@nestjs/common';
import { SCOPE_OPTIONS_METADATA } from '@nestjs/common/constants';
import { getReactorMetadata } from '../../lib/core/definition/reactor-blueprint';
import { getStepMetadata } from '../../lib/core/definition/step';
import { success } from '../../lib/core/results/step-outcome';
import { Reactor } from '../../lib/nest/reactor.decorator';
import { Step } from '../../lib/nest/step.decorator';

describe('@Step', () => {
  it('records the name and options, and makes the class injectable', () => {
    @Step('charge', { retries: { maxAttempts: 3 }, redact: ['card'] })
    class Charge {
      run() {
        return success(1);
      }
    }

    expect(getStepMetadata(Charge)).toEqual({ name: 'charge', retries: { maxAttempts: 3 }, redact: ['card'] });
    expect(Reflect.getMetadata('__injectable__', Charge)).toBe(true);
  });

  it('keeps a scope the class declares, so the explorer can refuse it', () => {
    @Step('scoped')
    @Injectable({ scope: Scope.REQUEST })
    class Scoped {
      run() {
        return success(1);
      }
    }

    expect(Reflect.getMetadata(SCOPE_OPTIONS_METADATA, Scoped)).toEqual({ scope: Scope.REQUEST });
  });

  it('rejects a missing or empty name at class definition', () => {
    const define = (name: unknown) => {
      @Step(name as string)
      class Bad {
        run() {
          return success(1);
        }
      }
      return Bad;
    };

    expect(() => define('')).toThrow("@Step() on class Bad: the name must be a non-empty string (got '')");
    expect(() => define(undefined)).toThrow('@Step() on class Bad: the name must be a non-empty string');
    expect(() => define(42)).toThrow('(got 42)');
  });

  it('rejects options that are not an object', () => {
    expect(() => {
      @Step('x', 'fast' as never)
      class Bad {
        run() {
          return success(1);
        }
      }
      return Bad;
    }).toThrow("@Step() on class Bad: options must be an object (got 'fast')");
  });

  it('rejects a class without run()', () => {
    expect(() => {
      @Step('no-run')
      class NoRun {}
      return NoRun;
    }).toThrow("@Step('no-run') decorates class NoRun, which has no run() method.");
  });
});

describe('@Reactor', () => {
  it('records the name and options, and makes the class injectable', () => {
    @Reactor('checkout', { maxConcurrency: 2 })
    class Checkout {
      build(): void {}
    }

    expect(getReactorMetadata(Checkout)).toEqual({ name: 'checkout', maxConcurrency: 2 });
    expect(Reflect.getMetadata('__injectable__', Checkout)).toBe(true);
  });

  it('rejects a bad name and a class without build()', () => {
    expect(() => {
      @Reactor('  ')
      class Blank {
        build(): void {}
      }
      return Blank;
    }).toThrow('@Reactor() on class Blank: the name must be a non-empty string');
    expect(() => {
      @Reactor('no-build')
      class NoBuild {}
      return NoBuild;
    }).toThrow("@Reactor('no-build') decorates class NoBuild, which has no build() method.");
  });
});
