import * as path from 'node:path';
import * as ts from 'typescript';
import { IsString } from 'class-validator';
import { defineReactor, type ReactorBuilder } from '../../lib/core/definition/builder';
import { DefinitionError } from '../../lib/core/errors/definition.error';
import { success } from '../../lib/core/results/step-outcome';

const noop = () => success(undefined);

describe('definition: typed wiring', () => {
  it('rejects at compile time every wiring of a ref to the wrong type, and only those', () => {
    const file = path.join(__dirname, 'fixtures', 'typed-wiring.fixture.ts');
    const config = ts.readConfigFile(path.join(__dirname, '../../tsconfig.json'), ts.sys.readFile);
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, path.join(__dirname, '../..'));
    const program = ts.createProgram([file], { ...parsed.options, noEmit: true });
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === file);
    const lines = diagnostics.map((d) => d.file!.getLineAndCharacterOfPosition(d.start!).line + 1);
    const source = ts.sys.readFile(file)!.split('\n');
    const wrongLines = source.map((l, i) => (l.includes('// WRONG') ? i + 1 : 0)).filter(Boolean);
    expect([...new Set(lines)].sort((a, b) => a - b)).toEqual(wrongLines);
  }, 60_000);
});

describe('definition: validation at definition time', () => {
  const fails = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(DefinitionError);
      return error as DefinitionError;
    }
    throw new Error('expected a DefinitionError');
  };

  it('prints a dependency cycle', () => {
    const error = fails(() =>
      defineReactor('loop', (r: ReactorBuilder<object>) => {
        r.step('a', noop, {}, { waitFor: ['c'] });
        r.step('b', noop, {}, { waitFor: ['a'] });
        r.step('c', noop, {}, { waitFor: ['b'] });
      }),
    );
    expect(error.message).toBe("Reactor 'loop': dependency cycle: a -> c -> b -> a. Remove one of these dependencies.");
    expect(error.reactorName).toBe('loop');
    expect(error.stepName).toBe('a');
  });

  it('names unknown step references and duplicate names', () => {
    expect(
      fails(() =>
        defineReactor('unknown', (r: ReactorBuilder<object>) => void r.step('a', noop, {}, { waitFor: ['ghost'] })),
      ).message,
    ).toBe("Reactor 'unknown': step 'a' depends on unknown step 'ghost'. Declared steps: a.");
    expect(
      fails(() =>
        defineReactor('dup', (r: ReactorBuilder<object>) => {
          r.step('a', noop, {});
          r.step('a', noop, {});
        }),
      ).message,
    ).toBe("Reactor 'dup': step 'a' is declared twice; step names must be unique.");
  });

  it('requires every required contract input to be wired, auto-wiring same-named reactor inputs', () => {
    class Contract {
      @IsString() sku!: string;
      @IsString() warehouse!: string;
    }
    const error = fails(() =>
      defineReactor('wiring', (r: ReactorBuilder<{ sku: string }>) => {
        r.input('sku', { type: 'string' });
        r.step('reserve', noop, {}, { input: Contract });
      }),
    );
    expect(error.message).toBe(
      "Reactor 'wiring': step 'reserve' requires input 'warehouse' (contract Contract) but nothing wires it. " +
        "Pass it in the step's args, declare a reactor input named 'warehouse', or mark it @IsOptional().",
    );
    const def = defineReactor('wired', (r: ReactorBuilder<{ sku: string; warehouse: string }>) => {
      r.input('sku', { type: 'string' });
      r.input('warehouse', { type: 'string' });
      r.step('reserve', noop, {}, { input: Contract });
    });
    expect(Object.keys(def.stepsByName.get('reserve')!.args).sort()).toEqual(['sku', 'warehouse']);
  });

  it('rejects bad retry options, concurrency and background points with the field named', () => {
    expect(
      fails(() =>
        defineReactor('r1', (r: ReactorBuilder<object>) => void r.step('a', noop, {}, { retries: { maxAttempts: 0 } })),
      ).message,
    ).toBe("Reactor 'r1': step 'a': retries.maxAttempts must be an integer >= 1 (got 0).");
    expect(
      fails(() => defineReactor('r2', (r: ReactorBuilder<object>) => void r.step('a', noop, {}), { maxConcurrency: 0 }))
        .message,
    ).toBe("Reactor 'r2': maxConcurrency must be an integer >= 1 (got 0).");
    expect(
      fails(() =>
        defineReactor('r3', (r: ReactorBuilder<object>) => void r.step('a', noop, {}), { background: { after: 'zz' } }),
      ).message,
    ).toBe("Reactor 'r3': background hand-off names unknown step 'zz'. Declared steps: a.");
  });

  it('refuses retries on compose at definition time, in plain JavaScript too, as the reference does', () => {
    const child = defineReactor('child', (r: ReactorBuilder<object>) => void r.step('a', noop, {}));
    const withOptions = (options: unknown) => () =>
      defineReactor('parent', (r: ReactorBuilder<object>) => void r.compose('pay', child, {}, options as never));
    const retries = fails(withOptions({ retries: { maxAttempts: 3 } }));
    expect(retries).toBeInstanceOf(DefinitionError);
    expect(retries.message).toBe(
      "Reactor 'parent': compose step 'pay': 'retries' is not allowed on compose. Declare retries on the child reactor's steps; each retries itself.",
    );
    expect(fails(withOptions({ async: true })).message).toBe(
      "Reactor 'parent': compose step 'pay': unknown option 'async'. A compose step takes only 'waitFor'.",
    );
    expect(() => withOptions({ waitFor: [] })()).not.toThrow();
  });

  it('gives the same definition the same hash, and a changed shape a new one', () => {
    const build = (extra: boolean) =>
      defineReactor('h', (r: ReactorBuilder<object>) => {
        r.step('a', noop, {});
        if (extra) r.step('b', noop, {});
      });
    expect(build(false).hash).toBe(build(false).hash);
    expect(build(false).hash).not.toBe(build(true).hash);
  });
});
