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
        "Pass it in the step's args, declare a reactor input named 'warehouse', or mark it @IsOptional() or give the property an initial value (its default).",
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

  it('refuses an interrupt as a background hand-off point, naming the reactor, the step, its kind and what to do', () => {
    const approval = (r: ReactorBuilder<object>) => {
      const prepared = r.step('prepare', noop, {});
      const approved = r.interrupt('approve', { waitFor: [prepared] });
      r.step('ship', noop, {}, { waitFor: [approved] });
    };
    const before = fails(() => defineReactor('approval-before', approval, { background: { before: 'approve' } }));
    expect(before).toBeInstanceOf(DefinitionError);
    expect(before.message).toBe(
      "Reactor 'approval-before': background: { before: 'approve' } names interrupt step 'approve', which cannot be a " +
        'hand-off point: the run would be handed to a worker only to pause there at once (a paused run holds no worker; ' +
        "continue(runId, step, payload, { execute: 'background' }) resumes it in one). Hand off at a step next to it " +
        "({ after: 'prepare' }, { before: 'ship' }), or drop the option.",
    );
    expect(
      fails(() => defineReactor('approval-after', approval, { background: { after: 'approve' } })).message,
    ).toMatch(
      /^Reactor 'approval-after': background: \{ after: 'approve' \} names interrupt step 'approve', which cannot be a hand-off point/,
    );
    // A step beside it is a hand-off point as before.
    expect(() => defineReactor('approval-ok', approval, { background: { before: 'ship' } })).not.toThrow();
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

  it('refuses bad short-form constraints on a reactor input, naming reactor, input and option', () => {
    const refused = (spec: unknown) =>
      fails(() => defineReactor('c', (r: ReactorBuilder<{ x: unknown }>) => void r.input('x', spec as never))).message;
    expect(refused({ type: 'string', min: 1 })).toBe(
      "Reactor 'c': input 'x': option 'min' applies to type 'number' or 'integer', not 'string'.",
    );
    expect(refused({ minLength: 1 })).toBe(
      "Reactor 'c': input 'x': option 'minLength' applies to type 'string' or 'array', not 'any'.",
    );
    expect(refused({ type: 'number', pattern: 'a' })).toBe(
      "Reactor 'c': input 'x': option 'pattern' applies to type 'string', not 'number'.",
    );
    expect(refused({ type: 'string', minLength: -1 })).toBe(
      "Reactor 'c': input 'x': option 'minLength' must be an integer >= 0 (got -1).",
    );
    expect(refused({ type: 'number', max: Infinity })).toBe(
      "Reactor 'c': input 'x': option 'max' must be a finite number (got Infinity).",
    );
    expect(refused({ type: 'integer', min: 5, max: 1 })).toBe(
      "Reactor 'c': input 'x': option 'min' (5) is greater than 'max' (1).",
    );
    expect(refused({ type: 'array', minLength: 3, maxLength: 2 })).toBe(
      "Reactor 'c': input 'x': option 'minLength' (3) is greater than 'maxLength' (2).",
    );
    expect(refused({ type: 'string', pattern: '(' })).toMatch(
      /^Reactor 'c': input 'x': option 'pattern' is not a valid regular expression: .*Unterminated group/,
    );
    expect(refused({ type: 'string', pattern: 7 })).toBe(
      "Reactor 'c': input 'x': option 'pattern' must be a RegExp or a string (got 7).",
    );
    expect(refused({ type: 'string', enum: [] })).toBe(
      "Reactor 'c': input 'x': option 'enum' must be a non-empty array of the allowed values.",
    );
    expect(refused({ type: 'number', enum: [1, '2'] })).toBe(
      "Reactor 'c': input 'x': option 'enum' holds '2', which must be a finite number.",
    );
    expect(refused({ type: 'integer', min: 1, default: 0 })).toBe(
      "Reactor 'c': input 'x': option 'default' breaks the input's own rules: it must be >= 1.",
    );
    expect(refused({ type: 'string', enum: ['a', 'b'], default: 'c' })).toBe(
      `Reactor 'c': input 'x': option 'default' breaks the input's own rules: it must be one of "a", "b".`,
    );
    expect(refused({ type: 'number', default: 'ten' })).toBe(
      "Reactor 'c': input 'x': option 'default' breaks the input's own rules: it must be a finite number.",
    );
    expect(refused({ type: 'string', minlength: 2 })).toBe(
      "Reactor 'c': input 'x': unknown option 'minlength' (options: type, dto, optional, default, redact, description, minLength, maxLength, min, max, pattern, enum).",
    );
    expect(() =>
      defineReactor('ok', (r: ReactorBuilder<{ x: string }>) => {
        r.input('x', { type: 'string', minLength: 1, maxLength: 1, pattern: '^a$', enum: ['a'], default: 'a' });
      }),
    ).not.toThrow();
  });

  it('refuses bad short-form step contracts: a default on a required input, unwired fields, misplaced forms', () => {
    const refused = (options: object, args: object = {}) =>
      fails(() =>
        defineReactor('s', (r: ReactorBuilder<{ amount: number }>) => {
          r.input('amount', { type: 'number' });
          r.step('charge', noop, args as never, options);
        }),
      ).message;
    expect(refused({ input: { note: { type: 'string', default: 'n/a' } } })).toBe(
      "Reactor 's': step 'charge': input contract field 'note' has a default but is required; mark it optional: true (a default fills an optional input).",
    );
    expect(refused({ input: { amount: { type: 'number' }, currency: { type: 'string' } } })).toBe(
      "Reactor 's': step 'charge' requires input 'currency' (contract short form) but nothing wires it. " +
        "Pass it in the step's args, declare a reactor input named 'currency', or mark it optional: true.",
    );
    expect(refused({ input: { amount: { type: 'number', min: 'one' } } })).toBe(
      "Reactor 's': step 'charge': input contract field 'amount': option 'min' must be a finite number (got 'one').",
    );
    expect(refused({ input: { note: { type: 'string', optional: true, default: 3 } } })).toBe(
      "Reactor 's': step 'charge': input contract field 'note': option 'default' breaks the input's own rules: it must be a string.",
    );
    expect(refused({ input: { type: 'number', min: 1 } })).toBe(
      "Reactor 's': step 'charge': input contract must be a DTO class or a record of fields (a single short form with a 'type' is for an output).",
    );
    expect(refused({ output: { type: 'number', default: 0 } })).toBe(
      "Reactor 's': step 'charge': output contract: option 'default' is for inputs; an output contract does not take it.",
    );
    expect(refused({ output: { fee: { type: 'number', redact: true } } })).toBe(
      "Reactor 's': step 'charge': output contract field 'fee': option 'redact' is for inputs; an output contract does not take it.",
    );
    expect(refused({ output: { min: 0 } })).toBe(
      "Reactor 's': step 'charge': output contract field 'min' must be a short form object or a DTO class (a single short form for the whole value needs a 'type').",
    );
    const def = defineReactor('s-ok', (r: ReactorBuilder<{ amount: number }>) => {
      r.input('amount', { type: 'number' });
      r.step(
        'charge',
        noop,
        {},
        { input: { amount: { type: 'number', min: 1 }, note: { type: 'string', optional: true } } },
      );
    });
    expect(Object.keys(def.stepsByName.get('charge')!.args)).toEqual(['amount']);
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
